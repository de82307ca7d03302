"""A DataFrame as a plain-text table for the terminal (`tputui sql`, `tputui diff --format text`).

Numbers right-aligned, text left-aligned, long cells cut with "…", no colour (pipes and logs).
"""
from __future__ import annotations

import math

import polars as pl

MAX_CELL = 60


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}" if abs(value) >= 1e4 else str(int(value))
        return f"{value:,.3f}" if abs(value) >= 1 else f"{value:.4g}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 1e4 else str(value)
    text = str(value).replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def text_table(frame: pl.DataFrame, max_rows: int | None = None) -> str:
    """The frame as aligned columns with a header line; a last line says how many rows were left out."""
    shown = frame if max_rows is None else frame.head(max_rows)
    numeric = [dt.is_numeric() for dt in frame.dtypes]
    cells = [[_cell(v) for v in row] for row in shown.iter_rows()]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(frame.columns)]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(list(frame.columns)), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    if shown.height < frame.height:
        out.append(f"… {frame.height - shown.height:,} more rows")
    out.append(f"({frame.height:,} row{'s' if frame.height != 1 else ''})")
    return "\n".join(out) + "\n"

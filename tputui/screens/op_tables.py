"""Shared parts of the op-tool screens: number formats, CSV export to the working directory."""
from __future__ import annotations

import os
import time

import polars as pl

from tputui.screens.base import ToolScreen


def fmt_us(v) -> str:
    return "" if v is None else f"{v:,.3f}"


def fmt_pct(v) -> str:
    return "" if v is None else f"{v * 100:.2f}%"


def fmt_pct100(v) -> str:
    return "" if v is None else f"{v:.2f}%"


def fmt_num(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 1e9 else f"{v:.3e}"
    return f"{v:,}"


def export_dir() -> str:
    """Where screen exports go: $TPUTUI_EXPORT_DIR or the working directory (never the logdir)."""
    return os.environ.get("TPUTUI_EXPORT_DIR") or os.getcwd()


def write_csv(frame: pl.DataFrame, tool: str) -> str:
    path = os.path.join(export_dir(), f"{tool}-{time.strftime('%Y%m%d-%H%M%S')}.csv")
    frame.write_csv(path)
    return path


class CsvExportMixin:
    """`x` writes the table as shown (filtered, sorted) to a CSV file."""

    def export_frame(self) -> pl.DataFrame | None:  # pragma: no cover - screens override
        return None

    def action_export_csv(self: ToolScreen) -> None:
        frame = self.export_frame()
        if frame is None:
            self.notify("nothing to export yet", severity="warning")
            return
        try:
            path = write_csv(frame, self.tool.name)
        except OSError as e:
            self.notify(f"CSV export failed: {e}", severity="error")
            return
        self.notify(f"wrote {frame.height:,} rows to {path}", title="CSV export")

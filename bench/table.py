"""Table benchmark: the op tables at 100k rows, headless (App.run_test), FrameTable vs DataTable.

usage: python bench/table.py [--rows N] [--datatable-rows N] [--repeat N] [--no-write]

Builds an hlo_stats-shaped Polars frame of N rows (synthetic op names, times, rates; 28 columns
like the real tool) and measures, in a headless Textual app of 160x50 cells:
  - first paint: mount the table and wait until the first frame is drawn,
  - sort: `s` on the focused column (a float column) until redrawn,
  - scroll: 50 x PageDown then End until redrawn,
  - filter: `/` + a 4-letter needle until redrawn.
Textual's built-in DataTable is timed for first paint on --datatable-rows (default 20k; it grows
roughly linearly, so 100k is not worth the wait on 2 cores). Writes the "table" section of
bench/RESULTS.md. Target: first paint and each interaction < 0.5 s at 100k rows.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import re
import time

import numpy as np
import polars as pl
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from tputui.analysis.hlo_stats import COLUMNS
from tputui.widgets.table import FrameTable

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
SIZE = (160, 50)


def make_frame(n: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    cats = np.array(["convolution fusion", "loop fusion", "copy-done", "all-reduce", "dot", "reduce"])
    self_us = np.sort(rng.exponential(50.0, n))[::-1]
    cols: dict[str, object] = {}
    for c in COLUMNS:
        if c in ("category",):
            cols[c] = cats[rng.integers(0, len(cats), n)]
        elif c in ("hlo_op_name", "hlo_op_expression", "tf_op_name", "source_info", "parent_op_name"):
            cols[c] = [f"{c[:6]}_{i:06d}.{i % 97}" for i in range(n)]
        elif c in ("program_id",):
            cols[c] = rng.integers(1, 5, n).astype(str)
        elif c in ("bound_by", "hlo_rematerialization", "outside_compilation", "autotuned", "core_type"):
            cols[c] = np.where(rng.random(n) < 0.5, "HBM", "Compute") if c == "bound_by" else np.full(n, "No")
        elif c == "occurrences":
            cols[c] = rng.integers(1, 1000, n)
        else:
            cols[c] = self_us * rng.random(n) if c != "rank" else np.arange(1, n + 1, dtype=np.float64)
    return pl.DataFrame(cols)


class Bench(App):
    def __init__(self, widget):
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


async def _timed(pilot, *keys) -> float:
    t = time.perf_counter()
    if keys:
        await pilot.press(*keys)
    await pilot.pause()
    await pilot.app.animator.wait_until_complete()
    return time.perf_counter() - t


async def frame_table_run(frame: pl.DataFrame) -> dict[str, float]:
    table = FrameTable(frame)
    app = Bench(table)
    t0 = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        first = time.perf_counter() - t0
        table.focus()
        await pilot.pause()
        await pilot.press("right", "right", "right", "right", "right", "right", "right")  # total_time
        await pilot.pause()
        sort = await _timed(pilot, "s")
        assert table.sort_by is not None and table.row_count == frame.height
        scroll = await _timed(pilot, *(["pagedown"] * 50), "end")
        assert table.cursor_row == frame.height - 1
        filt = await _timed(pilot, "slash", *"0042", "enter")
        assert 0 < table.row_count < frame.height
    return {"first paint": first, "sort (1 key)": sort, "scroll, per key (50 x PageDown + End)": scroll / 51,
            "filter, per key (/ + 4 letters + Enter)": filt / 6}


async def data_table_first_paint(frame: pl.DataFrame) -> float:
    dt = DataTable()
    app = Bench(dt)
    t0 = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        dt.add_columns(*frame.columns)
        dt.add_rows(frame.rows())
        await pilot.pause()
        return time.perf_counter() - t0


def write_results(rows: int, dt_rows: int, best: dict[str, float], base: dict[str, float],
                  dt_first: float | None) -> None:
    lines = [f"## table (bench/table.py, {time.strftime('%Y-%m-%d')})", "",
             f"hlo_stats-shaped frame, {len(COLUMNS)} columns, headless App.run_test at {SIZE[0]}x{SIZE[1]}, "
             f"{os.cpu_count()} cores; best of the runs. Target: < 0.5 s each.", "",
             f"| FrameTable | {rows:,} rows (s) | 1,000 rows (s): harness floor |", "|---|---:|---:|"]
    lines += [f"| {k} | {v:.3f} | {base[k]:.3f} |" for k, v in best.items()]
    if dt_first is not None:
        per_1k = dt_first / dt_rows * 1000
        lines += ["", f"Textual DataTable first paint at {dt_rows:,} rows: {dt_first:.2f} s "
                      f"(~{per_1k * rows / 1000:.0f} s extrapolated to {rows:,} rows)."]
    section = "\n".join(lines) + "\n"
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\nWritten by the scripts in bench/.\n"
    pattern = re.compile(r"## table \(bench/table\.py.*?(?=\n## |\Z)", re.S)
    text = pattern.sub(section.rstrip("\n"), text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text if text.endswith("\n") else text + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--datatable-rows", type=int, default=20_000, help="0 skips the DataTable run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    frame = make_frame(a.rows)
    best: dict[str, float] = {}
    for _ in range(a.repeat):
        got = asyncio.run(frame_table_run(frame))
        best = {k: min(v, best.get(k, v)) for k, v in got.items()}
    # The same keys on a 1,000-row table: what the headless harness itself costs per key.
    base: dict[str, float] = {}
    for _ in range(a.repeat):
        got = asyncio.run(frame_table_run(make_frame(1000)))
        base = {k: min(v, base.get(k, v)) for k, v in got.items()}
    for k, v in best.items():
        print(f"FrameTable {a.rows:,} rows  {k:<42} {v:.3f} s   (1,000 rows: {base[k]:.3f} s)")
    dt_first = None
    if a.datatable_rows:
        dt_first = asyncio.run(data_table_first_paint(make_frame(a.datatable_rows)))
        print(f"DataTable {a.datatable_rows:,} rows first paint {dt_first:.2f} s")
    if not a.no_write:
        write_results(a.rows, a.datatable_rows, best, base, dt_first)


if __name__ == "__main__":
    main()

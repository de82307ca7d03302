"""Shared parts of the op-tool screens: number formats, CSV export to the user's export folder,
"show in trace viewer" (`v`) for the selected row, and keys that wait for a loaded result."""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import polars as pl
from textual import work

from tputui.data.files import atomic_open
from tputui.export import csv_text
from tputui.screens.base import ToolScreen
from tputui.userdirs import export_dir, short_path


def fmt_us(v) -> str:
    return "" if v is None else f"{v:,.3f}"


def fmt_pct(v) -> str:
    return "" if v is None else f"{v * 100:.2f}%"


def fmt_pct100(v) -> str:
    return "" if v is None else f"{v:.2f}%"


def fmt_time_us(v) -> str:
    """A time in µs in human units, three significant digits: 77.8 s, 1.23 ms, 412 us, 35 ns.
    Tables show this; CSV / JSON exports keep the full-precision µs values."""
    if v is None or v != v:
        return ""
    if v == 0:
        return "0"
    a = abs(v)
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("us", 1.0), ("ns", 1e-3)):
        if a >= scale or unit == "ns":
            x = v / scale
            digits = 0 if abs(x) >= 100 else 1 if abs(x) >= 10 else 2
            return f"{x:.{digits}f} {unit}"
    return ""  # pragma: no cover - the loop always returns


def fmt_duration_us(us: float) -> str:
    """A duration in the unit that reads best: s, ms or µs."""
    if us >= 1e6:
        return f"{us / 1e6:,.3f} s"
    if us >= 1e3:
        return f"{us / 1e3:,.3f} ms"
    return f"{us:,.3f} µs"


def fmt_rank(v) -> str:
    return "" if v is None else f"{int(v):,}"


def fmt_num(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 1e9 else f"{v:.3e}"
    return f"{v:,}"


class Units:
    """Column units shown in the table header, as XProf's labels give them ("total_time (µs)").

    The table holds the renamed columns; CSV exports and anything keyed by the analysis's own
    names go through `name` / `raw`."""

    def __init__(self, units: dict[str, str]) -> None:
        self.units = units

    def name(self, column: str) -> str:
        return f"{column} ({self.units[column]})" if column in self.units else column

    def show(self, frame: pl.DataFrame) -> pl.DataFrame:
        return frame.rename({c: self.name(c) for c in self.units if c in frame.columns})

    def formats(self, formats: dict) -> dict:
        return {self.name(c): f for c, f in formats.items()}

    def raw(self, frame: pl.DataFrame) -> pl.DataFrame:
        back = {self.name(c): c for c in self.units}
        return frame.rename({c: back[c] for c in frame.columns if c in back})


CSV_TIP = "write the table as shown (filtered, sorted) to a CSV file in the export folder (never the logdir)"
TIME_COLUMNS = ("total_time", "avg_time", "total_self_time", "avg_self_time", "total_time_per_core")


def write_csv(frame: pl.DataFrame, tool: str, logdir: str | None = None) -> str:
    """The CSV file written into the export folder (see tputui/userdirs.py), never into `logdir`."""
    path = os.path.join(export_dir(logdir), f"{tool}-{time.strftime('%Y%m%d-%H%M%S')}.csv")
    with atomic_open(path, "w", encoding="utf-8", newline="") as f:
        f.write(csv_text(frame))
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
            path = write_csv(frame, self.tool.name, self.app.logdir.root)
        except OSError as e:
            self.notify(f"CSV export failed: {e}", severity="error")
            return
        self.notify(f"wrote {frame.height:,} rows to {short_path(path)}", title="CSV export")


class ResultKeysMixin:
    """Keys listed in RESULT_ACTIONS are hidden from the footer (and do nothing) until the
    analysis has a result: on a profile without data the footer offers only what works.
    Screens call `self.refresh_bindings()` at the end of `show`."""

    RESULT_ACTIONS: frozenset[str] = frozenset()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.RESULT_ACTIONS and getattr(self, "result", None) is None:
            return False
        return True


EventFinder = Callable[[Any], Any]  # XSpaceFrame -> rows of frame.events, or a TraceFocus


class TraceJumpMixin:
    """`v`: open the trace viewer with the selected row's events selected and in view.

    Screens implement `trace_target() -> (label, finder) | str | None`: a finder maps the host's
    frame to event rows (see tputui/analysis/op_events.py) or to a whole TraceFocus; a string
    says why there is nothing to show for this row. The finder runs in a worker (the first call
    may decode the host)."""

    def trace_target(self):  # pragma: no cover - screens override
        return None

    def action_show_in_trace(self: ToolScreen) -> None:
        if self.result is None:
            return
        target = self.trace_target()
        if target is None:
            self.notify("select an op first", severity="warning")
            return
        if isinstance(target, str):
            self.notify(target, severity="warning")
            return
        label, finder = target
        self._find_trace_events(label, finder)

    def on_frame_table_row_selected(self, event) -> None:
        """Enter on a table row opens it in the trace viewer (the one drill-down these tables have)."""
        event.stop()
        self.action_show_in_trace()

    @work(thread=True, exclusive=True, group="trace-jump", description="finding events")
    def _find_trace_events(self: ToolScreen, label: str, finder: EventFinder) -> None:
        try:
            rows = finder(self.run_data.frame(self.host))
        except Exception as e:  # noqa: BLE001 - say it, keep the screen
            self.app.call_from_thread(self.notify, f"could not find the events of {label}: {e}", severity="error")
            return
        self.app.call_from_thread(self._open_trace, label, rows)

    def _open_trace(self: ToolScreen, label: str, found) -> None:
        from tputui.screens.trace_viewer import TraceFocus, show_in_trace_viewer

        if not self.is_mounted or self not in self.app.screen_stack:
            return  # the user moved on while the events were being found
        host = self.host or (self.run_data.hosts or ["-"])[0]
        focus = found if isinstance(found, TraceFocus) else TraceFocus(frame_rows=tuple(int(r) for r in found))
        if not focus.frame_rows and not focus.names and focus.start_ps is None:
            self.notify(f"no events of {label} on host {host}", severity="warning")
            return
        show_in_trace_viewer(self.app, focus)
        if self.host is None and len(self.run_data.hosts) > 1:  # the table summed every host
            self.notify(f"{label} on host {host}: the trace viewer shows one host (h picks another)", timeout=6)

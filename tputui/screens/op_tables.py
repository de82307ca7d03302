"""Shared parts of the op-tool screens: number formats, CSV export to the user's export folder,
"show in trace viewer" (`v`) for the selected row, and keys that wait for a loaded result."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection
from typing import Any, TypeVar

import polars as pl
from textual import work
from textual.message import Message
from textual.widget import Widget

from tputui.analysis.trace_cache import in_pieces
from tputui.data.files import atomic_open
from tputui.export import csv_text
from tputui.screens.app_api import tools_app
from tputui.screens.base import R, ToolScreen
from tputui.userdirs import export_dir, short_path
from tputui.widgets.table import FrameTable


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


def write_csv(frame: pl.DataFrame, tool: str, logdir: str | None = None,
              fraction_columns: Collection[str] = ()) -> str:
    """The CSV file written into the export folder (see tputui/userdirs.py), never into `logdir`;
    the same CSV `tputui export` writes (shares as percents)."""
    path = os.path.join(export_dir(logdir), f"{tool}-{time.strftime('%Y%m%d-%H%M%S')}.csv")
    with atomic_open(path, "w", encoding="utf-8", newline="") as f:
        f.write(csv_text(frame, fraction_columns))
    return path


class CsvExportMixin(ToolScreen[R]):
    """`x` writes the table as shown (filtered, sorted) to a CSV file."""

    def export_frame(self) -> pl.DataFrame | None:  # pragma: no cover - screens override
        return None

    def action_export_csv(self) -> None:
        frame = self.export_frame()
        if frame is None:
            self.notify("nothing to export yet", severity="warning")
            return
        try:
            path = write_csv(frame, self.tool.name, tools_app(self).logdir.root,
                             getattr(self.result, "fraction_columns", ()))
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
        return super().check_action(action, parameters)  # type: ignore[misc]


T = TypeVar("T", bound=tuple)


def usable_target(screen: Widget, target: T | str | None) -> T | None:
    """A jump target (tuple), or None after telling the user why not (no row, or the row's reason)."""
    if target is None or isinstance(target, str):
        screen.notify(target or "select an op first", severity="warning")
        return None
    return target


EventFinder = Callable[[Any], Any]  # XSpaceFrame -> rows of frame.events, or a TraceFocus
TraceTarget = tuple[str, EventFinder]  # (what the rows are, for messages; their finder)


class TraceJumpMixin(ToolScreen[R]):
    """`v`: open the trace viewer with the selected row's events selected and in view.

    Screens implement `trace_target() -> (label, finder) | str | None`: a finder maps the host's
    frame to event rows (see tputui/analysis/op_events.py) or to a whole TraceFocus; a string
    says why there is nothing to show for this row. The finder runs in a worker (the first call
    may decode the host)."""

    def trace_target(self) -> TraceTarget | str | None:  # pragma: no cover - screens override
        return None

    def action_show_in_trace(self) -> None:
        if self.result is None:
            return
        target = usable_target(self, self.trace_target())
        if target is not None:
            label, finder = target
            self._find_trace_events(label, finder)

    def on_frame_table_row_selected(self, event: FrameTable.RowSelected) -> None:
        """Enter on a table row opens it in the trace viewer (the one drill-down these tables have)."""
        event.stop()
        self.action_show_in_trace()

    class EventsFound(Message, bubble=False):
        """The worker's answer: `found` (rows or a TraceFocus), or `error` (a message)."""

        def __init__(self, label: str, found: Any = None, error: str | None = None) -> None:
            super().__init__()
            self.label, self.found, self.error = label, found, error

    @work(thread=True, exclusive=True, group="trace-jump", description="finding events")
    def _find_trace_events(self, label: str, finder: EventFinder) -> None:
        try:
            if in_pieces(self.run_data, self.host):
                from tputui.screens.trace_viewer import TraceFocus

                # No frame of a giant host (it would take its size many times over): its events
                # are found by name in the trace viewer's index (the op, on every core).
                found = TraceFocus(names=(label.split(" (")[0],))
            else:
                found = finder(self.run_data.frame(self.host))
        except Exception as e:  # noqa: BLE001 - say it, keep the screen
            self.post_message(TraceJumpMixin.EventsFound(label, error=str(e)))
            return
        self.post_message(TraceJumpMixin.EventsFound(label, found))

    def on_trace_jump_mixin_events_found(self, event: TraceJumpMixin.EventsFound) -> None:
        from tputui.screens.trace_viewer import TraceFocus, show_in_trace_viewer

        label, found = event.label, event.found
        if event.error is not None:
            self.notify(f"could not find the events of {label}: {event.error}", severity="error")
            return
        host = self.host or (self.run_data.hosts or ["-"])[0]
        focus = found if isinstance(found, TraceFocus) else TraceFocus(frame_rows=tuple(int(r) for r in found))
        if not focus.frame_rows and not focus.names and focus.start_ps is None:
            self.notify(f"no events of {label} on host {host}", severity="warning")
            return
        show_in_trace_viewer(self.app, focus)
        if self.host is None and len(self.run_data.hosts) > 1:  # the table summed every host
            self.notify(f"{label} on host {host}: the trace viewer shows one host (h picks another)", timeout=6)

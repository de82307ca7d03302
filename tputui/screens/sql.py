"""The SQL prompt (`:` anywhere): a query over the run's tables, its rows in the usual table.

Enter runs the query (in a worker), ↓ / Tab moves to the rows (s sort, / filter, x CSV), `v` shows
the rows in the trace viewer when the query selected `event_row` (and `host` on several hosts),
Esc goes back. Tables and columns: tputui/query.py, tputui/analysis/events_table.py.
"""
from __future__ import annotations

from types import SimpleNamespace

import polars as pl
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from tputui.data.run_data import RunData
from tputui.query import TABLES, QueryResult, run_query
from tputui.screens.app_api import tools_app
from tputui.screens.base import ContextBar
from tputui.screens.stacked import BackTable, StackedScreen
from tputui.widgets.footer import KeyFooter
from tputui.widgets.table import FrameTable

EXAMPLE = "SELECT name, count(*) AS n, sum(duration_ns) / 1e6 AS ms FROM events GROUP BY name ORDER BY ms DESC"
MAX_TRACE_ROWS = 100_000  # events handed to the trace viewer at once
_last_query: dict[str, str] = {}  # run name -> the last query typed (the prompt reopens with it)


class SqlScreen(StackedScreen[QueryResult]):
    help_notes = ("Tables: " + ", ".join(f"[b]{t}[/b]" for t in TABLES) + ". Names and text are strings "
                  "(LIKE works); times in ns in [b]events[/b], µs in [b]ops[/b] / [b]hlo_ops[/b]. "
                  "Select [b]event_row[/b] (and [b]host[/b]) to show rows in the trace viewer with [b]v[/b].")
    BINDINGS = [
        Binding("escape", "back", "Back", id="sql.back", tooltip="back to the tool you came from"),
        Binding("v", "show_in_trace", "Show in trace", id="sql.trace",
                tooltip="open the trace viewer on the rows shown (needs event_row in the SELECT)"),
        Binding("x", "export_csv", "CSV", id="sql.csv", tooltip="write the rows as shown to a CSV file here"),
        Binding("colon", "focus_prompt", "Edit query", id="sql.edit", tooltip="back to the query prompt"),
    ]
    DEFAULT_CSS = """
    SqlScreen #sql-prompt { height: 3; margin: 0 0; }
    SqlScreen #sql-status { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    SqlScreen #sql-status.error { color: $error; }
    SqlScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    """

    tool = SimpleNamespace(title="SQL", name="sql")  # the title `?` shows

    def __init__(self, run: RunData, host: str | None) -> None:
        super().__init__()
        self.run_data, self.host = run, host
        self.result: QueryResult | None = None

    def compose(self) -> ComposeResult:
        host = self.host or ("all hosts" if len(self.run_data.hosts) > 1 else (self.run_data.hosts or ["-"])[0])
        yield ContextBar(f"[b]SQL[/b]  │  run [b]{self.run_data.name}[/b]  │  host [b]{host}[/b]"
                         "  [dim](Enter run · ↓ rows · v trace · Esc back · ? help)[/dim]", id="context")
        with Vertical(id="body"):
            yield Input(_last_query.get(self.run_data.name, ""), placeholder=EXAMPLE, id="sql-prompt",
                        select_on_focus=False)
            yield Static("tables: " + ", ".join(TABLES) + " · Enter runs the query", id="sql-status", markup=False)
            yield BackTable(pl.DataFrame(), id="sql-rows")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#sql-prompt", Input).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("show_in_trace", "export_csv") and self.result is None:
            return False
        return True

    def action_focus_prompt(self) -> None:
        self.query_one("#sql-prompt", Input).focus()

    # --- running a query ------------------------------------------------------------------
    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        query = event.value.strip() or EXAMPLE
        _last_query[self.run_data.name] = query
        self._status(f"running… {query}")
        self.run_sql(query)

    @work(thread=True, exclusive=True, group="sql", description="sql query")
    def run_sql(self, query: str) -> None:
        self.report(lambda progress: run_query(self.run_data, query, self.host))

    async def show_result(self, result: QueryResult) -> None:
        self.result = result
        table = self.query_one("#sql-rows", FrameTable)
        table.set_frame(result.frame)
        table.border_title = f"{result.frame.height:,} rows · s sort · / filter · v trace · x CSV"
        hint = "" if "event_row" in result.frame.columns else " · select event_row to show rows in the trace viewer"
        self._status(f"{result.frame.height:,} rows, {len(result.frame.columns)} columns in {result.seconds:.2f} s{hint}")
        if result.frame.height:
            table.focus()
        self.refresh_bindings()

    async def show_failure(self, message: str) -> None:
        self._status(message, error=True)
        self.notify(message, title="SQL", severity="error", timeout=8)

    def _status(self, text: str, error: bool = False) -> None:
        status = self.query_one("#sql-status", Static)
        status.update(text)
        status.set_class(error, "error")

    # --- keys ----------------------------------------------------------------------------
    def action_export_csv(self) -> None:
        self.export_table_csv(self.query_one("#sql-rows", FrameTable), "sql")

    def action_show_in_trace(self) -> None:
        target = trace_rows(self.query_one("#sql-rows", FrameTable), self.host, self.run_data.hosts)
        if isinstance(target, str):
            self.notify(target, severity="warning")
            return
        host, rows = target
        from tputui.screens.trace_viewer import TraceFocus

        tools_app(self).open_run_data(self.run_data, host, "trace_viewer", focus=TraceFocus(frame_rows=rows))


def trace_rows(table: FrameTable, host: str | None, hosts: list[str]) -> tuple[str, tuple[int, ...]] | str:
    """(host, event rows) of the rows shown, on the highlighted row's host; or why there are none."""
    frame = table.frame
    if "event_row" not in frame.columns:
        return "the trace viewer needs event_row in the SELECT (add: event_row, host)"
    current = table.row()
    if current is None:
        return "no rows to show"
    if "host" in frame.columns:
        host = current["host"]
        frame = frame.filter(pl.col("host") == host)
    elif host is None and len(hosts) > 1:
        return "several hosts: add host to the SELECT (or pick one host with h)"
    rows = frame["event_row"].drop_nulls().head(MAX_TRACE_ROWS).to_list()
    return (host or hosts[0], tuple(int(r) for r in rows)) if rows else "no events in the rows shown"

"""Advice: XProf's smart suggestions (all its rules), then the performance guide's checks, most
severe first.

The upper table lists every piece of advice; the text under it explains the highlighted one and
what to change; the lower table lists the ops it found with their figures. Tab moves between the
tables; on an op, `v` shows its events in the trace viewer and `G` its HLO neighbourhood.
"""
from __future__ import annotations

import polars as pl
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from tputui.analysis.hlo_ops import module_program_id
from tputui.analysis.op_events import hlo_op_rows
from tputui.analysis.smart_suggestion import AdviceResult
from tputui.screens.base import ToolScreen
from tputui.screens.graph_jump import GraphJumpMixin, graph_binding
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin, ResultKeysMixin, TraceJumpMixin
from tputui.widgets.table import FrameTable

SEVERITY_STYLE = {"high": "bold red", "medium": "bold yellow", "info": "cyan"}


class AdviceScreen(
        ResultKeysMixin,
        TraceJumpMixin[AdviceResult],
        GraphJumpMixin[AdviceResult],
        CsvExportMixin[AdviceResult],
        ToolScreen[AdviceResult]):
    help_notes = ("XProf's smart suggestions come first (its ten rules, word for word: collectives, compute, data "
                  "shuffle, data transfer, debug print, host processing, input, memory, TensorCore idle, "
                  "barrier-cores), then checks from the Cloud TPU performance guide on this profile's HLO and steps. "
                  "Tab: advice list / ops.")
    BINDINGS = [
        Binding("v", "show_in_trace", "Show in trace", id="advice.trace",
                tooltip="open the trace viewer on the highlighted op's events"),
        graph_binding("advice"),
        Binding("tab", "switch_table", "Advice / ops", id="advice.tab", tooltip="move between the advice and its ops"),
        Binding("x", "export_csv", "CSV", id="advice.csv", tooltip=CSV_TIP),
    ]
    RESULT_ACTIONS = frozenset({"show_in_trace", "show_in_graph", "switch_table", "export_csv"})
    DEFAULT_CSS = """
    AdviceScreen #advice-head { height: auto; padding: 0 1; }
    AdviceScreen #advice-items { height: auto; max-height: 12; border: round $foreground 55%; }
    AdviceScreen #advice-detail { height: auto; max-height: 14; padding: 0 1; }
    AdviceScreen #advice-ops { height: 1fr; min-height: 4; border: round $foreground 55%; }
    """

    def show(self, result: AdviceResult) -> None:
        items = result.items()
        n_x = int((items["source"] == "XProf").sum()) if items.height else 0
        self.body.mount(Static(Text.assemble(
            (f"{items.height} piece{'' if items.height == 1 else 's'} of advice", "bold"),
            (f"  ({n_x} from XProf's smart suggestions, {items.height - n_x} from the performance guide)", "dim")),
            id="advice-head"))
        self.items = FrameTable(items.with_row_index("index").with_columns(pl.col("ops").list.len().alias("ops")),
                                hidden=("index", "detail", "change"), id="advice-items",
                                formats={"severity": lambda v: v.upper()})
        self.items.border_title = "Advice · Tab ops · x CSV"
        self.body.mount(self.items)
        self.body.mount(Static("", id="advice-detail"))
        self.ops = FrameTable(id="advice-ops")
        self.ops.border_title = "Ops found · v trace · G graph"
        self.body.mount(self.ops)
        if not items.height:
            self.query_one("#advice-detail", Static).update(Text(
                "Nothing to advise: no XProf rule fired and the guide's checks found nothing in this profile.",
                style="dim"))
        self.items.focus()
        self._show_item(self.items.row())
        self.refresh_bindings()

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        if event.table is self.items:
            self._show_item(event.row)

    def on_frame_table_row_selected(self, event: FrameTable.RowSelected) -> None:
        event.stop()
        event.prevent_default()
        if event.table is self.items:
            self.ops.focus()
        else:
            self.action_show_in_trace()

    def _show_item(self, row) -> None:
        r = self.loaded
        detail = self.query_one("#advice-detail", Static)
        if row is None:
            self.ops.set_frame(pl.DataFrame({"op": []}, schema={"op": pl.String}))
            return
        full = r.items().row(row["index"], named=True)
        text = Text.assemble((full["severity"].upper() + " ", SEVERITY_STYLE.get(full["severity"], "")),
                             (full["title"], "bold"), ("\n", ""), (full["detail"], ""))
        if full["change"]:
            text.append("\nWhat to change: ", style="bold")
            text.append(full["change"])
        detail.update(text)
        check = next((c for c in r.checks if c.title == full["title"]), None)
        rows = [{"op": f.op, "module": f.module, **{k: str(v) for k, v in f.figures.items()}}
                for f in (check.findings if check else [])]
        self.ops.set_frame(pl.DataFrame(rows) if rows else pl.DataFrame({"op": []}, schema={"op": pl.String}))

    def action_switch_table(self) -> None:
        (self.ops if self.items.has_focus else self.items).focus()

    def _op(self) -> tuple[str, str] | str | None:
        row = self.ops.row()
        if row is None or "module" not in row:
            return "this advice names no op: pick one with ops (Tab moves to them)"
        return row["op"], row["module"]

    def trace_target(self):
        target = self._op()
        if not isinstance(target, tuple):
            return target
        name, module = target
        program = module_program_id(module) if module else None
        return name, lambda frame: hlo_op_rows(frame, [name], program)

    def graph_target(self):
        target = self._op()
        if not isinstance(target, tuple):
            return target
        name, module = target
        if not module:
            return f"{name} is a step, not an HLO op"
        return name, module

    def export_frame(self):
        return self.result.items() if self.result is not None else None

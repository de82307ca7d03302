"""Megascale stats: one row per DCN collective, sorted by aggregated total stall (largest first).

Keys: `s` sort, `/` filter, `g` set the DCN bandwidth (Gbps per host) to flag collectives whose
required bandwidth x cores per host exceeds it, `enter` jumps to the row's recv-done ops in the
trace viewer when it is available (otherwise says where they are)."""
from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input, Static

from tputui.analysis.megascale import MegascaleResult
from tputui.screens.base import ToolScreen
from tputui.widgets.table import FrameTable

HIDDEN = ("exceeds_network",)


def _ms(v) -> str:
    return f"{v:.3f}"


class MegascaleScreen(ToolScreen):
    BINDINGS = [Binding("g", "bandwidth", "DCN Gbps", id="megascale.gbps")]
    DEFAULT_CSS = """
    MegascaleScreen #summary { height: auto; padding: 0 1; }
    MegascaleScreen FrameTable { height: 1fr; border: round $panel; }
    MegascaleScreen #gbps { height: 3; display: none; }
    MegascaleScreen #gbps.open { display: block; }
    MegascaleScreen #where { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """

    def show(self, result: MegascaleResult) -> None:
        self.body.mount(Static("", id="summary"))
        self.body.mount(Input(placeholder="DCN bandwidth per host in Gbps (empty: off), enter to apply",
                              id="gbps", type="number"))
        self.table = FrameTable(result.rows, id="rows", hidden=HIDDEN, formats={
            c: _ms for c in result.rows.columns if c.endswith("_ms")} | {
            "required_bandwidth_gbps": lambda v: f"{v:.2f}",
            "data_transmitted_bytes": lambda v: f"{v:,}"})
        self.body.mount(self.table)
        self.body.mount(Static("", id="where", markup=False))
        self._summarize(result)
        self.table.focus()

    def _summarize(self, result: MegascaleResult) -> None:
        n = len(result.rows)
        text = (f"[b]{n}[/b] DCN collectives on host [b]{result.host}[/b] (/device:TPU:0, "
                f"{result.cores_per_host} cores per host)")
        if result.dcn_gbps:
            k = int(result.rows["exceeds_network"].sum()) if n else 0
            text += f" · network {result.dcn_gbps:g} Gbps: [b]{k}[/b] need more ([red]flagged[/red] rows)"
        for d in result.diagnostics:
            text += f"\n[dim]{d}[/dim]"
        self.query_one("#summary", Static).update(text)
        self.table.border_title = f"Megascale stats ({n}) · sorted by aggregated total stall · s sort · / filter · g Gbps"
        flagged = set(result.rows.filter(result.rows["exceeds_network"])["name"].to_list()) if n else set()
        self.table.formats["name"] = (lambda v: f"! {v}" if v in flagged else v)
        self.table.refresh()

    def action_bandwidth(self) -> None:
        box = self.query_one("#gbps", Input)
        box.add_class("open")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        box = event.input
        box.remove_class("open")
        try:
            gbps = float(event.value) if event.value.strip() else None
        except ValueError:
            gbps = None
        self.result = self.result.flag(gbps)
        self.options["dcn_gbps"] = gbps
        self.table.set_frame(self.result.rows, keep_cursor=True)
        self._summarize(self.result)
        self.table.focus()

    def on_frame_table_row_selected(self, event: FrameTable.RowSelected) -> None:
        row = event.row
        if not row or self.result is None:
            return
        spans = self.result.recv_done_spans
        sel = spans.filter(spans["name"] == row["name"]) if spans is not None else None
        where = ", ".join(f"{s / 1e6:.1f} us" for s in sel["start_ps"].to_list()[:6]) if sel is not None else ""
        msg = f"{row['recv_op_name']} ({row['name']}) on /device:TPU:0 at {where}"
        opener = getattr(self.app, "open_trace_at", None)
        if callable(opener) and sel is not None and len(sel):
            opener(self.result.host, "/device:TPU:0", int(sel["start_ps"][0]), int(sel["end_ps"][0]))
        else:
            self.query_one("#where", Static).update(f"recv-done ops: {msg}")

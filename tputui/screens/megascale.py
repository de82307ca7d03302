"""Megascale stats: one row per DCN collective, sorted by aggregated total stall (largest first).

The table is one host's (the host picked with `h`, else the run's first host), so the context bar
names that host instead of "all hosts". The line under the table reads every figure of the row
under the cursor (the table is wider than most terminals).

Rows are flagged when their required bandwidth x cores per host exceeds the host's DCN bandwidth:
the TPU generation's (Cloud TPU docs, per chip x chips) unless `B` sets another (empty: off).
Keys: `s` sort, `/` filter, `B` the DCN bandwidth (Gbps per host), `T` another TPU of the host (XProf reads
TPU:0 only), `enter` shows the row's recv-done ops in the trace
viewer (the same host), zoomed to their first occurrence."""
from __future__ import annotations

from rich.markup import escape
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Input, Static

from tputui import format as fmt
from tputui.analysis.megascale import MegascaleResult
from tputui.screens.base import ToolScreen
from tputui.screens.graph_jump import GraphJumpMixin, graph_binding
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin
from tputui.screens.pickers import PickerScreen
from tputui.widgets.table import FrameTable

HIDDEN = ("exceeds_network",)
DEVICE = "/device:TPU:0"  # the only plane XProf reads DCN collectives from
EMPTY_PREFIX = "No DCN (megascale) collectives: "  # the analysis' diagnostic; the screen says the host


def row_details(row: dict) -> Text:
    """Every figure of one collective on one line (what the table's right-hand columns hold)."""
    t = Text()
    t.append(row["name"], style="bold")
    ms, num = fmt.duration_ms, fmt.number
    t.append(f" · {row['transfer_type']} · {row['occurrences']}× · slack {ms(row['slack_time_ms'])} · "
             f"observed {ms(row['observed_duration_ms'])} · stall {ms(row['stall_duration_ms'])} "
             f"(send {num(row['send_stall_ms'])}, send-done {num(row['send_done_stall_ms'])}, "
             f"recv {num(row['recv_stall_ms'])}, recv-done {num(row['recv_done_stall_ms'])}) · "
             f"aggregated stall {ms(row['aggregated_total_stall_ms'])} · "
             f"{fmt.bytes_binary(row['data_transmitted_bytes'])} · needs {num(row['required_bandwidth_gbps'], 2)} Gbps")
    if row.get("exceeds_network"):
        t.append("  more than the network", style="bold red")
    return t


def empty_line(result: MegascaleResult) -> str:
    """One line for a table with no rows: on which host, why, and what would have some."""
    reason = "; ".join(d.removeprefix(EMPTY_PREFIX).rstrip(".") for d in result.diagnostics)
    return (f"No DCN collectives on host {result.host}" + (f": {reason}" if reason else "") +
            " (megascale stats need a multi-slice TPU run).")


class MegascaleScreen(GraphJumpMixin[MegascaleResult], CsvExportMixin[MegascaleResult], ToolScreen[MegascaleResult]):
    BINDINGS = [Binding("B", "bandwidth", "DCN Gbps", id="megascale.gbps"),
                Binding("T", "pick_device", "TPU device", id="megascale.device",
                        tooltip="pick the TPU of the host whose DCN collectives are shown (XProf shows TPU:0 only)"),
                graph_binding("megascale"),
                Binding("x", "export_csv", "CSV", id="megascale.csv", tooltip=CSV_TIP)]
    DEFAULT_CSS = """
    MegascaleScreen #summary { height: auto; padding: 0 1; }
    MegascaleScreen #empty { height: auto; padding: 1 1; color: $text-muted; }
    MegascaleScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    MegascaleScreen #gbps { height: 3; display: none; }
    MegascaleScreen #gbps.open { display: block; }
    MegascaleScreen #detail { height: auto; padding: 0 1; }
    MegascaleScreen #finding { height: auto; max-height: 5; padding: 0 1; }
    MegascaleScreen #where { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """

    table: FrameTable | None = None

    @property
    def table_host(self) -> str:
        """The host the table is for: the picked one, else the run's first (as the analysis does)."""
        hosts = self.run_data.hosts
        return self.host or (hosts[0] if hosts else "-")

    def context_text(self) -> str:
        hosts, host = self.run_data.hosts, self.table_host
        which = f" ({hosts.index(host) + 1} of {len(hosts)}, h for another)" if len(hosts) > 1 and host in hosts else ""
        return (f"[b]{escape(self.tool.title)}[/b]  │  run [b]{escape(self.run_data.name)}[/b]  │  "
                f"host [b]{escape(host)}[/b]{which}  [dim](t tool · r run · h host · ? help · q quit)[/dim]")

    def show(self, result: MegascaleResult) -> None:
        if not len(result.rows):
            self.body.mount(Static(Text(empty_line(result) + _device_hint(result)), id="empty"))
            return
        self.body.mount(Static("", id="summary"))
        self.body.mount(Input(placeholder="DCN bandwidth per host in Gbps (empty: off), enter to apply",
                              id="gbps", type="number"))
        # The name stays put when scrolling sideways; the column the rows are sorted by (XProf's
        # order: total stall) and its companions come right after it, visible at 80 columns.
        self.table = FrameTable(result.rows, id="rows", hidden=HIDDEN, key="name",
                                lead=("aggregated_total_stall_ms", "occurrences", "stall_duration_ms",
                                      "required_bandwidth_gbps"), formats={
            c: fmt.number for c in result.rows.columns if c.endswith("_ms")} | {
            "required_bandwidth_gbps": lambda v: f"{v:.2f}",
            "data_transmitted_bytes": fmt.count})
        self.body.mount(self.table)
        self.body.mount(Static("", id="detail"))
        self.body.mount(Static("", id="finding"))
        self.body.mount(Static("", id="where"))
        self._summarize(result)
        self.table.focus()
        self._show_detail(self.table.row())

    def _summarize(self, result: MegascaleResult) -> None:
        n = len(result.rows)
        text = Text.assemble((f"{n}", "bold"), " DCN collectives on host ", (result.host, "bold"),
                             f" ({result.device}{_device_hint(result)}, {result.cores_per_host} cores per host)")
        if result.dcn_gbps:
            k = result.exceeding_count
            source = f" ({result.suggestion})" if result.dcn_gbps == result.suggested_gbps else " (set with B)"
            text.append(f" · network {result.dcn_gbps:g} Gbps{source}: ")
            text.append(f"{k}", style="bold")
            text.append(" need more (")
            text.append("! flagged", style="red")
            text.append(" rows)")
        elif result.suggested_gbps is None:
            text.append(f" · {result.suggestion}: B sets the DCN bandwidth to flag rows", style="dim")
        else:
            text.append(f" · no DCN bandwidth set (B; {result.suggested_gbps:g} Gbps for {result.suggestion})",
                        style="dim")
        outliers = result.stall_outlier_names
        if outliers:
            text.append(" · ")
            text.append(f"{len(outliers)}", style="bold")
            text.append(" with a stall standing out (")
            text.append("* marked", style="yellow")
            text.append("; the line under the table says why)")
        for d in result.diagnostics:
            text.append(f"\n{d}", style="dim")
        self.query_one("#summary", Static).update(text)
        if self.table is None:
            return
        self.table.border_title = (f"Megascale stats ({n}) · sorted by aggregated total stall · s sort · / filter"
                                   " · B Gbps · enter trace")
        flagged, outliers = result.flagged_names, result.stall_outlier_names
        self.table.formats["name"] = lambda v: _marks(v, flagged, outliers)
        self.table.refresh()

    def action_bandwidth(self) -> None:
        if self.table is None:
            self.notify("no DCN collectives to check against a bandwidth", severity="warning")
            return
        box = self.query_one("#gbps", Input)
        current = self.result.dcn_gbps if self.result is not None else None
        box.placeholder = (f"DCN bandwidth per host in Gbps (now {current:g}; empty: off), enter to apply" if current
                           else "DCN bandwidth per host in Gbps (empty: off), enter to apply")
        box.add_class("open")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        box = event.input
        box.remove_class("open")
        try:
            gbps = float(event.value) if event.value.strip() else None
        except ValueError:
            gbps = None
        if self.result is None or self.table is None:  # B opens the box only over a table
            return
        self.result = self.result.flag(gbps)
        self.options["dcn_gbps"] = gbps or 0.0  # 0: off (None would bring the generation's back on reload)
        self.table.set_frame(self.result.rows, keep_cursor=True)
        self._summarize(self.result)
        self._show_detail(self.table.row())
        self.table.focus()

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._show_detail(event.row)

    def _show_detail(self, row) -> None:
        for detail in self.query("#detail").results(Static):
            detail.update(row_details(row) if row else "")
        found = self.result.findings_of(row["name"]) if row and self.result is not None else []
        for line in self.query("#finding").results(Static):  # what the guide makes of this collective (dcn_diagnosis)
            line.update(Text("\n".join(f["text"] for f in found), style="yellow") if found else "")

    def on_frame_table_row_selected(self, event: FrameTable.RowSelected) -> None:
        self._trace(event.row)

    def graph_target(self):
        table = getattr(self, "table", None) if self.result is not None else None
        row = table.row() if table is not None else None
        return (row["recv_op_name"], None) if row else None

    def _trace(self, row) -> None:
        if not row or self.result is None:
            return
        span = self.result.first_recv_done(row["name"])
        if span is None:
            self.query_one("#where", Static).update(
                Text(f"{row['recv_op_name']} ({row['name']}): no complete occurrence on {self.result.device} to show"))
            return
        from tputui.screens.trace_viewer import TraceFocus, show_in_trace_viewer

        # The trace viewer opens on the app's host; with none picked that is the run's first host,
        # the same one this table is for.
        show_in_trace_viewer(self.app, TraceFocus(names=(row["recv_op_name"],), start_ps=span[0], end_ps=span[1]))

    def action_pick_device(self) -> None:
        if self.result is None or len(self.result.devices) < 2:
            self.notify("this host has one TPU device", severity="information")
            return
        choices = [(d, d + ("  (XProf's)" if d == DEVICE else "")) for d in self.result.devices]
        self.app.push_screen(PickerScreen("TPU device", choices, self.result.device), self._device_picked)

    def _device_picked(self, device: str | None) -> None:
        if device and self.result is not None and device != self.result.device:
            self.options = {**self.options, "device": device}
            self.table = None
            self.load()  # the same screen, its analysis again for that device

    def export_frame(self):
        return self.table.frame if self.table is not None else None


def _marks(name: str, flagged: set[str], outliers: set[str]) -> str:
    """`!` needs more than the network, `*` its stall stands out (both: `*!`)."""
    mark = ("*" if name in outliers else "") + ("!" if name in flagged else "")
    return f"{mark} {name}" if mark else name


def _device_hint(result: MegascaleResult) -> str:
    n = len(result.devices)
    return f"; {n} TPU devices, T for another" if n > 1 else ""

"""Pod viewer: step picker, topology heatmap coloured by a step-breakdown category, the per-chip
breakdown as stacked columns, the send/recv channel table and its latency bars.

The heatmap places chips at their (x, y) coordinates, one grid per z-layer on 3D tori (v4, v5p),
one grid on 2D slices (v5e, v6e), when the analysis has a topology (derived, see
analysis/pod_topology.py); otherwise it draws hosts -> chips -> cores strips. The pod viewer
always covers every host of the run (as XProf's does): the context bar says so, and a host picked
with `h` is where the heatmap cursor starts. Colouring starts with the category that takes the
most time over all steps (device compute on a TPU pod, input on an input-bound CPU run).

Keys: `[` / `]` (or left / right on the step bar) pick the step, `k` cycles the category, arrows
move over the heatmap (the readout says host, chip, core, coordinates, value and the collective
split; the cores linked to the cell by send/recv channels are drawn ◆), tab moves between panes
(on the per-chip columns ←/→ read one chip's breakdown); selecting a channel highlights its cores
and draws its links between the chips on the grid (sending chips to receiving chips). On a channel
row, as on op rows elsewhere, `v` (or Enter) shows its HLO ops' events in the trace viewer, `G` one
of its ops in the graph viewer, `P` in the op profile (a channel with several ops asks which).
`x` writes the step's per-core rows as CSV (the channel table while it has the focus).

Beside XProf's device compute and device to device, the readout and the line under the collectives
give tputui's finer split (high- / low-FLOPS; send / recv-done), labelled as ours (pod_split.py)."""
from __future__ import annotations

import polars as pl
from rich.markup import escape
from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.op_events import hlo_op_rows
from tputui.analysis.pod_split import SPLIT
from tputui.analysis.pod_viewer import CATEGORY_KEYS, CATEGORY_NAMES, PodViewerResult
from tputui.screens.base import ToolScreen
from tputui.screens.graph_jump import GraphJumpMixin, graph_binding
from tputui.screens.op_tables import CsvExportMixin, ResultKeysMixin, TraceJumpMixin
from tputui.screens.pickers import PickerScreen
from tputui.screens.profile_jump import OpProfileJumpMixin, profile_binding
from tputui.widgets.charts import PALETTE, HBarChart, StackedColumns
from tputui.widgets.heatmap import Cell, Heatmap
from tputui.widgets.step_chart import y_axis
from tputui.widgets.table import FrameTable

CHIP_CHART_HEIGHT = 8
SHORT = 45  # lines: below this the channel table takes the per-chip columns' place while focused


class StepBar(Static, can_focus=True):
    """`◀ step 3 ▶  (2 of 5)` — left / right change the step."""

    BINDINGS = [Binding("left", "screen.step(-1)", "Prev step", show=False),
                Binding("right", "screen.step(1)", "Next step", show=False)]


def _parse_cores(spec: str) -> set[int]:
    out: set[int] = set()
    for part in (spec or "").split(","):
        if "-" in part:
            a, b = part.split("-")
            out.update(range(int(a), int(b) + 1))
        elif part.strip().lstrip("-").isdigit():
            out.add(int(part))
    return out


class PodViewerScreen(
        ResultKeysMixin,
        TraceJumpMixin[PodViewerResult],
        GraphJumpMixin[PodViewerResult],
        OpProfileJumpMixin[PodViewerResult],
        CsvExportMixin[PodViewerResult],
        ToolScreen[PodViewerResult]):
    BINDINGS = [
        Binding("right_square_bracket", "step(1)", "Next step", id="pod.next"),
        Binding("left_square_bracket", "step(-1)", "Prev step", id="pod.prev"),
        Binding("k", "category(1)", "Category", id="pod.category"),
        Binding("v", "show_in_trace", "Trace", id="pod.trace",
                tooltip="open the trace viewer on the highlighted channel's send / recv-done events (Enter too)"),
        graph_binding("pod"), profile_binding("pod"),
    ]
    RESULT_ACTIONS = frozenset({"show_in_trace", "show_in_graph", "show_in_op_profile"})
    DEFAULT_CSS = """
    PodViewerScreen StepBar { height: 1; padding: 0 1; }
    PodViewerScreen StepBar:focus { background: $accent 30%; }
    PodViewerScreen Heatmap { padding: 0 1; }
    PodViewerScreen Heatmap:focus { background: $boost; }
    PodViewerScreen .line { height: auto; padding: 0 1; }
    PodViewerScreen #chip_legend { height: auto; }
    PodViewerScreen #details { height: auto; padding: 0 1; color: $text; }
    PodViewerScreen #chip-plot { height: 8; padding: 0 1; }
    PodViewerScreen #chip-axis { width: auto; height: 8; }
    PodViewerScreen StackedColumns { height: 8; width: 1fr; }
    PodViewerScreen StackedColumns:focus { background: $boost; }
    PodViewerScreen #collectives { height: auto; padding: 0 1; }
    PodViewerScreen.channels-up #chip-plot, PodViewerScreen.channels-up #chip_legend { display: none; }
    PodViewerScreen #channel-pane { height: 1fr; min-height: 4; }
    PodViewerScreen #channels { height: 1fr; width: 1fr; border: round $foreground 55%; }
    PodViewerScreen #latency { width: auto; max-width: 50%; height: auto; padding: 0 1; }
    PodViewerScreen.narrow #channel-pane { layout: vertical; }
    PodViewerScreen.narrow #channels { min-height: 5; }
    PodViewerScreen.narrow #latency { width: 1fr; max-width: 100%; max-height: 40%; }
    """  # 8 = CHIP_CHART_HEIGHT
    # Below this many columns the latency bars go under the channel table: beside it they took half
    # of 80 columns and left the table a sliver.
    NARROW_BELOW = 110
    channels: FrameTable | None = None
    steps: list = []  # the result's step numbers (none until it is shown)
    step_index: reactive[int] = reactive(0, init=False)
    category: reactive[int] = reactive(0, init=False)

    def context_text(self) -> str:
        # The pod viewer reads every host whatever `h` picked: say so instead of one host's name.
        hosts = self.run_data.hosts
        where = f"hosts [b]all {len(hosts)}[/b]" if len(hosts) > 1 else f"host [b]{escape((hosts or ['-'])[0])}[/b]"
        start = f" · cursor starts on {escape(self.host)}" if self.host and len(hosts) > 1 else ""
        return (f"[b]{escape(self.tool.title)}[/b]  │  run [b]{escape(self.run_data.name)}[/b]  │  "
                f"{where}{start}  [dim](t tool · r run · h host · ? help · q quit)[/dim]")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Steps and categories only once there are steps, the channel keys only with channels:
        # no key offered that cannot act.
        if action in ("step", "category"):
            return bool(self.steps)
        if action in self.RESULT_ACTIONS:
            return self.channels is not None
        return ToolScreen.check_action(self, action, parameters)  # x CSV only with a result

    def show(self, result: PodViewerResult) -> None:
        self.pod = result
        self.steps = result.step_numbers
        self.refresh_bindings()
        if not self.steps:
            t = Text(f"No steps to show: this {result.device_type or ''} profile has no step markers.\n".replace("  ", " "),
                     style="bold")
            t.append(" ".join(result.diagnostics.get("warnings", [])), style="dim")
            self.body.mount(Static(t, id="no-steps", classes="error"))
            return
        # Start on the category that takes the most time over all steps.
        self.set_reactive(PodViewerScreen.category, result.dominant_category)
        self.body.mount(StepBar("", id="stepbar"))
        self.heatmap = Heatmap(id="heatmap")
        self.body.mount(self.heatmap)
        self.body.mount(Static("", id="legend", classes="line"))
        self.body.mount(Static("", id="details"))
        self.body.mount(Static("", id="collectives"))
        self.chips = StackedColumns(id="chips")
        self.chip_axis = Static("", id="chip-axis")
        self.body.mount(Horizontal(self.chip_axis, self.chips, id="chip-plot"))
        self.body.mount(Static("", id="chip_legend", classes="line"))
        if len(result.channels):
            two = {c: (lambda v: fmt.number(v, 2))
                   for c in ("data_mib", "latency_us", "duration_us", "bandwidth_gibps", "send_delay_us")}
            shown = result.channels.drop("src_core_ids", "dst_core_ids")
            self.channels = FrameTable(shown, id="channels", formats=two)
            self.channels.border_title = f"Send/recv channels ({len(result.channels)}, all steps) · s sort · / filter"
            # XProf's "Latency of Send and Recv channels": per channel id, send start to
            # recv-done end (us), longest first.
            latency = HBarChart([(f"ch {c}", v) for c, v in result.channel_latency()], unit=" us", bar_width=16,
                                label_width=10, title="Channel latency (send → recv-done end)", id="latency")
            self.body.mount(Horizontal(self.channels, latency, id="channel-pane"))
        else:
            self.body.mount(Static("No send/recv channels: no cross-core send / recv-done ops in this profile.",
                                   id="no-channels", classes="line"))
        self._redraw()
        if self.host:  # the host picked with `h`: start the cursor on its first cell
            self.heatmap.cursor = next((i for i, u in enumerate(self.heatmap.units) if u.host == self.host), 0)
        self.heatmap.focus()

    # --- state ------------------------------------------------------------------------------
    def action_step(self, delta: int) -> None:
        if getattr(self, "steps", None):
            self.step_index = max(0, min(len(self.steps) - 1, self.step_index + delta))

    def action_category(self, delta: int) -> None:
        if getattr(self, "steps", None):
            self.category = (self.category + delta) % len(CATEGORY_KEYS)

    def watch_step_index(self) -> None:
        self._redraw()

    def watch_category(self) -> None:
        self._redraw()

    @property
    def step(self) -> int:
        return self.steps[self.step_index]

    @property
    def category_key(self) -> str:
        return CATEGORY_KEYS[self.category]

    def step_frame(self) -> pl.DataFrame:
        return self.pod.step_frame(self.step)

    def export_frame(self) -> pl.DataFrame | None:
        """`x`: the channel table as shown while it has the focus, else the step's per-core rows
        (the export's `steps` CSV table, this step only)."""
        if not getattr(self, "steps", None):
            return None
        if self.channels is not None and self.channels.has_focus:
            return self.channels.frame
        return self.pod.step_table(self.step)

    def _redraw(self) -> None:
        if not getattr(self, "steps", None) or not self.is_mounted:
            return
        df = self.step_frame()
        key = self.category_key
        topo = self.pod.topology
        cells = [Cell(r["core"], r["host"] or "?", r["chip"] if r["chip"] is not None else -1, r[f"{key}_us"] / 1000,
                      (r["x"], r["y"], r["z"]) if topo is not None else None)
                 for r in df.iter_rows(named=True)]
        self.heatmap.set_cells(cells, topo.host_dims if topo is not None else None)
        bar = Text()
        bar.append(" ◀ ", style="bold")
        bar.append(f"step {self.step}", style="bold")
        bar.append(" ▶ ", style="bold")
        bar.append(f" ({self.step_index + 1} of {len(self.steps)})   ", style="dim")
        bar.append("colour: ", style="dim")
        bar.append(CATEGORY_NAMES[key], style="bold")
        bar.append(f"   {len(df)} core{'s' if len(df) != 1 else ''} · {self.pod.device_type}", style="dim")
        if topo is not None:  # the footer shows the keys; say instead where the layout comes from
            bar.append(" " + "x".join(str(d) for d in (topo.dims if topo.is_3d else topo.dims[:2]))
                       + "   (layout derived from chip ids)", style="dim")
        else:
            bar.append("   [ ] step · k category", style="dim")
        self.query_one("#stepbar", StepBar).update(bar)
        self.query_one("#collectives", Static).update(self._collectives_line())
        self.query_one("#legend", Static).update(self.heatmap.legend())
        # Stacked columns: per chip (x = global chip id), the mean over its cores, in ms.
        self.per_chip = self.pod.chip_frame(self.step)
        self.chip_keys = [k for k in CATEGORY_KEYS if f"{k}_ms" in self.per_chip.columns]
        values = [[r[f"{k}_ms"] for k in self.chip_keys] for r in self.per_chip.iter_rows(named=True)]
        self.chips.set_data(values, [CATEGORY_NAMES[k] for k in self.chip_keys],
                            [str(c) for c in self.per_chip["chip"].to_list()])
        self.chip_axis.update(y_axis(fmt.figure(self.per_chip["total_ms"].max()) or 0.0, CHIP_CHART_HEIGHT))
        legend = Text("per chip (ms): ", style="dim")
        legend.append_text(self.chips.legend())
        self.query_one("#chip_legend", Static).update(legend)
        if self.chips.has_focus:
            self._chip_details(self.chips.cursor)
        else:
            self._update_details(self.heatmap.current)

    def _collectives_line(self) -> Text:
        """The step's collective time split into sync wait and transfer, or why it is not."""
        t = Text()
        if self.pod.split_note:
            t.append(f"Collectives not split into sync wait / transfer: {self.pod.split_note}.", style="dim")
            return t
        cores = self.step_frame()["core"].to_list()
        split = self.pod.collective_split(self.step, cores)
        if split is None:
            t.append(f"Collectives: none in step {self.step}.", style="dim")
            return t
        sync, transfer = split
        t.append("Collectives ", style="bold")
        t.append(f"(mean of {len(cores)} cores): sync wait {fmt.duration_ms(sync)} + transfer {fmt.duration_ms(transfer)}")
        t.append("  (the core that waits least sets the transfer)", style="dim")
        return t

    def _update_details(self, unit) -> None:
        if unit is None:
            return
        key = self.category_key
        mean = self.pod.cores_mean_ms(self.step, unit.cores)
        val, total = mean[key], mean["total"]
        pct = fmt.share_percent(val, total, missing="0.0%")
        t = Text()
        if self.heatmap.level == "core":
            core = next(iter(unit.cores))
            info = self.pod.core_info(core)
            t.append(f"core {core}", style="bold")
            if info is not None:
                t.append(f" · chip {info.chip} (core {info.core_on_chip} on chip) · host {info.host}")
        else:
            t.append(unit.label if self.heatmap.level == "chip" else f"host {unit.host}", style="bold")
            t.append(f" · {len(unit.cores)} cores (mean)" + (f" · host {unit.host}" if self.heatmap.level == "chip" else ""))
        if unit.xyz is not None:
            t.append(" · (x {}, y {}, z {})".format(*unit.xyz))
        t.append(f" · {CATEGORY_NAMES[key]} {fmt.duration_ms(val)} ({pct} of {fmt.duration_ms(total)} step)")
        t.append(self._finer(unit.cores, key))
        split = self.pod.collective_split(self.step, unit.cores)
        if split is not None:
            t.append(f" · collectives: sync {fmt.duration_ms(split[0])} + transfer {fmt.duration_ms(split[1])}")
        partners = self.pod.partners(unit.cores)
        if partners and len(partners) + len(unit.cores) >= len(self.pod.cores):
            t.append(f" · linked by send/recv to every other core ({len(partners)})", style="dim")
        elif partners:
            t.append(f" · ◆ linked by send/recv to {len(partners)} core{'s' if len(partners) != 1 else ''}", style="dim")
        self.query_one("#details", Static).update(t)
        if self.heatmap.has_focus:
            self.heatmap.set_highlight(self._linked(unit.cores))

    def _linked(self, cores) -> set[int]:
        """The partners to draw ◆: none when every other core is one (SPMD programs send and
        receive on every core, and a grid of ◆ would hide the colours for nothing)."""
        partners = self.pod.partners(cores)
        return set() if len(partners) + len(set(cores)) >= len(self.pod.cores) else partners

    def _chip_details(self, index: int) -> None:
        """One chip's breakdown (the per-chip columns' cursor), largest part first."""
        if not 0 <= index < len(self.per_chip):
            return
        r = self.per_chip.row(index, named=True)
        total = r["total_ms"]
        t = Text()
        t.append(f"chip {r['chip']}", style="bold")
        t.append(f" · host {r['host']} · mean of its {r['cores']} core{'s' if r['cores'] != 1 else ''}: "
                 f"{fmt.duration_ms(total)}  ")
        parts = sorted(((r[f"{k}_ms"], k, i) for i, k in enumerate(self.chip_keys) if r[f"{k}_ms"] > 0), reverse=True)
        for n, (v, k, i) in enumerate(parts):
            if n:
                t.append(" · ", style="dim")
            t.append("■ ", style=PALETTE[i % len(PALETTE)])
            t.append(f"{CATEGORY_NAMES[k]} {v:.3f}")
            t.append(f" ({fmt.share_percent(v, total)})" if total else "", style="dim")
            t.append(self._finer(self.pod.step_frame(self.step).filter(pl.col("chip") == r["chip"])["core"].to_list(), k))
        self.query_one("#details", Static).update(t)

    def _finer(self, cores, category: str) -> str:
        """tputui's split of XProf's figure for `category` over `cores`, to write beside it:
        " [tputui: high-FLOPS 1.2 ms, low-FLOPS 0.3 ms]" ("" for the categories not split)."""
        if category not in ("device_compute", "device_to_device"):
            return ""
        split = self.pod.finer_split_ms(self.step, cores)
        if split is None:
            return ""
        parts = [f"{SPLIT[k][0]} {fmt.duration_ms(v)}" for k, v in split.items()
                 if SPLIT[k][1] == category and (v or "megacore" not in k)]  # megacore only when there is some
        return " [tputui: " + ", ".join(parts) + "]"

    # --- events -------------------------------------------------------------------------------
    def on_stacked_columns_cursor_moved(self, event: StackedColumns.CursorMoved) -> None:
        if getattr(self, "steps", None) and event.chart.has_focus:
            self._chip_details(event.index)
    def on_heatmap_cursor_moved(self, event: Heatmap.CursorMoved) -> None:
        if getattr(self, "steps", None):
            self.query_one("#legend", Static).update(self.heatmap.legend())
            if not self.chips.has_focus:
                self._update_details(event.unit)

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._highlight_channel(event.row)

    def _highlight_channel(self, row) -> None:
        """While the channel table has focus, its current channel's cores are drawn as ◆ and
        its links (sending chip -> receiving chip) between the cells of the grid."""
        if not hasattr(self, "heatmap"):
            return
        if row and self.channels is not None and self.channels.has_focus:
            self.heatmap.set_highlight(_parse_cores(row["src_cores"]) | _parse_cores(row["dst_cores"]))
            self.heatmap.set_links(self.pod.channel_links(row["channel"]))
            self._channel_details(row)
        else:
            self.heatmap.set_links(())
            if self.heatmap.has_focus and self.heatmap.current is not None:
                self.heatmap.set_highlight(self._linked(self.heatmap.current.cores))
            else:
                self.heatmap.set_highlight(())
        self.query_one("#legend", Static).update(self.heatmap.legend())
        self._make_room()

    def _make_room(self) -> None:
        """Under SHORT lines the per-chip columns make way for the channel table while it has the
        focus, so the grid with its links and the table fit together (80x24, 120x40)."""
        up = self.channels is not None and self.channels.has_focus and (self.size.height or 99) < SHORT
        self.set_class(up, "channels-up")

    def on_resize(self) -> None:
        self.set_class((self.size.width or 200) < self.NARROW_BELOW, "narrow")
        if getattr(self, "steps", None):
            self._make_room()

    def _channel_details(self, row) -> None:
        """The readout for a channel row: who sends, who receives, how many links are drawn."""
        links = self.pod.channel_links(row["channel"])
        t = Text()
        t.append(f"channel {row['channel']}", style="bold")
        t.append(f" · {row['hlo_names']} · {_cores(row['src_cores'])} send, {_cores(row['dst_cores'])} receive")
        if links:
            chips = len({c for pair in links for c in pair})
            t.append(f" · {len(links)} chip link{'s' if len(links) != 1 else ''} among {chips} chips")
            if self.pod.topology is None:
                t.append(" (no chip grid to draw them on)", style="dim")
        t.append("  v trace · G graph · P op profile", style="dim")
        self.query_one("#details", Static).update(t)

    # --- jumps from a channel row to its HLO ops (v, G, P, as on op rows elsewhere) ----------
    def _channel_row(self):
        return self.channels.row() if self.channels is not None else None

    def _channel_ops(self) -> list[str] | str:
        row = self._channel_row()
        if row is None:
            return "no send/recv channel in this profile" if self.channels is None else "select a channel first"
        # send.4 before recv-done.4: the op that starts the transfer first.
        return sorted(row["hlo_names"].split(", "), key=lambda n: (not n.startswith("send"), n))

    def trace_target(self):
        ops = self._channel_ops()
        if isinstance(ops, str):
            return ops
        row = self._channel_row()
        return f"channel {row['channel']} ({', '.join(ops)})", lambda frame: hlo_op_rows(frame, ops)

    # G and P: the mixins' jumps, on the op picked from the channel's (asked when it has several).
    picked_op: str | None = None

    def action_show_in_graph(self) -> None:
        self._with_op(GraphJumpMixin.action_show_in_graph, "graph viewer")

    def action_show_in_op_profile(self) -> None:
        self._with_op(OpProfileJumpMixin.action_show_in_op_profile, "op profile")

    def graph_target(self):
        return (self.picked_op, None) if self.picked_op else "select a channel first"

    def profile_target(self):
        return (self.picked_op,) if self.picked_op else "select a channel first"

    def _with_op(self, jump, where: str) -> None:
        ops = self._channel_ops()
        if isinstance(ops, str):
            self.notify(ops, severity="warning")
            return

        def go(op: str | None) -> None:
            if op:
                self.picked_op = op
                jump(self)

        if len(ops) == 1:
            go(ops[0])
        else:
            row = self._channel_row()
            self.app.push_screen(PickerScreen(f"HLO op of channel {row['channel']} for the {where}",
                                              [(o, o) for o in ops]), go)

    def on_descendant_focus(self, event) -> None:
        if self.channels is not None:
            self._highlight_channel(self.channels.row() if self.channels.has_focus else None)
        # The details line reads whichever pane has the focus: a chip's columns, else the heatmap.
        if getattr(self, "steps", None):
            if self.chips.has_focus:
                self._chip_details(self.chips.cursor)
            elif self.channels is None or not self.channels.has_focus:  # the heatmap, or the step bar
                self._update_details(self.heatmap.current)


def _cores(spec: str) -> str:
    """"cores 0-3" while the ranges are short, else the count ("256 cores"): a pod's lists wrap."""
    n = len(_parse_cores(spec))
    return f"core{'s' if n != 1 else ''} {spec}" if len(spec) <= 24 else f"{n} cores"

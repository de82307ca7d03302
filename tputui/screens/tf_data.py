"""tf.data bottleneck: the host input pipelines, slowest first, then a distribution strategy's
device-side ones; for the highlighted one, the iterator tree of its slowest call (start relative to
the call, duration, self time, calls), the critical path (▶, bold: the iterators the call waited on),
the bottleneck iterator (★), what to change (named from the Python the pipeline runs when it does)
and its other runs, slowest first. Tab moves between the pipelines and the tree; `x` writes the pipelines as CSV.
"""
from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static, Tree

from tputui import format as fmt
from tputui.analysis.tf_data import bottleneck_kind
from tputui.analysis.tf_data_bottleneck import TfDataBottleneckResult, pipeline_advice
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin, ResultKeysMixin
from tputui.widgets.key_tree import KeyTree
from tputui.widgets.table import FrameTable

MAX_RUNS_SHOWN = 6
KIND_WORDS = {"source": "a source dataset", "data_service": "tf.data service", "remote": "a remote source",
              "parallelizable": "a transformation that can run in parallel",
              "sequential": "an inherently sequential transformation", "other": "an iterator"}


def iterator_label(row: dict) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("★ " if row["bottleneck"] else ("▶ " if row["critical"] else "  "),
             style="bold red" if row["bottleneck"] else "bold")
    t.append(row["iterator"], style="bold" if row["critical"] else "")
    t.append("  async" if row["is_async"] else "", style="dim")
    t.append(f"  start {row['start_us']:+,.1f} µs", style="dim")
    t.append(f"  duration {fmt.duration_us(row['duration_us'])}")
    t.append(f"  self {fmt.duration_us(row['self_time_us'])}", style="bold" if row["bottleneck"] else "")
    t.append(f"  calls {row['calls']:,}", style="dim")
    return t


def runs_line(runs) -> Text:
    """The pipeline's other calls, slowest first (the tree shows the first)."""
    t = Text()
    if runs.height < 2:
        return t
    t.append(f"\nOther runs, slowest first ({runs.height - 1}): ", style="bold")
    shown = []
    for row in runs.slice(1, MAX_RUNS_SHOWN).iter_rows(named=True):
        where = f", {row['bottleneck_iterator']}" if row["bottleneck_iterator"] else ""
        shown.append(f"#{row['rank']} {fmt.duration_us(row['duration_us'])} at {fmt.duration_us(row['start_us'])}{where}")
    t.append(" · ".join(shown))
    if runs.height - 1 > MAX_RUNS_SHOWN:
        t.append(f" · … {runs.height - 1 - MAX_RUNS_SHOWN} more (all in the export's runs table)", style="dim")
    return t


class TfDataScreen(ResultKeysMixin, CsvExportMixin[TfDataBottleneckResult], ToolScreen[TfDataBottleneckResult]):
    help_notes = ("tf.data input pipelines (root iterators), slowest call first. The tree is that call: ▶ marks "
                  "the critical path (iterators it waited on, including async producers), ★ the bottleneck "
                  "(largest self time on that path). Starts are relative to the call; async producers start "
                  "earlier (negative). Reading a name: Iterator::A::B::C is the iterator of C, which feeds B, which "
                  "feeds A: the name starts at the pipeline's end and ends with the dataset op this iterator runs "
                  "(Iterator::Root::Prefetch::MapAndBatch::TFRecord: the TFRecord reader, whose records are mapped, "
                  "batched, then prefetched). Device:N pipelines (a distribution strategy's device side, which "
                  "prefetches the host pipeline's batches to each device) come after the host ones, outside the "
                  "ranking as in XProf. Under the advice: the pipeline's other runs (calls), slowest first.")
    BINDINGS = [
        Binding("tab", "switch", "Pipelines / tree", id="tf_data.tab", tooltip="move between the pipelines and the tree"),
        Binding("x", "export_csv", "CSV", id="tf_data.csv", tooltip=CSV_TIP),
    ]
    RESULT_ACTIONS = frozenset({"switch", "export_csv"})
    DEFAULT_CSS = """
    TfDataScreen #tfd-summary { height: auto; padding: 0 1; }
    TfDataScreen #tfd-pipes { height: auto; max-height: 10; border: round $foreground 55%; }
    TfDataScreen #tfd-tree { height: 1fr; min-height: 7; border: round $foreground 55%; }
    TfDataScreen #tfd-suggestion { height: auto; max-height: 30%; padding: 0 1; }
    """

    def show(self, result: TfDataBottleneckResult) -> None:
        a = result.analysis
        self.body.mount(Static(Text(a.summary, style="bold" if a.is_input_bound else ""), id="tfd-summary"))
        frame = result.pipeline_frame()
        self.pipes = FrameTable(frame.with_row_index("index"), hidden=("index",), id="tfd-pipes", formats={
            c: (lambda v: f"{v:,.1f}") for c in frame.columns if c.endswith("_us")})
        device = len(a.device_pipelines)
        self.pipes.border_title = (f"Input pipelines, slowest first ({frame.height}"
                                   + (f"; the last {device} device-side" if device else "") + ") · Tab tree · x CSV")
        self.body.mount(self.pipes)
        self.iter_tree: Tree = KeyTree("iterators", id="tfd-tree")
        self.iter_tree.show_root = False
        self.body.mount(self.iter_tree)
        self.body.mount(Static("", id="tfd-suggestion"))
        self.pipes.focus()
        self._show_pipeline(0)
        self.refresh_bindings()

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        if event.row is not None:
            self._show_pipeline(int(event.row["index"]))

    def on_frame_table_row_selected(self, event: FrameTable.RowSelected) -> None:
        event.stop()
        self.iter_tree.focus()

    def _show_pipeline(self, index: int) -> None:
        r = self.loaded
        if not 0 <= index < len(r.pipelines):
            return
        pipe = r.pipelines[index]
        tree = self.iter_tree
        tree.clear()
        nodes = {"": tree.root}
        for row in r.iterator_tree(index).iter_rows(named=True):
            parent = nodes.get(row["parent"], tree.root)
            nodes[row["long_name"]] = parent.add(iterator_label(row), data=row["long_name"], expand=True)
        tree.border_title = (f"{pipe.host} {pipe.name}: its slowest call, {fmt.duration_us(pipe.max_latency_ps / 1e6)}"
                             f" · ▶ critical path · ★ bottleneck")
        text = Text()
        if pipe.bottleneck_iterator:
            kind = bottleneck_kind(pipe.bottleneck_iterator)
            text.append("Bottleneck: ", style="bold")
            text.append(f"{pipe.bottleneck_iterator}", style="bold red")
            text.append(f" ({KIND_WORDS[kind]}), self time {fmt.duration_us(pipe.bottleneck_latency_ps / 1e6)} "
                        f"of the slowest call; {pipe.slow_calls} of {pipe.calls} calls over 50 µs.\n", style="")
            advice = pipeline_advice(pipe)
            if advice:
                text.append("What to change: ", style="bold")
                text.append(advice + "\n")
            text.append("XProf: ", style="bold")
            text.append(pipe.suggestion)
        else:
            text.append("No iterator on this call's path spent time of its own.", style="dim")
        if pipe.side == "device":
            text.append("\nA device-side pipeline of a distribution strategy (it prefetches the host pipeline's "
                        "batches to a device); XProf leaves it out of the bottleneck ranking.", style="dim")
        text.append_text(runs_line(pipe.runs))
        self.query_one("#tfd-suggestion", Static).update(text)

    def action_switch(self) -> None:
        (self.iter_tree if self.pipes.has_focus else self.pipes).focus()

    def export_frame(self):
        return self.result.pipeline_frame() if self.result is not None else None

"""Op profile: XProf's op tree (program -> category -> duplicates -> op -> fused ops).

Keys: arrows move, Enter / Space expand or collapse, `b` program / category grouping, `i` IDLE
on/off, `s` sort children (time, FLOPS rate, memory bandwidth, name), `/` filter by name (Esc
clears), `+` / `-` show more / fewer children per node (default 10), `v` shows the highlighted
op (or every op of a category, or a program's runs) in the trace viewer, `G` the op's HLO graph.
Opened on one op by another screen (`P`, profile_jump.py: option `select`), the tree starts
filtered to that op's name with the cursor on it.
Each row shows time %, FLOPS utilization (red low -> green high) and HBM bandwidth %; the card on
the right describes the highlighted node (category, time and average time, utilizations, bound-by,
arithmetic intensity against the ridge point, HLO text, shape / layout, framework op, source line)
and, for an op, how much its layout's tiling pads its result (padded / logical bytes).
"""
from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Static, Tree
from textual.widgets.tree import TreeNode

from tputui import format as fmt
from tputui.analysis.op_events import hlo_op_rows, program_rows
from tputui.analysis.op_profile import SORTS, Node, OpProfile
from tputui.screens.app_api import tools_app
from tputui.screens.base import ToolScreen
from tputui.screens.graph_jump import GraphJumpMixin, graph_binding
from tputui.screens.op_tables import ResultKeysMixin, TraceJumpMixin
from tputui.widgets.key_tree import KeyTree
from tputui.widgets.legible import TEXT_CONTRAST_AIM, standing_out, text_background, theme_colour

DEFAULT_CHILDREN = 10
PADDING_HELP = "make the two most-minor dimensions multiples of the tile, e.g. 8 and 128"


def util_color(u: float, background: tuple[int, int, int] | None = None) -> str:
    """Red (0) -> yellow (0.5) -> green (1), as XProf colours FLOPS utilization; on `background`,
    darkened (light theme) or lightened (dark theme) to text contrast."""
    u = max(0.0, min(1.0, u))
    r, g = (255, int(510 * u)) if u < 0.5 else (int(255 * (2 - 2 * u)), 255)
    colour = f"#{r:02x}{g:02x}3c"
    return colour if background is None else standing_out(colour, background, TEXT_CONTRAST_AIM)


ROOT_NAMES = {"by_program": "All programs", "by_category": "All categories"}


def display_name(n: Node) -> str:
    return ROOT_NAMES.get(n.name, n.name)


def node_label(n: Node, total_ps: int, background: tuple[int, int, int] | None = None) -> Text:
    frac = n.raw_time_ps / total_ps if total_ps else 0.0
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(fmt.fraction_percent(frac).rjust(7) + " ", style="bold")  # fixed widths keep the tree's columns
    t.append(fmt.fraction_percent(n.flops_utilization).rjust(7) + " flops ",
             style=util_color(n.flops_utilization, background))
    t.append(fmt.fraction_percent(n.hbm_bandwidth_utilization).rjust(7) + " hbm  ", style="dim")
    t.append(display_name(n))
    if n.children:
        t.append(f"  ({len(n.children)})", style="dim")
    return t


def intensity_text(n: Node, ridge: float) -> Text:
    """FLOPs per byte, and which side of the ridge point it falls (memory- or compute-bound side)."""
    t = Text(f"{n.arithmetic_intensity:,.3g} FLOP/byte")
    if ridge:
        side = "below" if n.arithmetic_intensity < ridge else "above"
        t.append(f"  ({side} the ridge point, {ridge:,.0f})", style="dim")
    return t


def mxu_fit_text(f: dict) -> Text:
    """The guide's padding estimate of a dot / convolution on the MXU, one line."""
    if "input_features" in f:  # a convolution: batch to 128, input features to 8
        return Text(f"{f['mxu_utilization_percent']}% of the MXU used: batch {f['batch']}, input features "
                    f"{f['input_features']} padded to {f['padded_to']}")
    used = round(100.0 - f["mxu_waste_percent"], 1)
    return Text(f"{used}% of the MXU used: contraction {f['contraction']}, features {f['features']} "
                f"(multiples of {f['mxu']}), rows {f['rows']} (multiple of 8)")


def node_card(n: Node, total_ps: int, ridge: float = 0.0, advice: list[dict] | None = None,
              mxu_fit: dict | None = None, background: tuple[int, int, int] | None = None) -> Table:
    g = Table.grid(padding=(0, 1))
    g.add_column(style="bold", no_wrap=True)
    g.add_column(overflow="fold")
    g.add_row("Name", Text(display_name(n)))
    if n.category:
        g.add_row("Category", n.category)
    share = fmt.share_percent(n.raw_time_ps, total_ps, 2, missing="0.00%")
    g.add_row("Time", f"{fmt.duration_us(n.raw_time_ps / 1e6)} ({share})")
    if n.occurrences:
        g.add_row("Occurrences", f"{n.occurrences:,}")
        if n.avg_time_ps:
            g.add_row("Average time", fmt.duration_us(n.avg_time_ps / 1e6))
    if n.bound_by:
        g.add_row("Bound by", Text(n.bound_by, style="bold"))
    g.add_row("FLOPS utilization", Text(fmt.fraction_percent(n.flops_utilization, 3),
                                        style=util_color(n.flops_utilization, background)))
    g.add_row("FLOPs", f"{n.model_flops:,}")
    g.add_row("HBM bandwidth", f"{fmt.fraction_percent(n.hbm_bandwidth_utilization, 3)} of peak")
    if n.bytes_accessed:
        g.add_row("Arithmetic intensity", intensity_text(n, ridge))
    if n.expression:
        g.add_row("Expression", Text(n.expression))
    if n.shape:
        g.add_row("Shape / layout", Text(n.shape))
    if n.provenance:
        g.add_row("Framework op", Text(n.provenance))
    if n.source:
        g.add_row("Source", Text(n.source))
    padding = n.padding if n.is_op else None
    if padding and padding[0]:
        logical, padded = padding
        ratio = padded / logical
        text = Text(f"{ratio:.2f}x: {padded:,} bytes for {logical:,} logical", style="bold" if ratio >= 1.25 else "")
        if ratio > 1.0:
            text.append(f"  ({padded - logical:,} bytes of tile padding; {PADDING_HELP})", style="italic")
        else:
            text.append("  (no tile padding)", style="dim")
        g.add_row("Padding", text)
    if mxu_fit:
        g.add_row("MXU fit", mxu_fit_text(mxu_fit))
    for i, a in enumerate(advice or ()):  # the root's card: the Advice tool's first hints
        hint = Text(a["title"], style="bold" if a["severity"] == "high" else "")
        hint.append(f" ({a['source']}; t → Advice for the rest)" if i == 0 else f" ({a['source']})", style="dim")
        g.add_row("Advice" if i == 0 else "", hint)
    return g


def op_nodes(n: Node) -> list[Node]:
    """The ops under `n` (or `n` itself): the first is_op node on each path (fused ops are not events)."""
    if n.is_op:
        return [n]
    return [o for c in n.children for o in op_nodes(c)]


class OpProfileScreen(ResultKeysMixin, TraceJumpMixin[OpProfile], GraphJumpMixin[OpProfile], ToolScreen[OpProfile]):
    help_notes = ("Each row: share of the total time, FLOPS utilization (red low → green high) and HBM bandwidth "
                  "utilization. Enter / Space open a node; the card describes the highlighted one: average time, "
                  "bound-by, arithmetic intensity against the ridge point, source line.")
    BINDINGS = [Binding("b", "toggle_grouping", "Program/category", id="op_profile.group",
                        tooltip="group ops by program, then category (XProf's default) or by category only"),
                Binding("i", "toggle_idle", "IDLE on/off", id="op_profile.idle",
                        tooltip="show or hide IDLE (time without ops) and the percentages it takes"),
                Binding("s", "sort", "Sort", id="op_profile.sort",
                        tooltip="sort every node's children by time, FLOPS rate, memory bandwidth or name (again: next)"),
                Binding("slash", "filter", "Filter", id="op_profile.filter",
                        tooltip="keep the nodes whose name or category holds a text (Esc clears)"),
                Binding("escape", "clear_filter", "Clear filter / back", show=False, id="op_profile.clear",
                        tooltip="clear the filter, else back to the previous screen"),
                Binding("plus,equals_sign", "children(1)", "More children", id="op_profile.more", show=False,
                        tooltip="show 5 more children under each node"),
                Binding("minus", "children(-1)", "Fewer children", id="op_profile.fewer", show=False,
                        tooltip="show 5 fewer children under each node"),
                Binding("v", "show_in_trace", "Show in trace", id="op_profile.trace",
                        tooltip="open the trace viewer on the highlighted op, every op of a category, or a program's runs"),
                graph_binding("op_profile")]
    RESULT_ACTIONS = frozenset({"toggle_grouping", "toggle_idle", "sort", "filter", "children", "show_in_trace",
                                "show_in_graph"})
    DEFAULT_CSS = """
    OpProfileScreen #split { height: 1fr; }
    OpProfileScreen Tree { width: 3fr; border: round $foreground 55%; }
    OpProfileScreen #card-box { width: 2fr; border: round $foreground 55%; padding: 0 1; }
    OpProfileScreen.narrow #split { layout: vertical; }
    OpProfileScreen.narrow Tree { width: 1fr; height: 1fr; }
    OpProfileScreen.narrow #card-box { width: 1fr; height: auto; max-height: 45%; }
    OpProfileScreen #op-filter { dock: bottom; display: none; }
    OpProfileScreen #op-filter.visible { display: block; }
    """
    NARROW = 110  # below this many columns the card goes under the tree (it wraps badly beside it)
    grouping = "program"
    exclude_idle = False
    children_shown = DEFAULT_CHILDREN
    sort = SORTS[0]
    needle = ""

    def __init__(self, run, host, tool, **options: Any) -> None:
        # The op another screen asked for (P): the screen's, not the analysis's option.
        self.select: str | None = options.pop("select", None)
        super().__init__(run, host, tool, **options)
        if self.select:
            self.needle = self.select

    _bg: tuple[int, int, int] | None = None

    def on_mount(self) -> None:  # the utilization colours follow the theme (readable on its background)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._build() if self.result is not None else None)

    def show(self, result: OpProfile) -> None:
        self.op_tree: Tree = KeyTree("op profile", id="tree")
        self.card = Static("", id="card")
        split = Horizontal(id="split")
        self.body.mount(split)
        # Mounted into the split (not passed to its constructor) so the tree has its screen now
        # and takes the focus at once.
        split.mount(self.op_tree, VerticalScroll(self.card, id="card-box"))
        self.body.mount(Input(placeholder="filter: part of an op, category or program name (Enter; empty: all)",
                              id="op-filter"))
        self._build()
        self.op_tree.focus()
        self.refresh_bindings()
        if self.select:
            self.call_after_refresh(self._cursor_on_op, self.select)

    def _cursor_on_op(self, name: str) -> None:
        """The cursor on the first op named `name` (the filter has opened the way to it)."""
        def find(tnode):
            n = tnode.data
            if n is not None and n.is_op and n.name == name:
                return tnode
            return next((hit for c in tnode.children if (hit := find(c)) is not None), None)

        hit = find(self.op_tree.root)
        if hit is None:
            self.notify(f"{name} is not in the op profile (no device time recorded for it)", severity="warning")
            return
        self.op_tree.move_cursor(hit)
        self._show_card(hit.data)

    def on_resize(self) -> None:
        self.set_class((self.size.width or 120) < self.NARROW, "narrow")

    def _root(self) -> Node:
        return self.loaded.view(self.grouping, self.exclude_idle, self.sort, self.needle)

    def _build(self) -> None:
        root = self._root()
        self._total = root.raw_time_ps
        tree = self.op_tree
        tree.clear()
        self._bg = theme_colour(self.app, "surface")  # what the tree is drawn on, known before it is styled
        tree.root.set_label(node_label(root, self._total, self._bg))
        tree.root.data = root
        self._add_tree_children(tree.root, root, depth=0)
        tree.root.expand()
        tree.cursor_line = 0
        shown = f"filter '{self.needle}' · " if self.needle else ""
        if self.needle and not root.children:
            tree.root.add_leaf(Text(f"nothing matches '{self.needle}' (Esc clears)", style="dim"), data=None)
        tree.border_title = (f"By {self.grouping} · {shown}by {self.sort} · s sort · / filter · b group · i IDLE "
                             f"({'hidden' if self.exclude_idle else 'shown'}) · +/- top {self.children_shown} · "
                             "v trace")
        self._show_card(root)

    def _add_tree_children(self, tnode: TreeNode[Node], node: Node, depth: int) -> None:
        kids = node.children[: self.children_shown]
        for c in kids:
            child = tnode.add(node_label(c, self._total, self._bg), data=c, allow_expand=bool(c.children))
            if c.children:
                self._add_tree_children(child, c, depth + 1)
            if depth < 1 or (self.needle and not c.is_op):  # programs open, like XProf's first levels;
                child.expand()                                # with a filter, the way to every match
        hidden = len(node.children) - len(kids)
        if hidden > 0:
            tnode.add_leaf(Text(f"… {hidden} more (+ to show more)", style="dim"), data=None)

    def _show_card(self, n: Node | None) -> None:
        if n is not None:
            self.card_node = n
            root = n is self.op_tree.root.data
            self.card.update(node_card(n, self._total, self.loaded.ridge_point, self.loaded.advice if root else None,
                                       self.loaded.mxu_fit.get(n.name), text_background(self.card)))

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        self._show_card(event.node.data)

    def action_toggle_grouping(self) -> None:
        if self.result is not None:
            self.grouping = "category" if self.grouping == "program" else "program"
            self._build()

    def action_toggle_idle(self) -> None:
        if self.result is not None:
            self.exclude_idle = not self.exclude_idle
            self._build()

    def action_sort(self) -> None:
        if self.result is not None:
            self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
            self._build()

    def action_filter(self) -> None:
        box = self.query_one("#op-filter", Input)
        box.value = self.needle
        box.add_class("visible")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "op-filter":
            return
        event.stop()
        event.input.remove_class("visible")
        self.needle = event.value.strip()
        self._build()
        self.op_tree.focus()

    def action_clear_filter(self) -> None:
        box = self.query("#op-filter")
        if box and box.first().has_class("visible"):
            box.first().remove_class("visible")
            self.op_tree.focus()
        elif self.needle:
            self.needle = ""
            self._build()
        else:
            tools_app(self).go_back()

    def action_children(self, delta: int) -> None:
        if self.result is not None:
            step = 5 if self.children_shown >= 5 else 1
            self.children_shown = max(1, self.children_shown + delta * step)
            self._build()

    def graph_target(self):
        node = self.op_tree.cursor_node
        n: Node | None = node.data if node is not None else None
        if n is None:
            return None
        if not n.is_op:
            return f"{display_name(n)} groups ops: pick one op for its graph"
        return n.name, n.program_id or None

    def trace_target(self):
        node = self.op_tree.cursor_node
        n: Node | None = node.data if node is not None else None
        if node is None or n is None:
            return None
        if n.name == "IDLE":
            return "IDLE is time without ops: it has no events to show"
        if node is self.op_tree.root:
            return "the root holds every op: pick a program, a category or an op"
        if node.parent is self.op_tree.root and self.grouping == "program" and not n.is_op:
            name = n.name
            return f"program {name}", lambda frame: program_rows(frame, name)
        ops = op_nodes(n)
        if not ops:
            return f"{display_name(n)} has no ops"
        names = {o.name for o in ops}
        programs = {o.program_id for o in ops}
        program = programs.pop() if len(programs) == 1 and self.grouping == "program" else None
        label = display_name(n) if len(names) > 1 else next(iter(names))
        return label, lambda frame: hlo_op_rows(frame, names, program or None)

"""Graph viewer: an XLA module's HLO text (folded per computation, coloured, searchable) and the
neighbourhood of one instruction (its operands and users to depth N, fusion bodies included).

Text view: the module as XProf's `long_txt` prints it; computations fold (Space / Enter on the
header), the entry is open. Enter on an instruction opens its neighbourhood; `/` searches names
and text, `n` / `N` next and previous match. Graph view: the instructions within N edges, nearest
first; Enter follows the edge to the highlighted instruction, Esc goes back, `+` / `-` change N,
`j` jumps to a fusion's (or call's) body in the text. Both: `l` switches between text and graph,
`m` module, `v` the instruction's events in the trace viewer, `x` CSV.
"""
from __future__ import annotations

import re

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Input, Static, Tree

from tputui import format as fmt
from tputui.analysis.graph_viewer import GraphViewerResult
from tputui.analysis.hlo_ops import module_program_id
from tputui.analysis.op_events import hlo_op_rows
from tputui.errors import UserError
from tputui.screens.app_api import tools_app
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin, ResultKeysMixin, TraceJumpMixin
from tputui.screens.pickers import PickerScreen
from tputui.widgets.key_tree import KeyTree
from tputui.widgets.legible import readable_style, theme_colour
from tputui.widgets.table import FrameTable

_TOKEN = re.compile(r"(?P<root>^\s*ROOT )|(?P<entry>^ENTRY )|(?P<name>%[\w.\-]+)|(?P<shape>\b(?:pred|[suf]\d+|bf16|"
                    r"f8\w*|c64|c128|token)\[[^\]]*\](?:\{[^}]*\})?)|(?P<attr>\b[a-z_]+=)|(?P<opcode> [a-z][a-z\-]*(?=\())")
# Hues for the HLO syntax; hlo_palette() makes each readable (4.5:1) on the theme's background.
_STYLES = {"root": "bold #c020c0", "entry": "bold #c020c0", "name": "bold #20a0c0", "shape": "#30a030",
           "attr": "#909090", "opcode": "bold #c0a000"}


def hlo_palette(background: tuple[int, int, int] | None) -> dict[str, str]:
    """The syntax styles, each colour nudged to text contrast on `background` (None: as they are)."""
    if background is None:
        return dict(_STYLES)
    return {kind: readable_style(style, background) for kind, style in _STYLES.items()}


def hlo_line(text: str, palette: dict[str, str] | None = None) -> Text:
    """One HLO line with its names, shapes, opcode and attribute keys coloured."""
    styles = palette or _STYLES
    out = Text(text, no_wrap=True, overflow="ellipsis")
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind:
            out.stylize(styles[kind], m.start(), m.end())
    return out


class NeighbourhoodTable(FrameTable):
    """The graph view's table: Esc clears a filter, else goes back to the previous instruction."""

    BINDINGS = [Binding("escape", "back", "Back", id="graph.table_back",
                        tooltip="clear the filter, else back to the previous instruction")]

    def action_back(self) -> None:
        if self.filter_text:
            self.set_filter("")
        else:
            screen = self.screen
            if isinstance(screen, GraphViewerScreen):
                screen.action_back()


class GraphViewerScreen(
        ResultKeysMixin,
        TraceJumpMixin[GraphViewerResult],
        CsvExportMixin[GraphViewerResult],
        ToolScreen[GraphViewerResult]):
    help_notes = ("The text is XLA's HLO exactly as XProf's graph viewer prints it (long_txt). Enter on an "
                  "instruction shows what feeds it and what it feeds; in that view Enter follows an edge, Esc "
                  "goes back. [b]v[/b] opens the trace viewer on the instruction's events.")
    BINDINGS = [
        Binding("m", "pick_module", "Module", id="graph.module", tooltip="pick the HLO module (program)"),
        Binding("l", "toggle_view", "Text / graph", id="graph.view",
                tooltip="switch between the module text and the highlighted instruction's neighbourhood"),
        Binding("slash", "search", "Search", id="graph.search", tooltip="search instruction names and text"),
        Binding("n", "next_match(1)", "Next match", show=False, id="graph.next", tooltip="next search match"),
        Binding("N", "next_match(-1)", "Previous match", show=False, id="graph.prev",
                tooltip="previous search match"),
        Binding("plus,equals_sign", "depth(1)", "Deeper", id="graph.deeper",
                tooltip="graph view: one more edge around the instruction"),
        Binding("minus", "depth(-1)", "Shallower", id="graph.shallower",
                tooltip="graph view: one edge less around the instruction"),
        Binding("j", "body", "Body", id="graph.body",
                tooltip="show the highlighted fusion's / call's called computation in the text"),
        Binding("escape", "back", "Back", id="graph.back",
                tooltip="graph view: back to the previous instruction (first clears a table filter)"),
        Binding("v", "show_in_trace", "Show in trace", id="graph.trace",
                tooltip="open the trace viewer on the highlighted instruction's events"),
        Binding("x", "export_csv", "CSV", id="graph.csv", tooltip=CSV_TIP),
    ]
    RESULT_ACTIONS = frozenset({"pick_module", "toggle_view", "search", "next_match", "depth", "body", "back",
                                "show_in_trace", "export_csv"})
    DEFAULT_CSS = """
    GraphViewerScreen #gv-head { height: auto; padding: 0 1; }
    GraphViewerScreen Tree { height: 1fr; border: round $foreground 55%; }
    GraphViewerScreen #gv-center { height: auto; max-height: 4; padding: 0 1; }
    GraphViewerScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    GraphViewerScreen #gv-line { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    GraphViewerScreen #gv-search { dock: bottom; display: none; }
    GraphViewerScreen #gv-search.visible { display: block; }
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.history: list[str] = []
        self.matches: list[str] = []
        self.match_at = -1
        self.graph: GraphViewerResult | None = None

    # --- drawing ---------------------------------------------------------------------
    palette: dict[str, str] | None = None  # the HLO syntax styles for the current theme

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._recolour)

    def _recolour(self, _theme: object = None) -> None:
        """The syntax colours for the theme now shown (readable on its trees' $surface)."""
        self.palette = hlo_palette(theme_colour(self.app, "surface"))
        tree = getattr(self, "hlo_tree", None)
        if tree is None:
            return
        stack = list(tree.root.children)
        while stack:
            node = stack.pop()
            node.set_label(hlo_line(node.label.plain, self.palette))
            stack.extend(node.children)

    def show(self, result: GraphViewerResult) -> None:
        self.palette = hlo_palette(theme_colour(self.app, "surface"))  # the tree is drawn on $surface
        self.body.mount(Static("", id="gv-head"))
        self.hlo_tree: Tree = KeyTree(result.module, id="gv-text")
        self.hlo_tree.show_root = False
        self.hlo_tree.guide_depth = 2
        self._comp_nodes = {}
        for row in result.computations.iter_rows(named=True):
            first = result.text.splitlines()[row["first_line"]]
            node = self.hlo_tree.root.add(hlo_line(first, self.palette), data=("computation", row["name"]),
                                      expand=False, allow_expand=True)
            self._comp_nodes[row["name"]] = node
            if row["kind"] == "entry":
                self._fill(node)
                node.expand()
                self._entry = node
        self.body.mount(self.hlo_tree)
        self.body.mount(Static("", id="gv-center"))
        self.table = NeighbourhoodTable(id="gv-hood")
        self.body.mount(self.table)
        self.body.mount(Static("", id="gv-line"))
        self.body.mount(Input(placeholder="search instruction names and HLO text (Enter)", id="gv-search"))
        self.graph = result if result.hood is not None else None
        if self.graph is not None:
            self._show_graph()
        else:
            self._show_text()
        self.refresh_bindings()

    def _fill(self, node) -> None:
        """Add a computation's instruction lines (on first unfold: big modules stay quick)."""
        if node.children:
            return
        r = self.loaded
        name = node.data[1]
        rows = r.instructions.filter(r.instructions["computation"] == name)
        lines = r.text.splitlines()
        for ins, line in zip(rows["name"].to_list(), rows["line"].to_list()):
            node.add_leaf(hlo_line(lines[line].strip(), self.palette), data=("instruction", ins))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        if event.node.data and event.node.data[0] == "computation":
            self._fill(event.node)

    def _head(self, text: Text) -> None:
        for w in self.query("#gv-head").results(Static):
            w.update(text)

    def _show_text(self) -> None:
        r = self.loaded
        self.hlo_tree.display = True
        self.query_one("#gv-center").display = False
        self.table.display = False
        n_ins = r.instructions.height
        self._head(Text.assemble(("Module ", "dim"), (r.module, "bold"),
                                 (f"  {len(r.computations)} computations, {n_ins:,} instructions", "dim"),
                                 (f"  ({len(r.modules)} modules: m)" if len(r.modules) > 1 else "", "dim")))
        self.hlo_tree.border_title = "HLO text · Space fold · Enter neighbourhood · / search · j body · l graph · v trace"
        self.hlo_tree.focus()
        entry = getattr(self, "_entry", None)
        if entry is not None and self.hlo_tree.cursor_line <= 0:  # start at the entry computation
            self.call_after_refresh(self._start_at, entry)
        self._show_line(self._tree_instruction())

    def _start_at(self, node) -> None:
        _ = self.hlo_tree.last_line  # lays the tree's lines out (after a slow load they may not be yet): node.line
        self.hlo_tree.move_cursor(node)
        self.hlo_tree.scroll_to_node(node, animate=False)

    def _show_graph(self) -> None:
        g = self.graph
        assert g is not None and g.node is not None
        self.hlo_tree.display = False
        center = self.query_one("#gv-center", Static)
        center.display = True
        self.table.display = True
        row = g.instruction(g.node) or {}
        center.update(Text.assemble(
            ("neighbourhood of ", "dim"), (g.node, "bold"), (f"  depth {g.depth} (+/-)", "dim"),
            ("  in ", "dim"), (row.get("computation", ""), ""),
            ("\n", ""), hlo_line(row.get("text", ""), self.palette),
            ("\noperands ", "dim"), (", ".join(row.get("operands", [])) or "-", ""),
            ("   users ", "dim"), (", ".join(row.get("users", [])) or "-", "")))
        frame = g.neighbourhood_frame()
        self.table.set_frame(frame)
        self.table.border_title = (f"{frame.height} instructions within {g.depth} edges, nearest first · "
                                   "Enter follow · Esc back · v trace · x CSV")
        self._head(Text.assemble(("Module ", "dim"), (g.module, "bold"), ("  graph view (l: text)", "dim"),
                                 (f"  back: {len(self.history)}" if self.history else "", "dim")))
        self.table.focus()
        self._show_line(g.node)

    def _show_line(self, name: str | None) -> None:
        r = self.graph or self.loaded
        row = r.instruction(name) if name else None
        text = Text("")
        if row is not None:
            text = Text.assemble((row["name"], "bold"), ("  ", ""), (row["opcode"], "yellow"), ("  ", ""),
                                 (row["shape"], "green"),
                                 ("   calls ", "dim") if row["called"] else ("", ""), (", ".join(row["called"]), ""),
                                 (f"   {len(row['operands'])} operands, {len(row['users'])} users", "dim"))
        for w in self.query("#gv-line").results(Static):
            w.update(text)

    # --- selection -----------------------------------------------------------------------
    def _tree_instruction(self) -> str | None:
        node = self.hlo_tree.cursor_node if self.hlo_tree.display else None
        if node is not None and node.data and node.data[0] == "instruction":
            return node.data[1]
        return None

    def selected(self) -> str | None:
        """The instruction the keys act on: the tree's line or the graph table's row."""
        if self.result is None:
            return None
        if self.hlo_tree.display:
            return self._tree_instruction()
        row = self.table.row()
        return row["name"] if row else (self.graph.node if self.graph else None)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        self._show_line(self._tree_instruction())

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        data = event.node.data
        if data and data[0] == "instruction":
            self._open_graph(data[1])

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._show_line(event.row["name"] if event.row else None)

    def on_frame_table_row_selected(self, event: FrameTable.RowSelected) -> None:
        event.stop()
        event.prevent_default()  # Enter follows the edge here, not the mixin's "show in trace"
        if event.row and self.graph and self.graph.node is not None and event.row["name"] != self.graph.node:
            self.history.append(self.graph.node)
            self._open_graph(event.row["name"], keep_history=True)

    def _open_graph(self, name: str, depth: int | None = None, keep_history: bool = False) -> None:
        base = self.graph or self.loaded
        if not keep_history and self.graph is None:
            self.history = []
        try:
            self.graph = base.around(name, depth)
        except UserError as e:  # no such instruction
            self.notify(str(e), severity="warning")
            return
        self._show_graph()

    # --- actions -------------------------------------------------------------------------
    def action_toggle_view(self) -> None:
        if self.hlo_tree.display:
            name = self.selected()
            if name is None:
                self.notify("highlight an instruction (unfold a computation) first", severity="warning")
                return
            self._open_graph(name)
        else:
            self.reveal(self.selected())

    def reveal(self, name: str | None) -> None:
        """Back to the text with `name`'s line highlighted (its computation unfolded)."""
        self.graph = None
        self.history = []
        self._show_text()
        r = self.loaded
        row = r.instruction(name) if name else None
        if row is None:
            return
        node = self._comp_nodes.get(row["computation"])
        if node is None:
            return
        self._fill(node)
        node.expand()
        for leaf in node.children:
            if leaf.data == ("instruction", name):
                self.call_after_refresh(self.hlo_tree.move_cursor, leaf)
                break

    def action_back(self) -> None:
        box = self.query("#gv-search")
        if box and box.first().has_class("visible"):
            box.first().remove_class("visible")
            (self.hlo_tree if self.hlo_tree.display else self.table).focus()
            return
        if self.graph is None:  # the text view: back to the screen before this one
            tools_app(self).go_back()
            return
        if self.history:
            self._open_graph(self.history.pop(), keep_history=True)
        else:
            self.reveal(self.graph.node)

    def action_depth(self, delta: int) -> None:
        if self.graph is not None and self.graph.node is not None:
            self._open_graph(self.graph.node, self.graph.depth + delta, keep_history=True)

    def action_body(self) -> None:
        name = self.selected()
        row = self.loaded.instruction(name) if name else None
        if not row or not row["called"]:
            self.notify("the highlighted instruction calls no computation", severity="warning")
            return
        r = self.loaded
        comp = row["called"][0]
        first = r.instructions.filter(r.instructions["computation"] == comp)
        target = first["name"][-1] if first.height else None  # the body's last line: its ROOT
        self.reveal(target)

    def action_search(self) -> None:
        box = self.query_one("#gv-search", Input)
        box.add_class("visible")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "gv-search":
            return
        event.input.remove_class("visible")
        needle = event.value.strip().lower()
        r = self.loaded
        lines = r.text.splitlines()
        self.matches = [n for n, ln in zip(r.instructions["name"].to_list(), r.instructions["line"].to_list())
                        if needle and needle in lines[ln].lower()]
        self.match_at = -1
        if not self.matches:
            self.notify(f"no instruction matches {event.value!r}", severity="warning")
            (self.hlo_tree if self.hlo_tree.display else self.table).focus()
            return
        self.action_next_match(1)

    def action_next_match(self, step: int) -> None:
        if not self.matches:
            return
        self.match_at = (self.match_at + step) % len(self.matches)
        self.reveal(self.matches[self.match_at])
        self.notify(f"match {self.match_at + 1} of {len(self.matches)}", timeout=2)

    def action_pick_module(self) -> None:
        ranked = self.loaded.modules_by_time()
        width = max(len(m) for m, _ in ranked)
        choices = [(m, f"{m:<{width}}  {fmt.duration_ps(v) if v else 'time n/a'}") for m, v in ranked]
        self.app.push_screen(PickerScreen("HLO module", choices, self.loaded.module, note="longest-running first"),
                             self._module_picked)

    def _module_picked(self, module: str | None) -> None:
        if module and module != self.loaded.module:
            self.options = {**self.options, "module": module, "node": None}
            self.graph, self.history = None, []
            self.load()

    def trace_target(self):
        name = self.selected()
        if name is None:
            return None
        program = module_program_id(self.loaded.module)
        return name, lambda frame: hlo_op_rows(frame, [name], program)

    def export_frame(self):
        if self.result is None:
            return None
        return self.graph.neighbourhood_frame() if self.graph is not None else self.result.instructions

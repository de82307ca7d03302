"""`G` on an op row opens the graph viewer on that HLO instruction's neighbourhood.

Screens with op rows (op profile, HLO stats, roofline, memory viewer, megascale) mix this in and
implement `graph_target() -> (instruction, program_id | None) | str | None`; a string says why the
row has no single instruction. Without a program id the graph viewer takes the module holding the
instruction.
"""
from __future__ import annotations

from textual.binding import Binding

from tputui.screens.app_api import tools_app
from tputui.screens.base import R, ToolScreen
from tputui.screens.op_tables import usable_target

GRAPH_TIP = "open the graph viewer on the highlighted op: what feeds it, what it feeds (Esc there goes back)"


def graph_binding(screen_id: str) -> Binding:
    return Binding("G", "show_in_graph", "Graph", id=f"{screen_id}.graph", tooltip=GRAPH_TIP)


GraphTarget = tuple[str, "int | str | None"]  # (instruction name, program id or module name)


class GraphJumpMixin(ToolScreen[R]):
    def graph_target(self) -> GraphTarget | str | None:  # pragma: no cover - screens override
        return None

    def action_show_in_graph(self) -> None:
        if getattr(self, "result", None) is None:
            return
        target = usable_target(self, self.graph_target())
        if target is not None:
            name, program = target
            tools_app(self).open_tool("graph_viewer", module=str(program) if program else None, node=name)

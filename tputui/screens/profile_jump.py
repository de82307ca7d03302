"""`P` on an op row opens the op profile with that HLO op selected.

Screens with op rows mix this in and implement `profile_target() -> (op name,) | str | None`;
a string says why the row has no single op (None: no row). The op profile filters its tree to
the name (Esc there clears the filter, Esc again goes back) and puts the cursor on the op, whose
card reads its time, FLOPS and bandwidth utilization.
"""
from __future__ import annotations

from textual.binding import Binding

from tputui.screens.app_api import tools_app
from tputui.screens.base import R, ToolScreen
from tputui.screens.op_tables import usable_target

PROFILE_TIP = "open the op profile on the highlighted op: its time, FLOPS and bandwidth (Esc there goes back)"


def profile_binding(screen_id: str) -> Binding:
    return Binding("P", "show_in_op_profile", "Op profile", id=f"{screen_id}.op_profile", tooltip=PROFILE_TIP)


class OpProfileJumpMixin(ToolScreen[R]):
    def profile_target(self) -> tuple[str] | str | None:  # pragma: no cover - screens override
        return None

    def action_show_in_op_profile(self) -> None:
        if getattr(self, "result", None) is None:
            return
        target = usable_target(self, self.profile_target())
        if target is not None:
            tools_app(self).open_tool("op_profile", select=target[0])

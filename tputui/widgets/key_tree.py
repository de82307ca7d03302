"""A Tree whose arrows fold as in every file manager: → expands (then goes to the first child),
← collapses (then goes to the parent)."""
from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Tree


class KeyTree(Tree):
    BINDINGS = [
        Binding("right", "expand_or_down", "Expand", show=False, tooltip="expand the node (again: its first child)"),
        Binding("left", "collapse_or_up", "Collapse", show=False, tooltip="collapse the node (again: its parent)"),
    ]

    def action_expand_or_down(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and not node.is_expanded:
            node.expand()
        elif node.children:
            self.move_cursor(node.children[0])

    def action_collapse_or_up(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None and (node.parent is not self.root or self.show_root):
            self.move_cursor(node.parent)

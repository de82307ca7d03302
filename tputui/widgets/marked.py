"""Check boxes, radio buttons and selection lists whose state reads without colour: `[x]` / `[ ]`
and `(•)` / `( )` (Textual's own draw the same glyph on and off, in two colours)."""
from __future__ import annotations

from typing import Generic

from rich.segment import Segment
from rich.style import Style
from textual.content import Content
from textual.strip import Strip
from textual.widgets import Checkbox, RadioButton, SelectionList
from textual.widgets._selection_list import SelectionType
from textual.widgets._toggle_button import ToggleButton


class MarkedCheckbox(Checkbox):
    @property
    def _button(self) -> Content:
        return Content.assemble(("[x]" if self.value else "[ ]", self.get_visual_style("toggle--label")))


class MarkedRadioButton(RadioButton):
    @property
    def _button(self) -> Content:
        return Content.assemble(("(•)" if self.value else "( )", self.get_visual_style("toggle--label")))


class MarkedSelectionList(SelectionList[SelectionType], Generic[SelectionType]):
    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        segments = list(strip)
        if len(segments) < 4 or segments[1].text != ToggleButton.BUTTON_INNER:
            return strip
        try:
            on = self.get_option_at_index(self.scroll_offset.y + y).value in self._selected
        except Exception:  # noqa: BLE001 - no option on this line: Textual's line as it is
            return strip
        text_style = segments[3].style or Style()
        marks = ("[", "x" if on else " ", "]")
        # The prompt's own style, with the button's click target (meta) kept.
        segments[:3] = [Segment(m, text_style + Style(meta=seg.style.meta if seg.style else None))
                        for m, seg in zip(marks, segments[:3])]
        return Strip(segments, strip.cell_length)

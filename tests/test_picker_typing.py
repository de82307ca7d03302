"""Typing into a picker: keys that reach the list before the focus has moved to the filter still
land in the filter, spaces too once a filter is begun ("memory prof" typed fast, or pasted)."""
from __future__ import annotations

from textual.app import App
from textual.widgets import Input, OptionList

from tputui.screens.pickers import PickerScreen


async def test_a_space_typed_at_the_list_goes_to_a_begun_filter():
    picked: list[str | None] = []
    choices = [("memory_profile", "Memory profile"), ("memory_viewer", "Memory viewer"), ("op_profile", "Op profile")]

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(PickerScreen("Tool", choices), picked.append)

    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        await pilot.press("space")  # no filter yet: a space is the list's, not the filter's
        assert screen.query_one(Input).value == ""
        await pilot.press(*"memory")
        screen.query_one(OptionList).focus()  # as when keys arrive before the focus has moved
        await pilot.pause()
        await pilot.press("space", "p", "r")
        assert screen.query_one(Input).value == "memory pr"
        await pilot.press("enter")
        await pilot.pause()
    assert picked == ["memory_profile"]

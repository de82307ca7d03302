"""What the screens pushed over a tool screen share (the SQL prompt, the diff): Esc goes back, their
table lets Esc through when it has no filter to clear, `x` writes the table as shown to CSV, and a
worker's result comes back as a message (as ToolScreen's do: Textual drops messages to a screen
that has closed, so a late worker never draws into a screen nobody sees; screens/load_messages.py)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Generic

from textual.actions import SkipAction
from textual.screen import Screen

from tputui.data.progress import reporting
from tputui.screens.base import R
from tputui.screens.load_messages import Loaded, LoadFailed, LoadProgress, answer
from tputui.screens.op_tables import write_csv
from tputui.widgets.table import FrameTable


class BackTable(FrameTable):
    """A FrameTable whose Esc clears its filter, or (no filter) goes on to the screen's Esc."""

    def action_clear_filter(self) -> None:
        if not self.filter_text:
            raise SkipAction()
        super().action_clear_filter()


class StackedScreen(Screen[None], Generic[R]):
    """`back` pops this screen (never the app's last tool screen); `export_table_csv(table, name)`;
    `report(compute)` (in a worker thread) runs `compute(progress)` and answers with a message:
    `show_result(result)`, `show_failure(one line)` and `show_progress(text)` draw them."""

    def report(self, compute: Callable[[Callable[[str], None]], R]) -> None:
        """In a worker thread: `compute(progress)`, answered as ToolScreen's load is."""
        def run(progress: Callable[[str], None]) -> R:
            with reporting(progress):  # slow reads and decodes say so too
                return compute(progress)

        answer(self, run)

    async def on_loaded(self, event: Loaded[R]) -> None:
        await self.show_result(event.result)

    async def on_load_failed(self, event: LoadFailed) -> None:
        await self.show_failure(event.text)

    def on_load_progress(self, event: LoadProgress) -> None:
        self.show_progress(event.text)

    async def show_result(self, result: R) -> None:  # pragma: no cover - subclasses draw
        raise NotImplementedError

    async def show_failure(self, text: str) -> None:  # pragma: no cover - subclasses draw
        raise NotImplementedError

    def show_progress(self, text: str) -> None:
        pass

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def export_table_csv(self, table: FrameTable, name: str) -> None:
        frame = table.frame
        try:
            path = write_csv(frame, name)
        except OSError as e:
            self.notify(f"CSV export failed: {e}", severity="error")
            return
        self.notify(f"wrote {frame.height:,} rows to {path}", title="CSV export")

"""What the screens pushed over a tool screen share (the SQL prompt, the diff): Esc goes back, their
table lets Esc through when it has no filter to clear, `x` writes the table as shown to CSV, and a
worker's result comes back as a message (as ToolScreen's do: Textual drops messages to a screen
that has closed, so a late worker never draws into a screen nobody sees)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.actions import SkipAction
from textual.message import Message
from textual.screen import Screen
from textual.worker import get_current_worker

from tputui.data.progress import reporting
from tputui.errors import UserError
from tputui.screens.op_tables import write_csv
from tputui.widgets.table import FrameTable


class BackTable(FrameTable):
    """A FrameTable whose Esc clears its filter, or (no filter) goes on to the screen's Esc."""

    def action_clear_filter(self) -> None:
        if not self.filter_text:
            raise SkipAction()
        super().action_clear_filter()


class StackedScreen(Screen):
    """`back` pops this screen (never the app's last tool screen); `export_table_csv(table, name)`;
    `report(compute)` (in a worker thread) runs `compute(progress)` and answers with a message:
    `show_result(result)`, `show_failure(one line)` and `show_progress(text)` draw them."""

    class Reported(Message, bubble=False):
        def __init__(self, result: Any) -> None:
            super().__init__()
            self.result = result

    class ReportFailed(Message, bubble=False):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class ReportProgress(Message, bubble=False):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def report(self, compute: Callable[[Callable[[str], None]], Any]) -> None:
        worker = get_current_worker()

        def say(message: Message) -> None:
            if not worker.is_cancelled:  # a newer run of the same worker speaks now
                self.post_message(message)

        def progress(text: str) -> None:
            say(self.ReportProgress(text))

        try:
            with reporting(progress):  # slow reads and decodes say so too
                result = compute(progress)
        except UserError as e:
            say(self.ReportFailed(str(e)))
        except Exception as e:  # noqa: BLE001 - one line on the screen, the app keeps running
            say(self.ReportFailed(f"{type(e).__name__}: {e}"))
        else:
            say(self.Reported(result))

    async def on_stacked_screen_reported(self, event: Reported) -> None:
        await self.show_result(event.result)

    async def on_stacked_screen_report_failed(self, event: ReportFailed) -> None:
        await self.show_failure(event.text)

    def on_stacked_screen_report_progress(self, event: ReportProgress) -> None:
        self.show_progress(event.text)

    async def show_result(self, result: Any) -> None:  # pragma: no cover - subclasses draw
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

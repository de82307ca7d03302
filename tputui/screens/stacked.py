"""What the screens pushed over a tool screen share (the SQL prompt, the diff): Esc goes back, and
their table lets Esc through when it has no filter to clear; `x` writes the table as shown to CSV."""
from __future__ import annotations

from textual.actions import SkipAction
from textual.screen import Screen

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
    `report(compute, done, failed)` runs `compute` (in a worker thread) and hands the UI thread its
    result, or one line that says what went wrong."""

    def report(self, compute, done, failed) -> None:
        try:
            result = compute()
        except UserError as e:
            self.app.call_from_thread(failed, str(e))
            return
        except Exception as e:  # noqa: BLE001 - one line on the screen, the app keeps running
            self.app.call_from_thread(failed, f"{type(e).__name__}: {e}")
            return
        self.app.call_from_thread(done, result)

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

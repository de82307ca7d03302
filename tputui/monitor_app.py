"""`tputui monitor`'s app: the monitor pane on its own, and the way to a full profile and back.

App layer (beside app.py): it opens the profile app when the user presses `o`, which a screen
must not import. The command line (cli.py) builds the feed and calls `run_monitor_app`.
"""
from __future__ import annotations

from textual.app import App
from textual.binding import Binding

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.live.feed import LiveFeed
from tputui.live.monitor_state import MonitorState
from tputui.screens.help import HelpScreen
from tputui.screens.monitor import MonitorScreen
from tputui.signals import exiting_app, say


class MonitorApp(App):
    """The pane; `open_logdir` is set when the user opened a window."""

    TITLE = "tputui monitor"
    CSS_PATH = "tputui.tcss"
    # Ctrl+C quits, as in the profile app (Textual's default only says how to quit).
    BINDINGS = [Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="app.quit_ctrl_c")]

    def __init__(self, screen: MonitorScreen) -> None:
        super().__init__()
        self.monitor_screen = screen
        self.open_logdir: str | None = None

    def on_mount(self) -> None:
        self.push_screen(self.monitor_screen)

    def on_monitor_screen_open_window(self, event: MonitorScreen.OpenWindow) -> None:
        self.open_logdir = event.logdir
        self.exit()

    def action_help(self) -> None:
        lines = [("o", "save the focused worker's last window as a run and open it as a full profile "
                       "(q returns here)"),
                 ("w", "focus the next worker (its figures and top ops)"),
                 ("p", "pause / resume"), ("q", "quit")]
        self.push_screen(HelpScreen(lines, "Monitor"))


def run_monitor_app(feed: LiveFeed, window_ms: int, num_queries: int | None = None,
                    save_windows: str | None = None) -> int:
    """Run the pane; `o` leaves it for the full profile app and comes back when that quits.

    However the pane ends (q, Ctrl+C, SIGTERM, SIGHUP, an error), the feed is stopped and its
    windows in flight are ended on their servers before this returns (LiveFeed.wait_ended)."""
    state = MonitorState(feed.addresses, runtime=feed.poller is not None)
    while True:
        screen = MonitorScreen(lambda: feed.items(num_queries), addresses=feed.addresses, window_ms=window_ms,
                               state=state, feed=feed, windows_dir=save_windows)
        app = MonitorApp(screen)
        def end_windows() -> None:  # if the app hangs after a signal: end the windows, then exit
            feed.stop()
            feed.wait_ended()

        try:
            with exiting_app(app, end_windows):
                app.run()
        finally:
            feed.stop()
            feed.wait_ended(say=lambda m: say(f"tputui: {m}"))
        if app.open_logdir is None:
            return app.return_code or 0
        profile_app = TputuiApp(open_logdir(app.open_logdir))
        with exiting_app(profile_app, end_windows):
            profile_app.run()
        if profile_app.return_code:  # ended by a signal there: end here too
            return profile_app.return_code

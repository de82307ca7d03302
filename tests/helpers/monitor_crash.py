"""`tputui monitor ARGS` whose pane fails on its first window (as a bug in drawing would): the
exception exit path of tests/test_live_exit_paths.py. Windows run back to back, so the next one
is in flight on the server when the app goes down."""
import sys

from tputui import cli
from tputui.screens.monitor import MonitorScreen


def fail(self, item):
    raise RuntimeError("injected failure in the monitor pane")


MonitorScreen.add_item = fail
sys.exit(cli.main(["monitor", *sys.argv[1:]]))

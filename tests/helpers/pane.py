"""Shared by the monitor pane tests: local time pinned to UTC (timestamps are drawn in local
time), a Static's content as plain text, and waiting until the feed worker is done."""
from __future__ import annotations

import time

import pytest


@pytest.fixture
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def drawn(widget) -> str:
    """What a Static shows, as plain text (its rich content rendered at its width)."""
    from rich.console import Console

    with open("/dev/null", "w") as sink:
        console = Console(width=max(40, widget.size.width), record=True, file=sink)
        console.print(widget.content)
        return console.export_text()


async def settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()

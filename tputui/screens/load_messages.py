"""How a screen's worker answers the screen: progress lines, then the result or one failure line.

Every screen that computes in a worker (ToolScreen's load, the stacked SQL and diff screens) runs
`answer(screen, compute)` in the worker thread and handles the three messages: `on_load_progress`,
`on_loaded`, `on_load_failed`. Messages, not calls from the thread: Textual drops messages to a
screen that has closed, so a late worker never draws into (or notifies from) a screen nobody sees,
and a worker cancelled by a newer one (a reload) says nothing more.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import get_current_worker

from tputui.analysis.result import NoDataError
from tputui.errors import UserError

R = TypeVar("R")


class LoadProgress(Message, bubble=False):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class Loaded(Message, Generic[R], bubble=False):
    def __init__(self, result: R) -> None:
        super().__init__()
        self.result: R = result


class LoadFailed(Message, bubble=False):
    """`no_data`: the profile has nothing for this (not a failure; said calmly)."""

    def __init__(self, text: str, no_data: bool = False) -> None:
        super().__init__()
        self.text, self.no_data = text, no_data


def answer(screen: MessagePump, compute: Callable[[Callable[[str], None]], R]) -> None:
    """In a worker thread: `compute(progress)`, its progress, result or error posted to `screen`."""
    worker = get_current_worker()

    def say(message: Message) -> None:
        if not worker.is_cancelled:  # a newer run of the same worker speaks now
            screen.post_message(message)

    try:
        result = compute(lambda text: say(LoadProgress(text)))
    except NoDataError as e:
        say(LoadFailed(str(e), no_data=True))
    except UserError as e:
        say(LoadFailed(str(e)))
    except Exception as e:  # noqa: BLE001 - one line on the screen, the app keeps running
        say(LoadFailed(f"{type(e).__name__}: {e}"))
    else:
        say(Loaded(result))

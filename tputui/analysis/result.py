"""What every analysis returns: a plain object export.py can write and a screen can draw."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from tputui.errors import UserError

if TYPE_CHECKING:  # a type only: screens import NoDataError for their first frame, before Polars
    import polars as pl


class ToolResult(Protocol):
    def to_json(self) -> dict[str, Any]:
        """The JSON document `tputui export --format json` writes (the stable schema)."""

    def tables(self) -> dict[str, pl.DataFrame]:
        """Named tables for `--format csv` (the first is the default)."""


class TextResult(ToolResult, Protocol):
    """A result that also writes plain-text formats (e.g. the graph viewer's text and dot)."""

    text_formats: tuple[str, ...]

    def render(self, fmt: str) -> str:
        """The result in one of `text_formats`."""


class NoDataError(UserError):
    """The profile has nothing for this tool; the message says why (one line)."""

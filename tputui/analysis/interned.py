"""Interned strings: each distinct string gets a dense int id, in the order first seen (the trace
viewer's event names and counter series names are kept as these ids, joined to text last)."""
from __future__ import annotations


class Interned:
    """strings -> dense int ids; `strings[i]` is the text of id i."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._index: dict[str, int] = {}

    def id(self, s: str) -> int:
        i = self._index.get(s)
        if i is None:
            i = self._index[s] = len(self.strings)
            self.strings.append(s)
        return i

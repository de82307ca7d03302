"""Interned strings: each distinct string gets a dense int id, in the order first seen. The
decoders keep str stat values so (`strings` of a RawXSpace; the C decoder fills `strings` and
`index` itself), and the trace viewer its event and counter series names, joined to text last."""
from __future__ import annotations


class Interned:
    """strings -> dense int ids; `strings[i]` is the text of id i, `index` the way back."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.index: dict[str, int] = {}

    def id(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.strings)
            self.strings.append(s)
        return i

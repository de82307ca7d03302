"""Results derived from one run's hosts, kept for this process (RunData.memo).

Each kind of result has a typed key, `MemoKind[T]`, declared by the module that computes it; a
value is kept per kind and per part (a host name, or None for every host). A reader gets back the
type its kind declares, so the cache holds no untyped tuple keys.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

V = TypeVar("V")


@dataclass(frozen=True)
class MemoKind(Generic[V]):
    """One kind of memoized result; V is the type of its values."""

    name: str


class RunMemo:
    """Kind x part -> value, safe to share between the app's worker threads."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, str | None], object] = {}
        self._lock = threading.Lock()

    def get(self, kind: MemoKind[V], part: str | None) -> V | None:
        with self._lock:
            return cast("V | None", self._values.get((kind.name, part)))

    def put(self, kind: MemoKind[V], part: str | None, value: V) -> V:
        """Keep `value` unless another thread kept one first; returns the kept one."""
        with self._lock:
            return cast(V, self._values.setdefault((kind.name, part), value))

    def get_or_make(self, kind: MemoKind[V], part: str | None, make: Callable[[], V]) -> V:
        """The kept value, else `make()` kept (computed outside the lock: a slow make does not
        hold up readers of other kinds)."""
        hit = self.get(kind, part)
        return hit if hit is not None else self.put(kind, part, make())

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

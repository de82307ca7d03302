# Types of the C extension tputui/data/_wire.c (the checker cannot read the built module).
from collections.abc import Sequence

import numpy as np
from typing_extensions import Buffer

def scan(buf: Buffer, /) -> tuple[list[tuple[int, int, bytes]], list[str], list[str], list[str]]: ...
def decode_planes(buf: Buffer, ranges: Sequence[tuple[int, int]], threads: int = 1, keep_ids: Buffer | None = None,
                  lines: bool = True, /) -> dict[str, Buffer]: ...  # writable
def count_lines(buf: Buffer, ranges: Sequence[tuple[int, int]], threads: int = 1, /) -> bytes: ...  # int64 rows of 6
def intern_strings(buf: Buffer, kind: np.ndarray, value: np.ndarray, lens: np.ndarray, str_kind: int, strings: list[str],
                   index: dict[str, int], /) -> None: ...  # value (int64, writable): str offsets -> rows in strings
def memory_pool(limit: int, /) -> int: ...  # pool released column mappings up to limit bytes (0: unmap them); bytes pooled before

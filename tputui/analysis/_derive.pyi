# Types of the C extension tputui/analysis/_derive.c (the checker cannot read the built module).
import numpy as np
from typing_extensions import Buffer

def std_sort(ranks: Buffer | np.ndarray, /) -> bytes: ...  # int64 positions in libstdc++ std::sort's order
def pair_offload(label: Buffer | np.ndarray, kind: Buffer | np.ndarray, start: Buffer | np.ndarray,
                 end: Buffer | np.ndarray, max_rows: int, /) -> bytes: ...  # int64 triples

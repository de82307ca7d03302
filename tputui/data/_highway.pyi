# Types of the optional C extension tputui/data/_highway.c (the checker cannot read the built module).
from typing_extensions import Buffer

def hash64(data: Buffer, /) -> int: ...  # HighwayHash-64 with Riegeli's key

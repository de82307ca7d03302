# Types of the C extension tputui/data/_columns.c (the checker cannot read the built module).
from typing_extensions import Buffer

# int32 rows
def lookup(keys_plane: Buffer, keys_id: Buffer, plane: Buffer, ids: Buffer, owner: Buffer | None = None, /) -> bytearray: ...
# int32 keys -> (int64 offsets, int32 order)
def group(keys: Buffer, n: int, /) -> tuple[bytearray, bytearray]: ...

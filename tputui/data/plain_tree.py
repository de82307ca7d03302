"""Plain data trees to bytes and back, with no pickle: reading one runs no code from the file.

A tree is made of None, bool, int, float, str, bytes, lists, tuples, sets, dicts (keys of any of
these kinds), numpy arrays and scalars (`.npy`, read with allow_pickle=False), polars DataFrames
and Series (Arrow IPC), enums and dataclasses. `encode` gives a JSON document and a list of
binary blobs; `decode` builds the tree again. Dataclasses and enums are named by module and
qualified name and found only among tputui's modules already imported (a name from the file
never imports anything); a dataclass is rebuilt field by field (no __init__ / __post_init__),
so a field added later with a default reads older trees, and a field the class no longer has
makes the tree unreadable (the caller computes it again).

JSON nodes: scalars as themselves, lists as arrays, everything else a one-key object:
{"t": [...]} tuple, {"s": [...]} set, {"fs": [...]} frozenset, {"d": [[k, v], ...]} dict,
{"b": i} bytes, {"nd": i} array, {"ns": i} numpy scalar (a 0-d array), {"df": i} DataFrame,
{"ser": i} Series, {"en": "module:Name", "v": value}, {"dc": "module:Name", "f": {...}}.
"""
from __future__ import annotations

import dataclasses
import enum
import io
import json
import sys
from typing import Any

import numpy as np
import polars as pl

_PLAIN = (type(None), bool, int, float, str)


def encode(value: Any) -> tuple[bytes, list[bytes]]:
    """(JSON document, blobs) of the tree `value`; TypeError on anything it cannot hold."""
    blobs: list[bytes] = []

    def blob(b: bytes) -> int:
        blobs.append(b)
        return len(blobs) - 1

    def npy(a: np.ndarray) -> bytes:
        if a.dtype.hasobject:
            raise TypeError("a numpy array of Python objects")
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        return buf.getvalue()

    def ipc(df: pl.DataFrame) -> bytes:
        buf = io.BytesIO()
        df.write_ipc(buf, compression="uncompressed")
        return buf.getvalue()

    def enc(v: Any) -> Any:
        t = type(v)
        if t in _PLAIN:
            return v
        if t is list:
            return [enc(x) for x in v]
        if t is tuple:
            return {"t": [enc(x) for x in v]}
        if t is dict:
            return {"d": [[enc(k), enc(x)] for k, x in v.items()]}
        if t is set or t is frozenset:
            return {"s" if t is set else "fs": [enc(x) for x in v]}
        if t is bytes:
            return {"b": blob(v)}
        if isinstance(v, np.ndarray) and t is np.ndarray:
            return {"nd": blob(npy(v))}
        if isinstance(v, np.generic):
            return {"ns": blob(npy(np.asarray(v)))}
        if t is pl.DataFrame:
            return {"df": blob(ipc(v))}
        if t is pl.Series:
            return {"ser": blob(ipc(v.to_frame()))}
        if isinstance(v, enum.Enum):
            return {"en": _name(t), "v": enc(v.value)}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return {"dc": _name(t), "f": {f.name: enc(getattr(v, f.name)) for f in dataclasses.fields(v)}}
        raise TypeError(f"cannot store a {t.__module__}.{t.__qualname__} in a plain tree")

    doc = json.dumps({"root": enc(value), "blobs": [len(b) for b in blobs]}, separators=(",", ":"))
    return doc.encode(), blobs


def _name(t: type) -> str:
    if not t.__module__.startswith("tputui.") or "<locals>" in t.__qualname__:
        raise TypeError(f"{t.__module__}.{t.__qualname__}: only tputui's module-level classes are stored")
    return f"{t.__module__}:{t.__qualname__}"


def _class(name: Any) -> type:
    """A tputui class by stored name, among modules already imported (never an import)."""
    if not isinstance(name, str):
        raise ValueError("a class name that is not a string")
    module, _, qual = name.partition(":")
    if not module.startswith("tputui.") or module not in sys.modules:
        raise ValueError(f"{name}: not a loaded tputui module")
    obj: Any = sys.modules[module]
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    if not isinstance(obj, type):
        raise ValueError(f"{name}: no such class")
    return obj


def blob_sizes(doc: bytes) -> list[int]:
    """The sizes of the blobs a document refers to, in order (to cut them from one buffer)."""
    sizes = json.loads(doc).get("blobs")
    if not isinstance(sizes, list) or not all(type(n) is int and n >= 0 for n in sizes):
        raise ValueError("blob sizes are not a list of sizes")
    return sizes


def decode(doc: bytes, blobs: list[bytes] | list[memoryview]) -> Any:
    """The tree of `encode`; ValueError (or another Exception) on anything not made by it."""
    top = json.loads(doc)
    if not isinstance(top, dict) or "root" not in top:
        raise ValueError("not a plain tree")

    def blob(i: Any) -> bytes | memoryview:
        if type(i) is not int or not 0 <= i < len(blobs):
            raise ValueError("a blob index out of range")
        return blobs[i]

    def npy(i: Any) -> np.ndarray:
        return np.load(io.BytesIO(blob(i)), allow_pickle=False)

    def ipc(i: Any) -> pl.DataFrame:
        try:
            return pl.read_ipc(io.BytesIO(blob(i)))
        except pl.exceptions.PanicException as e:  # a BaseException: bytes Arrow's reader chokes on
            raise ValueError(f"not an Arrow IPC file ({e})") from None

    def dec(v: Any) -> Any:
        if type(v) in _PLAIN:
            return v
        if type(v) is list:
            return [dec(x) for x in v]
        if type(v) is not dict or (len(v) != 1 and set(v) not in ({"en", "v"}, {"dc", "f"})):
            raise ValueError("not a plain tree node")
        if "t" in v:
            return tuple(dec(x) for x in v["t"])
        if "d" in v:
            return {dec(k): dec(x) for k, x in v["d"]}
        if "s" in v:
            return {dec(x) for x in v["s"]}
        if "fs" in v:
            return frozenset(dec(x) for x in v["fs"])
        if "b" in v:
            return bytes(blob(v["b"]))
        if "nd" in v:
            return npy(v["nd"])
        if "ns" in v:
            a = npy(v["ns"])
            if a.ndim != 0:
                raise ValueError("a numpy scalar that is not 0-d")
            return a[()]
        if "df" in v:
            return ipc(v["df"])
        if "ser" in v:
            df = ipc(v["ser"])
            if df.width != 1:
                raise ValueError("a series stored with other than one column")
            return df.to_series()
        if "en" in v:
            cls = _class(v["en"])
            if not issubclass(cls, enum.Enum):
                raise ValueError(f"{v['en']}: not an enum")
            return cls(dec(v["v"]))
        if "dc" in v:
            return _dataclass(_class(v["dc"]), v["f"], dec)
        raise ValueError("not a plain tree node")

    return dec(top["root"])


def _dataclass(cls: type, stored: Any, dec) -> Any:
    if not dataclasses.is_dataclass(cls) or type(stored) is not dict:
        raise ValueError(f"{cls.__qualname__}: not a dataclass")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if set(stored) - set(fields):
        raise ValueError(f"{cls.__qualname__}: stored fields it no longer has")
    obj = object.__new__(cls)
    for name, f in fields.items():
        if name in stored:
            value = dec(stored[name])
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            raise ValueError(f"{cls.__qualname__}.{name}: not stored and no default")
        object.__setattr__(obj, name, value)
    return obj

"""Headless export: any tool's result as JSON or CSV (for scripts, CI and our tests).

A result writes JSON through `write_json(fp)` when it has one (large documents such as the
trace stream out), else `to_json()` is dumped; CSV writes one of `tables()` (the first unless
`table` names another). A result listing `text_formats` (the graph viewer: text, dot) writes
those through `render(fmt)`.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Collection
from typing import IO, Any, cast

import polars as pl

from tputui import __version__
from tputui.analysis.result import TextResult, ToolResult
from tputui.data import entry_seal
from tputui.data.cache_folder import private_dir, publish, temp_prefix
from tputui.data.code_stamp import code_stamp
from tputui.data.logdir import Logdir
from tputui.data.run_data import RunData
from tputui.data.runs import path_bytes, shown
from tputui.data.storage import cache_root
from tputui.errors import UserError
from tputui.tools import TOOLS, get_tool, tools_with_data

FORMATS = ("json", "csv", "text", "dot")


class ExportError(UserError):
    """Bad export arguments (unknown tool, table or format): one line for the user."""


def _clean(obj: Any) -> Any:
    """JSON has no NaN/Infinity: write them as null, like XProf's tables do."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def indented_json(obj: Any) -> str:
    """json.dumps(obj, indent=1, default=str), byte for byte, with CPython's C encoder doing the
    rows: the indenting encoder is pure Python (a token at a time: 0.05 s of a 1.7 MB memory
    profile's ~0.8 s export). A dict or list of scalars is one C call whose item separator is the
    newline and indent itself (a scalar never holds a raw newline); what nests is walked here."""
    out: list[str] = []
    _indented(obj, 0, out)
    return "".join(out)


_SCALARS = (str, int, float, type(None))
_FLAT: dict[int, Any] = {}  # depth -> an encoder whose item separator indents to it
_ONE = json.JSONEncoder(default=str)


def _flat_encoder(item_separator: str):
    """The encoder json.dumps(separators=(item_separator, ": "), default=str) runs, made once
    (JSONEncoder.encode makes one per call: 4,000 timeline rows)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the same text from the Python encoder
        enc = json.JSONEncoder(default=str, separators=(item_separator, ": "))
        return lambda o, _level: enc.encode(o)
    return make(None, str, json.encoder.encode_basestring_ascii, None, ": ", item_separator, False, False, True)


def _indented(o: Any, depth: int, out: list[str]) -> None:
    if isinstance(o, (dict, list, tuple)):
        opening, closing = ("{", "}") if isinstance(o, dict) else ("[", "]")
        values = o.values() if isinstance(o, dict) else o
        if not o:
            out.append(opening + closing)
            return
        pad = "\n" + " " * (depth + 1)
        if all(isinstance(v, _SCALARS) for v in values):
            enc = _FLAT.get(depth)
            if enc is None:
                enc = _FLAT[depth] = _flat_encoder("," + pad)
            out.append(opening + pad + "".join(enc(o, 0))[1:-1] + pad[:-1] + closing)
            return
        out.append(opening)
        items = o.items() if isinstance(o, dict) else ((None, v) for v in o)
        for i, (k, v) in enumerate(items):
            out.append(("," + pad) if i else pad)
            if opening == "{":  # the key as the encoder writes it: '{"k": null}' less its '{' and ': null}'
                out.append(_ONE.encode({k: None})[1:-7] + ": ")
            _indented(v, depth + 1, out)
        out.append(pad[:-1] + closing)
    else:
        out.append(_ONE.encode(o))


def run_tool(run: RunData, tool: str, host: str | None = None, **options) -> ToolResult:
    try:
        t = get_tool(tool)
    except KeyError:
        raise ExportError(f"unknown tool {tool!r} (tools: {', '.join(t.name for t in TOOLS)})") from None
    accepted = t.option_names()
    for key in options:
        if key not in accepted:
            known = f" (its options: {', '.join(accepted)})" if accepted else ""
            raise ExportError(f"{tool} takes no option {key!r}{known}")
    return t.analyze_fn()(run, host, **options)


def write_result(result: ToolResult, fmt: str, out: IO[str], table: str | None = None) -> dict | None:
    """Write `result` to `out`; for CSV, return the tables it was given (callers reuse them)."""
    if fmt == "json":
        if hasattr(result, "write_json"):
            result.write_json(out)
        else:
            # One write of the whole text: json.dump with an indent writes every token on its own
            # (257k writes for a 1.7 MB memory profile, each through the output cache's tee).
            out.write(indented_json(_clean(result.to_json())) + "\n")
    elif fmt == "csv":
        tables = result.tables()
        if not tables:
            raise UserError("this tool has no table to write as CSV; use --format json")
        name = table or next(iter(tables))
        if name not in tables:
            raise ExportError(f"no table {name!r} (tables: {', '.join(tables)})")
        out.write(csv_text(tables[name], getattr(result, "fraction_columns", ())))
        return tables
    elif fmt in getattr(result, "text_formats", ()):
        out.write(cast(TextResult, result).render(fmt))
    elif fmt in FORMATS:
        raise ExportError(f"--format {fmt} is for the graph viewer; use json or csv")
    else:
        raise ExportError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")
    return None


def csv_text(frame: pl.DataFrame, fraction_columns: Collection[str] = ()) -> str:
    """A table as CSV, nested cells as JSON text (the screens' `x` writes the same). Every
    percentage in a CSV is a percent (0-100): `fraction_columns`, shares a result holds as
    fractions as XProf's JSON does, are scaled."""
    scaled = [c for c in fraction_columns if c in frame.columns]
    if scaled:
        frame = frame.with_columns(pl.col(c) * 100.0 for c in scaled)
    return _flat(frame).write_csv()


def _flat(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV has no nested values: lists and structs are written as JSON text in their cell."""
    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Array, pl.Struct))]
    if not nested:
        return frame
    return frame.with_columns(
        pl.Series(c, [None if v is None else json.dumps(_clean(v), default=str) for v in frame[c].to_list()],
                  dtype=pl.String)
        for c in nested)


def export_text(run: RunData, tool: str, fmt: str = "json", host: str | None = None,
                table: str | None = None, **options) -> str:
    """The export as a string (tests and small documents)."""
    buf = io.StringIO()
    write_result(run_tool(run, tool, host, **options), fmt, buf, table)
    return buf.getvalue()


def listing(logdir: Logdir, use_cache: bool = True) -> dict[str, Any]:
    """Runs, hosts and the tools with data in each run (`tputui export LOGDIR --list`).

    Every host file is checked first; unreadable ones are listed under "unreadable" with the
    reason (and left out when finding tools). `readable_hosts` counts the rest, over all runs."""
    runs = []
    readable = 0
    for r in logdir.runs:
        rd = RunData(r, use_cache=use_cache)
        rd.check_hosts()
        entry: dict[str, Any] = {"run": r.name, "path": shown(r.path), "hosts": [h.host for h in r.hosts]}
        if rd.hosts:
            entry["tools"] = tools_with_data(rd)
        if rd.unreadable:  # after the tools: finding them may decode and meet more damage
            entry["unreadable"] = dict(rd.unreadable)
        readable += len(rd.hosts)
        runs.append(entry)
    return {"logdir": shown(logdir.root), "runs": runs, "readable_hosts": readable}


class OutputCache:
    """A finished export's exact output (and its stderr notes), kept so the same export of the
    same files is a copy the next time: `tputui export` run twice, or after the app looked at the
    run, costs no analysis. Keyed by the run's host files (path, size, mtime), the tool, host,
    options, format, table, tputui's version and sources; stored zstd-compressed beside the decoded
    frames (same LRU cap, atomic, fsynced); an entry that would pass MAX_BYTES compressed is not
    kept. The compression runs on a thread of its own (zstd lets the GIL go), fed through a short
    queue, and zstd splits it over two workers at one of its fast levels (-3: a 360 MB trace is
    43 MB, ~0.1 s less CPU than level 1's 29 MB, and replays as fast): a large export goes on
    writing meanwhile."""

    MAX_BYTES = 256 << 20
    VERSION = 3  # 3: zstd content checksums, a manifest with the files' CRC-32 (entry_seal)
    QUEUED = 2  # pieces waiting for the compressor (a trace export's are ~9 MB each: each one queued
    # is memory at the export's peak)
    PIECE_BYTES = 1 << 20  # smaller writes are gathered up to this before the hand-over
    _OUT, _NOTES = "out.zst", "notes.json"

    def __init__(self, run: RunData, tool: str, host: str | None, options: dict, fmt: str, table: str | None,
                 extra: list | None = None):
        files = sorted((h.path, h.size, repr(h.mtime)) for h in run.run.hosts)
        # `extra`: stamps of other files the export reads (the TPU runtime log), only when there are any,
        # so the keys of other exports stay as they were
        ident = json.dumps([self.VERSION, __version__, code_stamp(), run.name, tool, host, sorted(options.items()),
                            fmt, table, files] + ([extra] if extra else []), default=repr)
        self.entry = os.path.join(cache_root(), "frames", hashlib.sha1(path_bytes(ident)).hexdigest() + ".export")
        self._tmp: str | None = None
        self._raw: IO[bytes] | None = None
        self._copy: Any = None  # a zstd stream writer over _raw
        self._queue: queue.Queue | None = None  # chunks for the compressor thread; None: not caching
        self._worker: threading.Thread | None = None
        self._failed = False  # set by the worker: too big or a write failed
        self._pending: list[bytes] = []  # small writes not handed over yet (_add)
        self._pending_bytes = 0

    def notes(self) -> list[str] | None:
        """The cached run's stderr notes, or None when there is no entry or it does not check
        out (its manifest's sizes and checksums, every byte: the replay reads them all anyway,
        and must not stop half-way through the user's output). A damaged entry is removed, the
        export runs again and replaces it."""
        if not os.path.isdir(self.entry):
            return None
        try:
            manifest = entry_seal.check(self.entry, full=True)
            if manifest["meta"].get("format") != self.VERSION or set(manifest["files"]) != {self._OUT, self._NOTES}:
                raise entry_seal.DamagedEntry(f"{self.entry}: another format")
            with open(os.path.join(self.entry, self._NOTES), encoding="utf-8") as f:
                notes = json.load(f)
            if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
                raise entry_seal.DamagedEntry(f"{self.entry}: notes are not a list of lines")
            os.utime(self.entry)  # recently used, for pruning
            return notes
        except Exception:  # noqa: BLE001 - damaged or unreadable: export again (and replace it)
            shutil.rmtree(self.entry, ignore_errors=True)
            return None

    def replay(self, out: IO[str]) -> None:
        import codecs

        import zstandard

        binary = getattr(out, "buffer", None)
        text = codecs.getincrementaldecoder("utf-8")()
        with open(os.path.join(self.entry, self._OUT), "rb") as f:
            # the frame's content checksum is checked too (checked in full by notes() before)
            reader = zstandard.ZstdDecompressor().stream_reader(f)
            while chunk := reader.read(1 << 22):
                if binary is not None:
                    binary.write(chunk)
                else:
                    out.write(text.decode(chunk))
        if binary is None:
            out.write(text.decode(b"", final=True))

    def tee(self, out: IO[str]) -> IO[str]:
        """`out`, with everything written to it also compressed into a new entry."""
        import zstandard

        try:
            private_dir(os.path.dirname(self.entry))
            self._tmp = tempfile.mkdtemp(dir=os.path.dirname(self.entry), prefix=temp_prefix("export"))
            self._raw = open(os.path.join(self._tmp, self._OUT), "wb")
            self._copy = zstandard.ZstdCompressor(level=-3, threads=2, write_checksum=True).stream_writer(
                self._raw, closefd=False)
        except OSError:
            self._drop()
            return out
        self._failed = False
        self._queue = queue.Queue(maxsize=self.QUEUED)
        self._worker = threading.Thread(target=self._compress, name="tputui-export-cache", daemon=True)
        self._worker.start()
        return cast(IO[str], _Tee(out, self))

    @property
    def caching(self) -> bool:
        return self._queue is not None and not self._failed

    def _add(self, data: bytes | memoryview) -> None:
        if self._queue is not None and not self._failed:
            # Small writes (json.dump writes a few bytes at a time) are gathered into big pieces:
            # a queue hand-over per write costs far more than the write.
            self._pending.append(data if isinstance(data, bytes) else bytes(data))  # the caller may reuse its buffer
            self._pending_bytes += len(data)
            if self._pending_bytes >= self.PIECE_BYTES:
                self._hand_over()

    def _hand_over(self) -> None:
        if self._pending and self._queue is not None:
            self._queue.put(self._pending[0] if len(self._pending) == 1 else b"".join(self._pending))
        self._pending, self._pending_bytes = [], 0

    def _compress(self) -> None:
        """The worker: compress queued chunks until None; past MAX_BYTES or on an error, only drain."""
        assert self._queue is not None
        while (data := self._queue.get()) is not None:
            if self._failed or self._copy is None or self._raw is None:
                continue
            try:
                self._copy.write(data)
                if self._raw.tell() > self.MAX_BYTES:
                    self._failed = True
            except (OSError, ValueError):
                self._failed = True

    def _stop(self) -> bool:
        """Let the worker finish what is queued; whether the entry is still good."""
        if self._queue is not None and self._worker is not None:
            self._hand_over()
            self._queue.put(None)
            self._worker.join()
        self._queue = self._worker = None
        return not self._failed

    def abandon(self) -> None:
        """Forget the entry being written (the export failed)."""
        self._stop()
        self._drop()

    def _drop(self) -> None:
        for handle in (self._copy, self._raw):
            if handle is not None:
                try:
                    handle.close()
                except (OSError, ValueError):
                    pass
        self._copy = self._raw = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def commit(self, notes: list[str]) -> None:
        """Make the entry visible (after the export succeeded); quietly nothing on a full disk."""
        import zstandard

        if not self._stop():
            self._drop()
            return
        if self._copy is None or self._raw is None or self._tmp is None:
            return
        try:
            self._copy.flush(zstandard.FLUSH_FRAME)
            self._copy.close()
            self._copy = None
            if self._raw.tell() > self.MAX_BYTES:
                self._drop()
                return
            self._raw.flush()
            os.fsync(self._raw.fileno())
            self._raw.close()
            self._raw = None
            with open(os.path.join(self._tmp, self._NOTES), "w", encoding="utf-8") as f:
                json.dump(notes, f)
                f.flush()
                os.fsync(f.fileno())
            entry_seal.seal(self._tmp, {"format": self.VERSION})
            tmp, self._tmp = self._tmp, None
            publish(tmp, self.entry)
        except OSError:
            self._drop()


class _Tee(io.TextIOBase):
    """A text stream writing to `out` and to an OutputCache; its `buffer` does the same for bytes
    (large results write bytes straight to the file's buffer)."""

    def __init__(self, out: IO[str], cache: OutputCache):
        self._out, self._cache = out, cache
        binary = getattr(out, "buffer", None)
        self.buffer = _BinaryTee(binary, cache) if binary is not None else None

    def write(self, text: str) -> int:
        if self._cache.caching:
            self._cache._add(text.encode("utf-8"))
        return self._out.write(text)

    def flush(self) -> None:
        self._out.flush()


class _BinaryTee:
    def __init__(self, out: Any, cache: OutputCache):
        self._out, self._cache = out, cache

    def write(self, data: bytes) -> int:
        if self._cache.caching:
            self._cache._add(data)
        return self._out.write(data)

    def flush(self) -> None:
        self._out.flush()

"""The XLA programs of a profile: the `Hlo Proto` stats of the `/host:metadata` plane.

Each XLA program in a profile has an `Hlo Proto` stat (a serialized `xla.HloProto`) on an event
metadata of the `/host:metadata` plane. Shared by the memory viewer and the graph viewer.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import polars as pl

from tputui.analysis.op_stats_format import KIND as OP_STATS_KIND
from tputui.analysis.result import NoDataError
from tputui.data import pbwire, schema
from tputui.data.run_data import RunData
from tputui.data.run_memo import MemoKind
from tputui.data.xspace import XSpaceFrame
from tputui.errors import UserError
from tputui.proto import hlo_pb2

HLO_PROTO_STAT = "Hlo Proto"


class _ModuleNames(Protocol):
    hlo_module_names: tuple[str, ...]


# The op stats' slot of RunData.memo (host_map keeps HostOpStats there), read through the one
# field this module needs: op_stats imports this module, so it cannot name HostOpStats.
_OP_STATS_NAMES: MemoKind[_ModuleNames] = MemoKind(OP_STATS_KIND)


@dataclass(frozen=True)
class HloModuleEntry:
    """One XLA program found in the profile (name as XProf lists it: `<module>(<program id>)`)."""

    name: str
    module_name: str
    program_id: int
    host: str
    data: bytes = field(repr=False)

    def parse(self) -> hlo_pb2.HloProto:
        try:
            return _parse_hlo(self.data)
        except Exception as e:  # protobuf raises DecodeError with little context
            raise NoDataError(f"HLO module {self.name}: unreadable HloProto ({e})") from None


@functools.lru_cache(maxsize=16)
def _parse_hlo(data: bytes) -> hlo_pb2.HloProto:
    """Parsed once per distinct proto (module pickers and defaults ask again and again)."""
    proto = hlo_pb2.HloProto()
    proto.ParseFromString(data)
    return proto


def hlo_modules(run: RunData, host: str | None = None) -> list[HloModuleEntry]:
    """Every program with an `Hlo Proto`, sorted by name (XProf's module list order)."""
    hosts = [host] if host else run.hosts
    found: dict[str, HloModuleEntry] = {}
    for h in hosts:
        # The op stats (when mapped already) name each host's modules: a host that brings none
        # not seen yet is not read again (a pod's hosts usually run the same programs).
        stats = run.memo.get(_OP_STATS_NAMES, h)
        if stats is not None and all(n in found for n in stats.hlo_module_names):
            continue
        fr = run.whole_frame_if_loaded(h) or run.frame(h, planes=[schema.METADATA_PLANE])
        for m in frame_modules(fr, h):
            found.setdefault(m.name, m)
    return sorted(found.values(), key=lambda m: m.name)


def frame_modules(fr: XSpaceFrame, host: str) -> list[HloModuleEntry]:
    """The programs of one host's frame, in metadata order."""
    plane = fr.plane_index(schema.METADATA_PLANE)
    if plane is None:
        return []
    out = []
    md = fr.event_metadata.filter(pl.col("plane") == plane)
    for row, md_id in zip(md["metadata"].to_list(), md["id"].to_list()):
        stats = fr.metadata_stat_map(row)
        data = stats.get(HLO_PROTO_STAT)
        if not isinstance(data, bytes):
            continue
        # XProf's program id: the `program_id` stat (JAX), else the metadata id (as uint64).
        raw_id = stats.get("program_id", md_id)
        program_id = (int(raw_id) if isinstance(raw_id, (int, np.integer)) else int(md_id)) & 0xFFFFFFFFFFFFFFFF
        module_name = _module_name(data)
        out.append(HloModuleEntry(f"{module_name}({program_id})", module_name, program_id, host, data))
    return out


def _module_name(data: bytes) -> str:
    """HloProto.hlo_module (field 1).name (field 1), read from the wire without a full parse."""
    module = pbwire.first_bytes_field(data, 1)
    name = pbwire.first_bytes_field(module, 1) if module is not None else None
    if name is None:
        return _parse_hlo(data).hlo_module.name  # unusual layout: let protobuf sort it out
    return name.decode("utf-8", "replace")


def find_module(modules: list[HloModuleEntry], wanted: str) -> HloModuleEntry:
    """A module by its full name, its program id, or its bare name when that is unique."""
    for m in modules:
        if wanted in (m.name, str(m.program_id)):
            return m
    same = [m for m in modules if m.module_name == wanted]
    if len(same) == 1:
        return same[0]
    names = ", ".join(m.name for m in (same or modules))
    what = "is ambiguous" if same else "not found"
    raise UserError(f"HLO module {wanted!r} {what}; modules: {names}")

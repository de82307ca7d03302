"""XProf's TPU step engine: each TensorCore's steps and their op time by HLO category.

Shared by the step database (steps.py: device steps), the input pipeline's per-core step details
and the pod viewer. How XProf gets there (xprof/convert xplane_to_step_events.cc,
step_events_to_steps_db.cc, op_stats_combiner.cc, utils/step_intersection.cc, event_span.cc,
profile_time_breakdown.h; xla/tsl group_events.cc, preprocess_xplane.h):

- Grouping: host events get group ids from the event forest, summarized once per host
  (`event_grouping.host_grouping`). A TPU core's `XLA Modules` event joins the group of the host
  `DoEnqueueProgram` with the same (device ordinal, queue_id, run_id & (2**27 - 1), core_type)
  (event_groups.py's table); `Steps` and `XLA Ops` events take the group of
  the module they overlap (unless the Steps line has more events than the module line: a device loop,
  left ungrouped). Consecutive steps of one group merge, ungrouped steps are dropped.
- Per core and group: markers = its Steps events, ops = XLA Ops with that group (device time,
  `device_offset_ps` / `device_duration_ps`); self time = duration - direct children; an op counts
  only with `program_id` and a non-zero `symbol_id` in its metadata; time per `hlo_category`.
- A host's steps are the groups found on every core (in plane order); a step lasts as long as its
  longest marker on any core of the host. Hosts are aligned by step timespans (the host with the
  shortest span is the chief), steps renumbered 0..n-1 and cores keyed host_index*1000 + plane id.
- Breakdown (generic categories): input = infeed + host recv(-done) (+ SparseCore infeed), output =
  outfeed + host send(-done), collectives = all-reduce (+ fusion) + all-to-all, device to device =
  send/recv(-done) + megacore fusion, all others = idle (step time - op time), compute = the rest of
  TensorCore busy time. The bottleneck is the largest (ties: the later name).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis.event_grouping import HostGrouping, LaunchKey, device_key, host_grouping
from tputui.analysis.event_groups import LAUNCH_EVENT
from tputui.analysis.op_metrics import (
    device_spans,
    event_stat,
    metadata_stats_table,
    nest_parents,
    self_times,
    tensor_core_planes,
)
from tputui.data import pbwire, schema
from tputui.data.xspace import XSpaceFrame

CATEGORIES = [
    (1, "Device compute", "device_compute"), (2, "Device to device", "device_to_device"),
    (3, "Device collective communication", "device_collectives"), (4, "Host compute", "host_compute"),
    (5, "Kernel launch", "kernel_launch"), (6, "Input", "input"), (7, "Output", "output"),
    (8, "Compilation", "compilation"), (9, "All others", "all_others"),
]
CATEGORY_KEYS = [k for _, _, k in CATEGORIES]
CATEGORY_NAMES = {k: n for _, n, k in CATEGORIES}

MAX_DEVICES_PER_HOST = 1000  # XProf's GlobalCoreId: host_index * 1000 + core id
LAUNCH_EVENTS = (LAUNCH_EVENT,)  # event_groups.py's table: continuation launches tie nothing
_SC_INFEED = "sparsecorev0 infeed"
_SC_OUTFEED = "sparsecorev0 outfeed"


@dataclass
class CoreInfo:
    core: int  # XProf's core key (host_index * 1000 + plane id on multi-host runs)
    host: str
    chip: int  # global chip id (CoreDetails), -1 unknown
    core_on_chip: int
    local_chip: int
    ordinal: int


@dataclass
class HostSteps:
    """One host's StepDatabase: steps in group order, each {core: category->ps}."""
    host: str
    device_type: str
    has_device: bool
    cores: dict[int, CoreInfo]  # plane id -> info (only cores with CoreDetails)
    steps: list[tuple[int, int, int, dict[int, dict[str, int] | None]]]  # (num, begin, dur, per core)
    generic: bool = False  # host (CPU/GPU) steps: per-core dict holds generic category ps


def _parse_core_details(blob: bytes) -> dict[int, int]:
    """Varint fields of a CoreDetails message (hostname is field 1, taken from the XSpace)."""
    try:
        return pbwire.varint_fields(blob)
    except pbwire.WireError:
        return {}


def line_rows(frame: XSpaceFrame, plane: int, name: str) -> np.ndarray:
    """Event rows of a named line of a plane, in line order."""
    for ln in frame.lines_of(plane):
        if frame.raw.line_name[ln] == name:
            sl = frame.line_events(ln)
            return np.arange(sl.start, sl.stop, dtype=np.int64)
    return np.zeros(0, np.int64)


def _overlapping(q_start: np.ndarray, q_end: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Index of the first event (s, e sorted by start) overlapping each query span, -1 if none
    (XProf's GroupQueue over a non-overlapping line: closed intervals)."""
    if len(s) == 0:
        return np.full(len(q_start), -1, np.int64)
    run_max_end = np.maximum.accumulate(e)
    i = np.searchsorted(run_max_end, q_start, "left")
    ok = i < len(s)
    ic = np.minimum(i, len(s) - 1)
    ok &= s[ic] <= q_end
    return np.where(ok, ic, -1)


def launch_groups(frame: XSpaceFrame) -> dict[LaunchKey, int]:
    """(device_ordinal, queue_id, masked run_id, core_type) of host program launches -> group id."""
    return host_grouping(frame).launch_map()


def _plane_steps(frame: XSpaceFrame, plane: int, launches: dict) -> tuple[list, dict[int, dict[str, int]]]:
    """One TensorCore: (markers [(group, begin, dur)], {group: {category: self ps}})."""
    raw = frame.raw
    ordinal = int(raw.plane_name[plane].rsplit(":", 1)[1])
    mods = line_rows(frame, plane, schema.LINE_XLA_MODULES)
    steps = line_rows(frame, plane, schema.LINE_STEPS)
    ops = line_rows(frame, plane, schema.LINE_XLA_OPS)
    if len(mods) == 0 or len(steps) > len(mods):
        return [], {}  # no module line, or a device loop: XProf leaves the plane ungrouped
    ms = frame.start_ps[mods].astype(np.int64)
    me = ms + raw.event_duration_ps[mods].astype(np.int64)
    st = {n: event_stat(frame, n, mods) for n in ("run_id", "queue_id", "core_type")}
    mgroup = np.full(len(mods), -1, np.int64)
    known = np.flatnonzero(st["run_id"][0] & st["queue_id"][0])
    core = np.where(st["core_type"][0], st["core_type"][1], 0)
    mgroup[known] = [launches.get(device_key(ordinal, q, r, c), -1) for q, r, c in zip(
        st["queue_id"][1][known].tolist(), st["run_id"][1][known].tolist(), core[known].tolist())]

    def group_of(rows: np.ndarray) -> np.ndarray:
        s = frame.start_ps[rows].astype(np.int64)
        e = s + raw.event_duration_ps[rows].astype(np.int64)
        idx = _overlapping(s, e, ms, me)
        return np.where(idx >= 0, mgroup[np.clip(idx, 0, None)], -1)

    markers = []
    if len(steps):
        sg = group_of(steps)
        ds, de = device_spans(frame, steps)
        prev = None
        for i in range(len(steps)):  # MergeHostSteps: device spans keep the first event's stats
            if sg[i] < 0:
                prev = None
                continue
            if sg[i] == prev:
                continue
            prev = int(sg[i])
            markers.append((prev, int(ds[i]), int(de[i] - ds[i])))
    per_group: dict[int, dict[str, int]] = {}
    if len(ops):
        og = group_of(ops)
        keep = og >= 0
        rows, og = ops[keep], og[keep]
        if len(rows):
            s, e = device_spans(frame, rows)
            selft = self_times(s, e, nest_parents(s, e))  # line order is time order
            md = frame.events["metadata"].to_numpy()[rows].astype(np.int64)
            mt = metadata_stats_table(frame, ["hlo_category", "program_id", "symbol_id"], md)
            counted = mt["program_id.has"] & mt["symbol_id.has"] & (mt["symbol_id"] != 0)
            # Summed per category text id, named after: several ids can name one category.
            df = pl.DataFrame({"g": og[counted], "cat": mt["hlo_category.text"][counted], "ps": selft[counted]})
            for g, cat, ps in df.group_by("g", "cat", maintain_order=True).agg(pl.col("ps").sum()).iter_rows():
                cats = per_group.setdefault(int(g), {})
                name = frame.text(int(cat))
                cats[name] = cats.get(name, 0) + int(ps)
    return markers, per_group


# One TensorCore's share of its host's step database: (plane id, CoreInfo or None, markers
# [(group, begin, dur)], {group: {category: self ps}}).
CoreSteps = tuple[int, "CoreInfo | None", list, dict[int, dict[str, int]]]


def host_step_db(frame: XSpaceFrame, host: str, grouping: HostGrouping | None = None) -> HostSteps:
    """XProf's step database of one TPU host (see module doc); `grouping`: the host's, when known."""
    hostname = frame.hostnames[0] if frame.hostnames else "localhost"
    cores_p = tensor_core_planes(frame)
    device_type = str(frame.plane_stat_map(cores_p[0]).get("device_type_string", "") or "")
    launches = (grouping if grouping is not None else host_grouping(frame)).launch_map()
    return combine_core_steps(host, device_type, [core_steps(frame, p, launches, hostname) for p in cores_p])


def core_steps(frame: XSpaceFrame, p: int, launches: dict, hostname: str) -> CoreSteps:
    """One TensorCore's part, given its host's launch groups (a host's first pass)."""
    pid = int(frame.raw.plane_id[p])
    info = None
    cd = frame.plane_stat_map(p).get("core_details")
    if isinstance(cd, (bytes, bytearray)):
        f = _parse_core_details(bytes(cd))
        info = CoreInfo(pid, hostname, int(f.get(5, 0)), int(f.get(3, 0)), int(f.get(4, 0)), int(f.get(2, 0)))
    markers, per_group = _plane_steps(frame, p, launches)
    return pid, info, markers, per_group


def combine_core_steps(host: str, device_type: str, parts: list[CoreSteps]) -> HostSteps:
    """The host's step database from its TensorCores' parts, in plane order."""
    cores: dict[int, CoreInfo] = {}
    combined: dict[int, dict[str, Any]] | None = None  # group -> {"markers": [...], "dbs": {core: cats}}
    for pid, info, markers, per_group in parts:
        if info is not None:
            cores[pid] = info
        mk_groups: dict[int, list] = {}
        for g, b, d in markers:
            mk_groups.setdefault(g, []).append((b, d))
        plane_ev: dict[int, dict[str, Any]]
        if per_group:
            plane_ev = {g: {"markers": mk_groups[g], "dbs": {pid: cats}} for g, cats in per_group.items()
                        if g in mk_groups}
        else:
            plane_ev = {g: {"markers": m, "dbs": {}} for g, m in mk_groups.items()}
        # XProf's IntersectCombineStepEvents over the planes, in plane order.
        if not combined:
            combined = plane_ev
        else:
            combined = {g: {"markers": v["markers"] + plane_ev[g]["markers"], "dbs": {**v["dbs"], **plane_ev[g]["dbs"]}}
                        for g, v in combined.items() if g in plane_ev}
    steps = []
    by_group = combined or {}
    for g in sorted(by_group):
        v = by_group[g]
        best_b, best_d = 0, 0
        for b, d in v["markers"]:
            if d > best_d:
                best_b, best_d = b, d
        steps.append((g, best_b, best_d, v["dbs"] if best_d > 0 else {}))
    return HostSteps(host, device_type, True, cores, steps)


# --- the TPU breakdown (ProfileTimeBreakdown) ----------------------------------------------------
def tpu_breakdown(category_ps: dict[str, int], step_ps: int) -> dict[str, int]:
    """Generic categories (ps) of one core's step from its op self time per HLO category."""
    t = {c: v for c, v in category_ps.items() if c != "IDLE"}
    total = sum(t.values())
    profile = max(step_ps, total)
    sc_in = t.pop(_SC_INFEED, 0)
    if sc_in:
        sc_out = t.get(_SC_OUTFEED, 0)
        transform = min(sc_in, sc_out)
        t["sparsecorev0 infeed wait"] = sc_in - transform
        t["sparsecorev0 infeed transform"] = transform
    g = lambda *names: sum(t.get(n, 0) for n in names)  # noqa: E731
    idle = profile - total
    infeed = g("infeed", "host recv", "host recv-done", "sparsecorev0 infeed wait", "sparsecorev0 infeed transform")
    outfeed = g("outfeed", "host send", "host send-done", _SC_OUTFEED)
    collectives = g("all-reduce", "all-reduce fusion", "all-to-all")
    send_recv = g("send", "send-done", "recv", "recv-done")
    d2d = send_recv + g("megacore fusion")
    non_compute = collectives + send_recv + g("sparsecorev0 infeed transform", _SC_OUTFEED)
    off_duty = idle + g("infeed", "outfeed", "host send", "host send-done", "host recv", "host recv-done",
                        "megacore fusion")
    busy = profile - off_duty - g("sparsecorev0 infeed wait")
    compute = busy - non_compute if busy > non_compute else 0
    return {"device_compute": compute, "device_to_device": d2d, "device_collectives": collectives,
            "host_compute": 0, "kernel_launch": 0, "input": infeed, "output": outfeed, "compilation": 0,
            "all_others": idle}


def bottleneck(cats_ps: dict[str, int]) -> str:
    """XProf sorts (ps, name) and takes the last: the largest, ties to the later name."""
    return max((v, CATEGORY_NAMES[k]) for k, v in cats_ps.items())[1]


# --- multi-host step intersection ---------------------------------------------------------------
def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def step_span(step) -> tuple[int, int]:
    _, b, d, per_core = step
    if not per_core or d == 0:
        return (0, 0)
    return (b, b + d)


def align_steps(sub: list, chief: list) -> tuple[int, int, int]:
    """XProf's FindStepsAlignment: (begin_subordinate, begin_chief, num_steps)."""
    if not sub or not chief:
        return (0, 0, 0)
    best, out = -1.0, (0, 0, 0)

    def info(sa: int, ca: int):
        pre = min(sa, ca)
        post = min(len(sub) - sa, len(chief) - ca)
        n = pre + post
        bs, bc = sa - pre, ca - pre
        sim = float(sum(_overlap(sub[bs + i], chief[bc + i]) for i in range(n)))
        return (bs, bc, n), sim

    for c in range(len(chief)):
        a, sim = info(0, c)
        if sim > best:
            best, out = sim, a
    for s in range(1, len(sub)):
        a, sim = info(s, 0)
        if sim > best:
            best, out = sim, a
    return out


def combine_hosts(hosts: list[HostSteps]) -> tuple[list[tuple[int, dict[int, dict]]], dict[int, CoreInfo], bool]:
    """[(step number, {core key: (step_ps, cats or generic)})], core infos, empty intersection."""
    def per_core(h: HostSteps, hid: int | None, step) -> dict:
        _, _, d, pc = step
        out = {}
        for c, cats in (pc or {}).items():
            key = c if hid is None else hid * MAX_DEVICES_PER_HOST + c
            out[key] = (d, cats, h.generic)
        return out

    if len(hosts) == 1:
        h = hosts[0]
        return [(s[0], per_core(h, None, s)) for s in h.steps], dict(h.cores), False
    any_device = any(h.has_device for h in hosts)
    workers = [(i, h) for i, h in enumerate(hosts) if h.has_device or not any_device]
    spans = {i: [step_span(s) for s in h.steps] for i, h in workers}
    chief, best = None, None
    for i, _ in workers:
        sp = spans[i]
        lo = min((a for a, _ in sp), default=None)
        hi = max((b for _, b in sp), default=0)
        dur = (hi - lo) if (lo is not None and lo < hi) else 0
        if best is None or dur < best:
            chief, best = i, dur
    cores: dict[int, CoreInfo] = {}
    for i, h in enumerate(hosts):
        for c, info in h.cores.items():
            key = i * MAX_DEVICES_PER_HOST + c
            cores[key] = CoreInfo(key, info.host, info.chip, info.core_on_chip, info.local_chip, info.ordinal)
    if chief is None:
        return [], cores, False
    align = {}
    for i, h in workers:
        align[i] = (0, 0, len(h.steps)) if i == chief else align_steps(spans[i], spans[chief])
    begin = max(a[1] for a in align.values())
    end = min(a[1] + a[2] for a in align.values())
    if begin > end:
        return [], cores, True
    out = []
    for k in range(end - begin):
        merged = {}
        for i, h in workers:
            bs, bc, _ = align[i]
            src = bs + (begin - bc) + k
            merged.update(per_core(h, i, h.steps[src]))
        out.append((k, merged))
    return out, cores, False

"""Step detection and per-step time breakdown, as XProf computes them.

Used by the op stats map (op_stats.py) and the live monitor. API (stable; add, don't rename):

    StepDb                  `steps` (Polars, one row per step and core; see STEP_COLUMNS),
                            `diagnostics` (list of warning lines), `kind` ("host" | "device" | "none"),
                            `has_steps`, `step_times_ms()` and `summary_ms()` (count/avg/min/max/stddev)
    host_steps(frame)       steps of a CPU-only host: root events (`_r`, e.g. StepTraceAnnotation /
                            tf.profiler Trace with step_num) grouped like XProf's event forest
                            (event_groups.py)
    device_steps(frame)     TPU steps per TensorCore as XProf groups them (tpu_steps.py), per-core breakdown
    steps(frame)            what XProf uses for one host: device steps when the host has TPU planes,
                            else host steps (GPU: host steps)
    host_step_dbs(frame)    that, plus XProf's per-core step database, from one grouping pass
    combine_hosts_steps(h)  the steps of several hosts (intersected as XProf does)
    NO_STEP_MARKER          XProf's diagnostic when no step is found
    BREAKDOWN_TYPES         event-type columns of the breakdown (ps), highest priority last

How XProf gets there (xla/tsl/profiler/utils/group_events.cc, xprof/convert/xplane_to_step_events.cc,
step_events_to_steps_db.cc, utils/event_span.cc), reproduced here:
- Host events are grouped into steps (event_groups.group_events).
- A group's step time is its longest marker (`train*` / `test*` / `TraceContext*` events, or a root
  that named the group); its events are typed (host compute, wait for input = IteratorGetNext*, host to
  device = infeed enqueue / memcpy HtoD, ...), overlaps resolved by type priority, clipped to the step;
  the rest is unknown ("All others"). Steps without a marker or without host compute are dropped, and
  with more than 5 steps the first and last (possibly partial) steps are dropped as well.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tputui.analysis import tpu_steps
from tputui.analysis.event_groups import group_events
from tputui.analysis.op_metrics import parse_tf_op, tensor_core_planes
from tputui.data.schema import GPU_PLANE_PREFIX
from tputui.data.xspace import XSpaceFrame

NO_STEP_MARKER = (
    "No step marker observed and hence the step time is unknown. This may happen if (1) training steps "
    "are not instrumented (e.g., if you are not using Keras) or (2) the profiling duration is shorter "
    "than the step time. For (1), you need to add step instrumentation; for (2), you may try to profile "
    "longer."
)

# XProf's EventType, in priority order (a later type wins where events overlap).
BREAKDOWN_TYPES = (
    "unknown", "host_compute", "host_preprocess", "host_postprocess", "host_batch_formation",
    "host_runtime", "host_compile", "host_to_host", "host_to_device", "host_prepare",
    "device_collectives", "host_wait_input", "device_to_device", "device_to_host",
    "device_compute_32", "device_compute_16", "device_wait_device", "device_wait_host",
)
_T = {name: i for i, name in enumerate(BREAKDOWN_TYPES)}

STEP_COLUMNS = {
    "step": pl.Int64,  # XProf's step number (the group id; per-core TPU step index)
    "name": pl.String,  # "train 3": root event name + step_num, as XProf names the group
    "core": pl.Int64,  # 0 for host (generic) steps; the device plane id for TPU cores
    "host": pl.String,
    "begin_ps": pl.Int64, "end_ps": pl.Int64, "duration_ps": pl.Int64,
    **{f"{t}_ps": pl.Int64 for t in BREAKDOWN_TYPES},
}

DROP_INCOMPLETE_ABOVE = 5  # XProf drops the first and last step when it has more than this


def empty_steps() -> pl.DataFrame:
    return pl.DataFrame(schema=STEP_COLUMNS)


@dataclass
class StepDb:
    steps: pl.DataFrame = field(default_factory=empty_steps)
    diagnostics: list[str] = field(default_factory=list)
    kind: str = "none"

    @property
    def has_steps(self) -> bool:
        return len(self.steps) > 0

    def per_step(self) -> pl.DataFrame:
        """One row per step (cores merged: the slowest core's duration, summed breakdowns / cores)."""
        if self.kind != "device" or not len(self.steps):
            return self.steps
        cols = [f"{t}_ps" for t in BREAKDOWN_TYPES]
        return self.steps.group_by("step", maintain_order=True).agg(
            pl.col("name").first(), pl.col("core").n_unique().alias("cores"), pl.col("host").first(),
            pl.col("begin_ps").min(), pl.col("end_ps").max(), pl.col("duration_ps").max(),
            *[pl.col(c).mean().round().cast(pl.Int64) for c in cols],
        )

    def step_times_ms(self) -> np.ndarray:
        return self.per_step()["duration_ps"].to_numpy() / 1e9

    def summary_ms(self) -> dict[str, float] | None:
        """count / avg / min / max / stddev (sample) of step time in ms; None without steps."""
        t = self.step_times_ms()
        if len(t) == 0:
            return None
        return {"count": len(t), "avg": float(t.mean()), "min": float(t.min()), "max": float(t.max()),
                "stddev": float(t.std(ddof=1)) if len(t) > 1 else 0.0}


_EXPLICIT_MARKER = re.compile(r"^(train|test|TraceContext)[^/]*$")
_NOT_REAL_COMPUTE = ("EagerExecute", "EagerLocalExecute", "EagerKernelExecute", "FunctionRun")


# --- host steps ---------------------------------------------------------------------------------
def _event_types(names: list[str], name_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(is_explicit_marker, breakdown type or -1 when not real compute) per event."""
    uniq = np.flatnonzero(np.bincount(name_idx, minlength=len(names)))
    marker = np.zeros(len(names), bool)
    typ = np.full(len(names), -1, np.int64)
    for i in uniq.tolist():
        nm = names[i]
        marker[i] = bool(_EXPLICIT_MARKER.match(nm))
        if marker[i] or nm.startswith(_NOT_REAL_COMPUTE):
            continue
        _, _, t = parse_tf_op(nm)
        if t.startswith("InfeedEnqueue") or t == "MemcpyHToD":
            typ[i] = _T["host_to_device"]
        elif t == "MemcpyHToH":
            typ[i] = _T["host_to_host"]
        elif nm.lower().startswith("iteratorgetnext"):
            typ[i] = _T["host_wait_input"]
        else:
            typ[i] = _T["host_compute"]
    return marker[name_idx], typ[name_idx]


def _sweep_breakdown(step_of: np.ndarray, ev_type: np.ndarray, ev_start: np.ndarray, ev_end: np.ndarray,
                     step_begin: np.ndarray, step_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """XProf's ToNonOverlappedEvents + ConvertStepDetailsToStepInfo, exactly, per step.

    XProf sweeps each step's event boundaries in time order (ends before starts at equal times,
    higher types first) with a priority tracker; the span up to the next boundary gets the
    tracker's current type; the step's time outside those spans is unknown. Quirk kept on
    purpose: a zero-length event ends before it starts, so in a gap it raises its type without
    holding it, and that type lasts until the next end that closes everything (i.e. up to the
    next positive event, then through it). Returns (ps per step and type, types seen per step).
    Steps with one event type (the usual case) take a vectorized path; others the exact loop."""
    nsteps = len(step_begin)
    ntypes = len(BREAKDOWN_TYPES)
    out = np.zeros((nsteps, ntypes), np.int64)
    seen = np.zeros((nsteps, ntypes), bool)
    if nsteps == 0:
        return out, seen
    present = np.bincount(step_of * ntypes + ev_type, minlength=nsteps * ntypes).reshape(nsteps, ntypes) > 0
    multi = present.sum(1) > 1
    one = ~multi[step_of]
    if one.any():
        _single_type_sweep(step_of[one], ev_type[one], ev_start[one], ev_end[one], step_begin, step_end,
                           out, seen)
    if multi.any():
        many = multi[step_of]
        _boundary_sweep(step_of[many], ev_type[many], ev_start[many], ev_end[many], step_begin, step_end,
                        out, seen)
    known = out.sum(1) - out[:, 0]
    out[:, 0] = (step_end - step_begin) - known
    return out, seen


def _single_type_sweep(g, ty, s, e, step_begin, step_end, out, seen) -> None:
    """Coverage of one-type steps: the union of the events, where a zero-length event that is not
    inside an open event stretches to the next positive event's start (XProf's quirk)."""
    order = np.argsort(s, kind="stable")
    order = order[np.argsort(g[order], kind="stable")]  # steps are nearly time-ordered: cheap
    g, ty, s, e = g[order], ty[order], s[order], e[order]
    n = len(s)
    first = np.ones(n, bool)
    first[1:] = g[1:] != g[:-1]
    # Running max of ends before each event, per step (steps are separated by an offset).
    base = np.minimum.reduceat(s, np.flatnonzero(first))[np.cumsum(first) - 1]
    span = int((np.maximum.reduceat(e, np.flatnonzero(first)) -
                np.minimum.reduceat(s, np.flatnonzero(first))).max()) + 1
    k = np.cumsum(first) - 1  # step block index
    if span * (int(k[-1]) + 2) > 2 ** 62:  # would overflow: fall back to the exact sweep
        _boundary_sweep(g, ty, s, e, step_begin, step_end, out, seen)
        return
    shifted_end = (e - base) + k * span
    reach = np.maximum.accumulate(shifted_end)
    before = np.empty(n, np.int64)
    before[0] = -1
    before[1:] = reach[:-1]
    before = np.where(first, -1, before - k * span + base)
    zero = e == s
    opener = zero & (s >= before)
    # Next positive event's start within the step (else the step's last event time).
    pos_start = np.where(zero, np.iinfo(np.int64).max, (s - base) + k * span)
    nxt = np.minimum.accumulate(pos_start[::-1])[::-1]
    nxt_after = np.empty(n, np.int64)
    nxt_after[:-1] = nxt[1:]
    nxt_after[-1] = np.iinfo(np.int64).max
    last_time = np.maximum.reduceat(np.maximum(s, e), np.flatnonzero(first))[k]
    has_next = nxt_after < (k + 1) * span
    eff_end = np.where(opener, np.where(has_next, nxt_after - k * span + base, last_time), e)
    # Union per step, clipped to the step.
    sb, se = step_begin[g], step_end[g]
    lo = np.clip(s, sb, se) - sb
    hi = np.clip(eff_end, sb, se) - sb
    cov = _union_per_group(g, lo, hi, int((step_end - step_begin).max()) + 1, len(step_begin))
    t = np.zeros(len(step_begin), np.int64)
    t[g] = ty
    steps_here = np.unique(g)
    out[steps_here, t[steps_here]] += cov[steps_here]
    count = np.bincount(g, minlength=len(step_begin))
    positive = np.bincount(g, weights=(e > s), minlength=len(step_begin)) > 0
    ok = positive | (count >= 2)
    seen[steps_here[ok[steps_here]], t[steps_here[ok[steps_here]]]] = True


def _boundary_sweep(step_of, ev_type, ev_start, ev_end, step_begin, step_end, out, seen) -> None:
    """XProf's boundary sweep with its priority tracker, step by step (exact, any types)."""
    nsteps = len(step_begin)
    ntypes = len(BREAKDOWN_TYPES)
    m = len(ev_start)
    t = np.concatenate([ev_start, ev_end])
    is_start = np.concatenate([np.ones(m, bool), np.zeros(m, bool)])
    ty = np.concatenate([ev_type, ev_type])
    st = np.concatenate([step_of, step_of])
    # One sort key: time, then ends before starts, then higher types first (6 low bits).
    t0 = t.min() if len(t) else 0
    key = ((t - t0) << 6) | (is_start.astype(np.int64) << 5) | (31 - ty)
    order = np.argsort(key, kind="stable")
    order = order[np.argsort(st[order], kind="stable")]
    t, is_start, ty, st = t[order], is_start[order], ty[order], st[order]
    n = len(t)
    state = np.zeros(n, np.int64)  # current type after each boundary (0 = unknown)
    step_first = np.searchsorted(st, np.arange(nsteps), "left")
    step_last = np.searchsorted(st, np.arange(nsteps), "right")
    for k in np.unique(st).tolist():
        a, b = step_first[k], step_last[k]
        state[a:b] = _priority_sweep(is_start[a:b], ty[a:b], ntypes)
    # Spans between consecutive boundaries of the same step, clipped to the step.
    ks = np.flatnonzero(st[:-1] == st[1:])
    sb, se = step_begin[st[ks]], step_end[st[ks]]
    lo = np.maximum(t[ks], sb)
    hi = np.minimum(t[ks + 1], se)
    dur = np.maximum(hi - lo, 0)
    cell = st[ks] * ntypes + state[ks]
    out += np.bincount(cell, weights=dur, minlength=nsteps * ntypes).round().astype(np.int64).reshape(
        nsteps, ntypes)
    seen.reshape(-1)[cell] = True


def _priority_sweep(is_start: np.ndarray, ty: np.ndarray, ntypes: int) -> np.ndarray:
    """XProf's PriorityTracker over one step's sorted boundaries (a short loop per step)."""
    count = [0] * ntypes
    cur = 0
    out = np.zeros(len(ty), np.int64)
    for i, (s, k) in enumerate(zip(is_start.tolist(), ty.tolist())):
        if s:
            count[k] += 1
            cur = max(cur, k)
        else:
            count[k] -= 1
            if k == cur and count[k] == 0:
                cur = 0
                for j in range(k - 1, -1, -1):
                    if count[j] > 0:
                        cur = j
                        break
        out[i] = cur
    return out


def _union_per_group(group: np.ndarray, s: np.ndarray, e: np.ndarray, span: int, ngroups: int) -> np.ndarray:
    if len(s) == 0:
        return np.zeros(ngroups, np.int64)
    gs, ge = s + group * span, e + group * span
    order = np.argsort(gs, kind="stable")
    gs, ge, g = gs[order], ge[order], group[order]
    reach = np.maximum.accumulate(ge)
    new = np.ones(len(gs), bool)
    new[1:] = gs[1:] > reach[:-1]
    seg = np.cumsum(new) - 1
    seg_end = np.zeros(int(seg[-1]) + 1, np.int64)
    np.maximum.at(seg_end, seg, ge)
    lengths = seg_end - gs[new]
    return np.bincount(g[new], weights=lengths, minlength=ngroups).round().astype(np.int64)


def host_steps(frame: XSpaceFrame, host: str = "", drop_incomplete: bool = True) -> StepDb:
    """Steps of a host without devices, from grouped host events (see module doc)."""
    grouped = group_events(frame)
    if not grouped.names:
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    marker_all, typ_all = _event_types(grouped.event_names, grouped.name_idx)
    # A root that named its group is a step marker, not an event of the step.
    marker_all = marker_all | grouped.named_roots
    typ_all = np.where(grouped.named_roots, -1, typ_all)
    sel = grouped.group >= 0
    group = grouped.group[sel]
    marker = marker_all[sel]
    typ = typ_all[sel]
    start, end = grouped.start[sel], grouped.end[sel]
    # Step time per group = its longest marker.
    mk = pl.DataFrame({"g": group[marker], "s": start[marker], "d": end[marker] - start[marker]})
    if not len(mk):
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    longest = mk.sort("g", "d", "s", descending=[False, True, False]).group_by("g", maintain_order=True).first()
    longest = longest.filter(pl.col("d") > 0)
    gids = longest["g"].to_numpy()
    begin = longest["s"].to_numpy()
    dur = longest["d"].to_numpy()
    index_of = np.full(len(grouped.names) + 1, -1, np.int64)
    index_of[gids] = np.arange(len(gids))
    # An event nested in a parent of the same group and type cannot change the sweep's result
    # (except a zero-length one at the parent's very end): leave those out, most events are.
    par = grouped.parent[sel]
    has_par = par >= 0
    pp = np.where(has_par, par, 0)
    redundant = has_par & (grouped.group[pp] == group) & (typ_all[pp] == typ) & ~(
        (start == end) & (start == grouped.end[pp]))
    evsel = (typ >= 0) & (index_of[group] >= 0) & ~redundant
    bd, seen = _sweep_breakdown(index_of[group[evsel]], typ[evsel], start[evsel], end[evsel], begin,
                                begin + dur)
    # Well-formed steps have host compute.
    keep = seen[:, _T["host_compute"]]
    gids, begin, dur, bd = gids[keep], begin[keep], dur[keep], bd[keep]
    if len(gids) == 0:
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    if drop_incomplete and len(gids) > DROP_INCOMPLETE_ABOVE:
        sl = slice(1, len(gids) - 1)
        gids, begin, dur, bd = gids[sl], begin[sl], dur[sl], bd[sl]
    df = pl.DataFrame({
        "step": gids, "name": [grouped.names[int(g)] for g in gids], "core": np.zeros(len(gids), np.int64),
        "host": [host] * len(gids), "begin_ps": begin, "end_ps": begin + dur, "duration_ps": dur,
        **{f"{t}_ps": bd[:, i] for i, t in enumerate(BREAKDOWN_TYPES)},
    }, schema=STEP_COLUMNS)
    return StepDb(steps=df, kind="host")


# --- device (TPU) steps -------------------------------------------------------------------------
def _tpu_rows(per_step, host: str) -> pl.DataFrame:
    """[(step, begin, dur, {core: category ps})] -> STEP_COLUMNS rows, one per (step, core)."""
    rows = []
    for step, begin, dur, per_core in per_step:
        for core, cats in sorted(per_core.items()):
            bd = tpu_steps.tpu_breakdown(cats, dur)
            t = dict.fromkeys(BREAKDOWN_TYPES, 0)
            t.update(device_compute_32=bd["device_compute"], device_to_device=bd["device_to_device"],
                     device_collectives=bd["device_collectives"], device_wait_host=bd["input"],
                     device_to_host=bd["output"], unknown=bd["all_others"])
            rows.append({"step": int(step), "name": str(step), "core": int(core), "host": host,
                         "begin_ps": int(begin), "end_ps": int(begin + dur), "duration_ps": int(dur),
                         **{f"{k}_ps": int(v) for k, v in t.items()}})
    return pl.DataFrame(rows, schema=STEP_COLUMNS) if rows else empty_steps()


def device_steps_of(db: tpu_steps.HostSteps, host: str = "") -> StepDb:
    """TPU steps from XProf's per-core step database (tpu_steps.host_step_db): each TensorCore's
    `Steps` events take the group of the XLA module they overlap; a step is a group seen on every
    core, lasting as long as its longest marker; per core its op self time by HLO category gives the
    breakdown (input = infeed / host recv, output = outfeed / host send, collectives, device to
    device, all others = idle, compute = the rest). Steps are not dropped (the device already did)."""
    steps_ = [(n, b, d, pc) for n, b, d, pc in db.steps if pc and d > 0]
    if not steps_:
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    return StepDb(steps=_tpu_rows(steps_, host), kind="device")


def device_steps(frame: XSpaceFrame, host: str = "") -> StepDb:
    return device_steps_of(tpu_steps.host_step_db(frame, host), host)


# --- CPU / GPU: the generic per-core step database ------------------------------------------------
def drop_incomplete_steps(db: StepDb) -> StepDb:
    """XProf drops the first and last (possibly partial) host steps when there are more than 5."""
    if db.kind != "host" or len(db.steps) <= DROP_INCOMPLETE_ABOVE:
        return db
    return StepDb(steps=db.steps.slice(1, len(db.steps) - 2), diagnostics=db.diagnostics, kind=db.kind)


def generic_step_db(db: StepDb, host: str, hostname: str, gpu: bool) -> tpu_steps.HostSteps:
    """CPU / GPU: XProf's generic step events of the host (all of them), on core 1."""
    out: list[tuple[int, int, int, dict[int, dict[str, int] | None]]] = []
    for r in db.steps.iter_rows(named=True):
        t = {k[:-3]: v for k, v in r.items() if k.endswith("_ps") and k not in ("begin_ps", "end_ps", "duration_ps")}
        cats = {
            "device_compute": t["device_compute_32"] + t["device_compute_16"],
            "device_to_device": t["device_to_device"] + t["device_wait_device"],
            "device_collectives": t["device_collectives"], "host_compute": t["host_compute"],
            "kernel_launch": t["host_prepare"],
            "input": t["host_wait_input"] + t["host_to_device"] + t["device_wait_host"],
            "output": t["device_to_host"], "compilation": t["host_compile"], "all_others": t["unknown"],
        }
        out.append((int(r["step"]), int(r["begin_ps"]), int(r["duration_ps"]), {1: cats}))
    cores = {1: tpu_steps.CoreInfo(1, hostname, 0, 0, 0, 0)}
    return tpu_steps.HostSteps(host, "GPU" if gpu else "CPU", gpu, cores, out, generic=True)


# --- entry points -------------------------------------------------------------------------------
def host_step_dbs(frame: XSpaceFrame, host: str, hostname: str) -> tuple[StepDb, tpu_steps.HostSteps]:
    """One host's steps as XProf reports them, and its per-core step database, from one pass of
    event grouping."""
    if tensor_core_planes(frame):
        db = tpu_steps.host_step_db(frame, host)
        return device_steps_of(db, host), db
    all_steps = host_steps(frame, host, drop_incomplete=False)
    gpu = any(n.startswith(GPU_PLANE_PREFIX) for n in frame.raw.plane_name)
    return drop_incomplete_steps(all_steps), generic_step_db(all_steps, host, hostname, gpu)


def steps(frame: XSpaceFrame, host: str = "") -> StepDb:
    """The steps XProf finds on one host."""
    if tensor_core_planes(frame):
        return device_steps(frame, host)
    return host_steps(frame, host)


def combine_hosts_steps(hosts) -> StepDb:
    """Steps of several hosts (each with `.steps`, `.step_db`, `.has_tpu_planes`, e.g. op_stats'
    HostOpStats). One host: its own. Several TPU hosts: XProf's step intersection
    (tpu_steps.combine_hosts: hosts aligned by step timespans, steps renumbered 0..n-1, cores keyed
    host index * 1000 + core). Several CPU hosts: steps aligned by position, the slowest host's kept."""
    if len(hosts) == 1:
        return hosts[0].steps
    if any(h.has_tpu_planes for h in hosts):
        combined, _, _ = tpu_steps.combine_hosts([h.step_db for h in hosts])
        per_step = []
        for step, per_core in combined:
            cats = {c: v[1] for c, v in per_core.items() if not v[2]}
            dur = max((v[0] for v in per_core.values()), default=0)
            if cats and dur > 0:
                per_step.append((step, 0, dur, cats))
        if not per_step:
            return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
        out = _tpu_rows(per_step, "")
        # Per-host durations differ: each core keeps its own host's step time.
        dur_of = {(step, c): v[0] for step, pc in combined for c, v in pc.items()}
        out = out.with_columns(duration_ps=pl.Series([dur_of.get((s_, c), d) for s_, c, d in zip(
            out["step"].to_list(), out["core"].to_list(), out["duration_ps"].to_list())], dtype=pl.Int64))
        return StepDb(steps=out.with_columns(end_ps=pl.col("begin_ps") + pl.col("duration_ps")), kind="device")
    dbs = [h.steps for h in hosts]
    found = [d for d in dbs if d.has_steps]
    if len(found) < len(dbs) or not found:
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    n = min(len(d.steps) for d in found)
    allh = pl.concat([d.steps.head(n).with_columns(pos=pl.int_range(pl.len())) for d in found])
    best = allh.sort("duration_ps", descending=True).group_by("pos").first().sort("pos").drop("pos")
    return StepDb(steps=best.select(list(STEP_COLUMNS)), kind="host")


def stats_ms(values) -> dict[str, float]:
    """avg / stddev (sample) / min / max of a list in ms (XProf's zeros when empty)."""
    v = np.asarray(values, np.float64)
    if len(v) == 0:
        return {"avg": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    sd = float(v.std(ddof=1)) if len(v) > 1 else 0.0
    return {"avg": float(v.mean()), "stddev": 0.0 if math.isnan(sd) else sd, "min": float(v.min()),
            "max": float(v.max())}

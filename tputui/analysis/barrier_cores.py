"""XProf's event-time fractions of one host (the smart-suggestion rules' input), read once in the
op-stats map: per TensorCore and step, the share of the step spent in `barrier-cores` ops, and per
step the host's share in `debug_print` ops (XProf's event_time_fraction_analyzer runs on
"barrier-cores,debug_print": xprof/convert/smart_suggestion/constants.h).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tputui.analysis.op_metrics import device_spans, event_stat, tensor_core_planes
from tputui.analysis.tpu_steps import line_rows
from tputui.data import schema
from tputui.data.xspace import XSpaceFrame

SPECIAL_OP = "barrier-cores"
DEBUG_PRINT = "debug_print"
DUMMY_DURATIONS_PS = (0, 1250)  # barrier-cores events XProf skips (0 ns, 1.25 ns)


@dataclass
class HostFractions:
    host: str
    per_core: dict[str, list[float]] = field(default_factory=dict)  # plane name -> step fractions
    per_step: list[float] = field(default_factory=list)  # mean over the host's cores, per step
    debug_print_per_step: list[float] = field(default_factory=list)  # the same for `debug_print` ops


# Per step index (of its plane's Steps line): {plane name: summed fraction}, and each step's length.
PlaneFractions = tuple[dict[int, dict[str, float]], dict[int, int]]


def special_op_fractions(frame: XSpaceFrame, host: str, op: str = SPECIAL_OP) -> HostFractions:
    """One host's share of each step spent in ops whose name contains `op`, per TensorCore; for
    barrier-cores (the default) also the host's per-step share in debug_print ops."""
    planes = tensor_core_planes(frame)
    return fractions_of(host, [plane_fractions(frame, p, op) for p in planes],
                        [plane_fractions(frame, p, DEBUG_PRINT) for p in planes] if op == SPECIAL_OP else None)


def fractions_of(host: str, special: list[PlaneFractions], debug: list[PlaneFractions] | None) -> HostFractions:
    """The host's fractions from its TensorCores' parts, in plane order (a host read in pieces
    gives the same parts as one read whole)."""
    out = _finish(host, special)
    if debug is not None:
        out.debug_print_per_step = _finish(host, debug).per_step
    return out


def plane_fractions(frame: XSpaceFrame, p: int, op: str) -> PlaneFractions:
    """One TensorCore's part: the fraction of each of its steps spent in ops whose name has `op`."""
    per_step: dict[int, dict[str, float]] = {}
    durations: dict[int, int] = {}
    steps = line_rows(frame, p, schema.LINE_STEPS)
    if not len(steps):
        return per_step, durations
    raw = frame.raw
    plane_md = np.flatnonzero(raw.em_plane == p)
    wanted = [int(m) for m in plane_md if op in raw.em_name[m]]
    if not wanted:
        return per_step, durations
    s_start, s_end = device_spans(frame, steps)
    order = np.argsort(s_start, kind="stable")
    s_start, s_end = s_start[order], s_end[order]
    rows = np.concatenate([np.arange(frame.line_events(ln).start, frame.line_events(ln).stop)
                           for ln in frame.lines_of(p)] or [np.zeros(0, np.int64)]).astype(np.int64)
    ev_md = frame.events["metadata"].to_numpy()
    rows = rows[np.isin(ev_md[rows], np.asarray(wanted, ev_md.dtype))]
    if not len(rows):
        return per_step, durations
    has_d, dur = event_stat(frame, "device_duration_ps", rows)
    e_start, _ = device_spans(frame, rows)
    keep = has_d & ~np.isin(dur, DUMMY_DURATIONS_PS) if op == SPECIAL_OP else has_d
    rows, dur, e_start = rows[keep], dur[keep], e_start[keep]
    step = np.searchsorted(s_start, e_start, side="right") - 1
    inside = (step >= 0) & (e_start < s_end[np.clip(step, 0, None)])
    plane = raw.plane_name[p]
    for k, d in zip(step[inside], dur[inside]):
        step_ps = int(s_end[k] - s_start[k])
        if step_ps <= 0:
            continue
        # XProf sums float fractions into a double, event by event
        per_step.setdefault(int(k), {})
        per_step[int(k)][plane] = per_step[int(k)].get(plane, 0.0) + float(np.float32(d / step_ps))
        durations[int(k)] = step_ps
    return per_step, durations


def _finish(host: str, parts: list[PlaneFractions]) -> HostFractions:
    out = HostFractions(host)
    per_step: dict[int, dict[str, float]] = {}
    durations: dict[int, int] = {}
    for plane_steps, plane_durations in parts:  # in plane order, as the host's events were walked
        for k, fr in plane_steps.items():
            per_step.setdefault(k, {}).update(fr)
        durations.update(plane_durations)
    keys = sorted(per_step)
    if len(keys) >= 3:
        keys = keys[1:-1]  # incomplete first and last steps
    elif len(keys) == 2:
        a, b = keys
        if durations[b] < 0.01 * durations[a]:
            keys = [a]
        elif durations[a] < 0.01 * durations[b]:
            keys = [b]
    for k in keys:
        for plane, f in per_step[k].items():
            out.per_core.setdefault(plane, []).append(float(np.float32(f)))
        out.per_step.append(sum(per_step[k].values()) / len(per_step[k]))
    return out

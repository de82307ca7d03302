"""Why a GPU profile may have no device events, as the TensorFlow Profiler guide says: the GPU tracer
(CUPTI) could not load (its library folder missing from LD_LIBRARY_PATH) or was refused the
performance counters (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES). Said when a host has GPU device planes
without a single kernel or memcpy, or its profile carries a CUPTI error or warning.
"""
from __future__ import annotations

from tputui.analysis.op_stats import HostOpStats

HINT = ("No GPU device events: the GPU tracer (CUPTI) recorded nothing on {where}. Usually CUPTI could not load "
        "(add its folder, e.g. /usr/local/cuda/extras/CUPTI/lib64, to LD_LIBRARY_PATH) or lacked privileges "
        "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: run the job as root or in a --privileged container, or set the NVIDIA "
        "driver option NVreg_RestrictProfilingToAdminUsers=0).")


def _cupti_messages(h: HostOpStats) -> list[str]:
    return [m for m in (*h.errors, *h.warnings) if "cupti" in m.lower()]


def cupti_hint(hosts: list[HostOpStats]) -> str | None:
    """The hint, naming the hosts concerned and quoting the first CUPTI message; None when every GPU host
    has device events and no CUPTI message."""
    empty = [h.host for h in hosts if h.hardware == "GPU" and (h.kernels is None or h.kernels.height == 0)
             and (h.device_db is None or h.device_db.ops.height == 0)]
    said = [(h.host, m) for h in hosts for m in _cupti_messages(h)]
    if not empty and not said:
        return None
    named = sorted(set(empty) | {host for host, _ in said})
    where = f"host {named[0]}" if len(named) == 1 else f"{len(named)} hosts ({', '.join(named[:4])})"
    text = HINT.format(where=where)
    return text + (f" The profile says: {said[0][1]}" if said else "")

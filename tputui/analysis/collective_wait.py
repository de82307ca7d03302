"""How long an all-reduce waited for the slowest core: the trace viewer's details of a collective.

An all-reduce (CrossReplicaSum in TF) cannot finish before every core has arrived, so a core that
arrives early waits for the last one: the pod viewer's "sync wait". For one all-reduce event, the
same collective on the host's other TensorCores is the one with the same `all_reduce_unique_id`
that overlaps it in time; this core waited from its own start to the latest start among them, and
the rest of its duration is the exchange itself. Device times (`device_offset_ps`) as op_stats'
all_reduce_events reads them. Only the cores of this host file are seen.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from tputui.analysis import op_metrics as om
from tputui.analysis.op_stats import all_reduce_events
from tputui.data.xspace import XSpaceFrame

UID_STAT = "all_reduce_unique_id"
_events_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # frame -> all_reduce_events


@dataclass(frozen=True)
class CollectiveWait:
    waited_ps: int  # from this core's start to the last core's arrival
    together_ps: int  # from the last arrival to this core's end
    cores: int  # cores found running this all-reduce
    last_core: str  # the plane that arrived last
    this_core: str

    def text(self, time) -> str:
        """One line for the details pane; `time` formats picoseconds."""
        if self.last_core == self.this_core:
            return (f"this core arrived last of {self.cores}: no wait; {time(self.together_ps)} exchanging")
        return (f"{time(self.waited_ps)} for the slowest core ({self.last_core} arrived last of {self.cores}), "
                f"then {time(self.together_ps)} exchanging")


def wait_for_slowest(frame: XSpaceFrame, row: int) -> CollectiveWait | None:
    """For the frame's event `row`: its wait for the slowest core, when it is an all-reduce seen on
    two or more cores; else None."""
    has, uid = om.event_stat(frame, UID_STAT, np.array([row], np.int64))
    if not has[0]:
        return None
    events = _events_of.get(frame)
    if events is None:
        events = _events_of[frame] = all_reduce_events(frame)
    plane = int(frame.events["plane"][row])
    this = f"{frame.raw.plane_name[plane]}"
    s0, e0 = (int(v[0]) for v in om.device_spans(frame, np.array([row], np.int64)))
    arrivals: list[tuple[int, str]] = []
    names = {int(frame.raw.plane_id[p]): frame.raw.plane_name[p] for p in range(len(frame.raw.plane_name))}
    for pid, (s, e, u) in events.items():
        same = np.flatnonzero((u == uid[0]) & (s <= e0) & (e >= s0))  # this collective, overlapping in time
        if len(same):
            arrivals.append((int(s[same].max()), names.get(pid, str(pid))))
    if len(arrivals) < 2:
        return None
    last, who = max(arrivals)
    return CollectiveWait(max(0, last - s0), max(0, e0 - max(last, s0)), len(arrivals), who, this)

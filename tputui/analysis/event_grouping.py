"""One host's step groups, as a small picklable summary every tool derives its timelines from.

XProf groups a host's events once (group_events.cc, after preprocess_xplane.cc) and every tool reads
that one grouping. Here the whole-host pass is `event_groups.group_events` (memoized per frame) and
`host_grouping` distills it into `HostGrouping` (a giant host read in pieces gets the same one from
its threads' extracts, group_extract.grouping_of): per group its root (as a rank among the host's
candidate roots, so the summary does not depend on how the file was read), name and step number,
and the keys device events carry (device ordinal, queue id, masked run id, core type) mapped to the
group of the host launch that started them. The op-stats map keeps it in `HostOpStats.grouping`
(cached with the op stats); the TPU step engine (tpu_steps.py) and the trace viewer's host steps and
device steps (trace_events.py) read it instead of grouping again. Columnar and frame-free, so it
crosses processes and Dask workers and costs a few bytes per step.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from tputui.analysis.event_groups import LAUNCH_EVENT, RUN_ID_MASK, GroupedEvents, group_events
from tputui.analysis.op_metrics import event_stat
from tputui.data.xspace import XSpaceFrame

U64 = (1 << 64) - 1
LaunchKey = tuple[int, int, int, int]  # (device ordinal, queue id, run id & RUN_ID_MASK, core type)
LAUNCH_STATS = ("device_ordinal", "queue_id", "run_id", "core_type")  # what a launch key is made of
_REQUIRED = LAUNCH_STATS[:3]  # XProf ties a launch only with all three (core type defaults to 0)


@dataclass(frozen=True)
class HostGrouping:
    """XProf's step groups of one host; per-group arrays are indexed by group id (0..count-1)."""

    enabled: bool  # False: XProf groups nothing on this host (TF loop ops)
    root_rank: np.ndarray  # int64: the root's rank among the host's candidate roots (-1: a TF loop's)
    name: tuple[str, ...]  # "train 3", "ProcessBatch 1", "4" (implicit roots)
    named: np.ndarray  # bool: the root takes the group's name (its step_name), not implicit
    step_num: np.ndarray  # int64: iter_num / step_num of the root or its context, -1 when none
    launch_key: np.ndarray  # uint64 (k, 4): LaunchKey of host launches that joined a group, sorted
    launch_group: np.ndarray  # int64 (k,): the group of each key (the lowest when several)
    candidates: int = 0  # the host's candidate roots (event_groups.root_candidates lists them)

    def fits(self, candidate_rows: np.ndarray) -> bool:
        """Whether `candidate_rows` (root_candidates of a frame) are the roots it ranks: the same
        host file, read whole or in pieces, gives the same ranks."""
        return len(candidate_rows) == self.candidates

    @property
    def count(self) -> int:
        return len(self.name)

    @classmethod
    def empty(cls, enabled: bool = True, candidates: int = 0) -> HostGrouping:
        z = np.zeros(0, np.int64)
        return cls(enabled, z, (), np.zeros(0, bool), z, np.zeros((0, 4), np.uint64), z, candidates)

    def launch_map(self) -> dict[LaunchKey, int]:
        """{launch key: group id} (a few entries per step)."""
        keys = self.launch_key.tolist()
        return {(int(a), int(b), int(c), int(d)): int(g) for (a, b, c, d), g in zip(keys, self.launch_group.tolist())}

    def renamed_rows(self, candidate_rows: np.ndarray) -> dict[int, str]:
        """{frame row: name} of the roots XProf renames after their group (their step_name), given
        the frame's root_candidates (see fits)."""
        return {int(candidate_rows[r]): self.name[g] for g, r in enumerate(self.root_rank.tolist())
                if self.named[g] and r >= 0}


def device_key(ordinal: int, queue_id: int, run_id: int, core_type: int) -> LaunchKey:
    """The key a device `XLA Modules` event carries (TpuModuleLineMutator: its run id as recorded)."""
    return (ordinal & U64, queue_id & U64, run_id & U64, core_type & U64)


_MEMO: weakref.WeakKeyDictionary[XSpaceFrame, HostGrouping] = weakref.WeakKeyDictionary()
_MEMO_LOCK = threading.Lock()


def host_grouping(frame: XSpaceFrame) -> HostGrouping:
    """The host's grouping (computed once per frame; see the module doc)."""
    with _MEMO_LOCK:
        hit = _MEMO.get(frame)
    if hit is None:
        hit = summarize(frame, group_events(frame))
        with _MEMO_LOCK:
            hit = _MEMO.setdefault(frame, hit)
    return hit


def summarize(frame: XSpaceFrame, g: GroupedEvents) -> HostGrouping:
    """HostGrouping of a frame's grouped host events."""
    if not g.enabled:
        return HostGrouping.empty(enabled=False)
    n = len(g.names)
    candidates = g.roots.candidates if g.roots is not None else 0
    if n == 0:
        return HostGrouping.empty(candidates=candidates)
    assert g.roots is not None  # groups come with their roots
    gids = range(n)
    starter_pos = np.array([g.starter[i] for i in gids], np.int64)
    step_num = np.array([-1 if g.step_nums.get(i) is None else g.step_nums[i] for i in gids], np.int64)
    keys, groups = _launches(frame, g)
    return HostGrouping(True, np.array([g.roots.rank[i] for i in gids], np.int64), tuple(g.names[i] for i in gids),
                        g.named_roots[starter_pos], step_num, keys, groups, candidates)


def _launches(frame: XSpaceFrame, g: GroupedEvents) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique launch keys, group of each) of the grouped host launches."""
    is_launch = np.asarray([nm == LAUNCH_EVENT for nm in g.event_names], bool)  # per name, not per event
    sel = (g.group >= 0) & is_launch[g.name_idx]
    if not sel.any():
        return launch_columns(np.zeros(0, np.int64), {})
    rows = g.rows_at(sel)
    return launch_columns(g.group[sel], {n: event_stat(frame, n, rows) for n in LAUNCH_STATS})


def launch_columns(groups: np.ndarray, stats: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique launch keys (k, 4) uint64, the lowest group of each) from grouped launch
    events and their LAUNCH_STATS as (present, value) arrays; run ids masked as XProf does."""
    empty = np.zeros((0, 4), np.uint64), np.zeros(0, np.int64)
    if not len(groups):
        return empty
    ok = np.logical_and.reduce([stats[n][0] for n in _REQUIRED])
    if not ok.any():
        return empty
    u = lambda v: np.asarray(v, np.int64).view(np.uint64)  # noqa: E731  stats as unsigned, like XProf's
    core = np.where(stats["core_type"][0], stats["core_type"][1], 0)
    keys = np.stack([u(stats["device_ordinal"][1]), u(stats["queue_id"][1]),
                     u(stats["run_id"][1]) & np.uint64(RUN_ID_MASK), u(core)], axis=1)[ok]
    groups = np.asarray(groups, np.int64)[ok]
    order = np.lexsort((groups, keys[:, 3], keys[:, 2], keys[:, 1], keys[:, 0]))
    keys, groups = keys[order], groups[order]
    first = np.ones(len(keys), bool)
    first[1:] = (keys[1:] != keys[:-1]).any(axis=1)  # the lowest group of each key comes first
    return np.ascontiguousarray(keys[first]), groups[first]

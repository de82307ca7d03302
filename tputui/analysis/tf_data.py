"""tf.data bottleneck analysis (XProf's tf_data_bottleneck_analysis, xplane_to_tf_data_stats.cc).

Device input pipelines (a distribution strategy prefetching to its devices) are found as XProf does,
from the `Iterator::Prefetch::Generator` iterator (named `Iterator::Root::Prefetch::Generator` by
TensorFlow 2.21), named Device:N and kept apart from the host ones (Host:N), which alone are ranked.
Every call (run) of a pipeline is kept, slowest first, with its own bottleneck.

For every host input pipeline (a root iterator, `Iterator::Root`, seen once per GetNext call):
its call latencies (avg / min / max, calls over 50 us are slow), and for its slowest call the
bottleneck iterator: the iterator on the blocking path (nested in the call, or produced for it by
an asynchronous iterator while the call waited) with the largest self time. Pipelines are ranked by
their slowest call; the first one decides whether the host is input-bound (> 50 us), and the
bottleneck iterator's kind gives XProf's suggestion.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis import giant_host
from tputui.analysis import op_metrics as om
from tputui.analysis.tf_input import (
    DEVICE_SECOND_ITERATORS,
    TfInputFacts,
    is_generator_source,
    is_tf_data_thread,
    py_func_counts,
    python_input_sources,
)
from tputui.data import schema
from tputui.data.event_subset import events_named
from tputui.data.run_data import RunData
from tputui.data.xspace import XSpaceFrame

SLOW_CALL_PS = 50 * 1_000_000  # 50 us, tensorflow.org/guide/data_performance_analysis
_ASYNC = {"Prefetch", "ParallelInterleave", "ParallelMap", "ParseExample", "MapAndBatch", "DataService",
          "LegacyParallelInterleave", "ParallelBatch"}
_PRODUCE = ("PrefetchProduce", "ParallelInterleaveProduce", "ParallelMapProduce", "MapAndBatchProduce",
            "ParseExampleProduce", "ParallelBatchProduce")
_CONSUME = ("PrefetchConsume", "ParallelInterleaveConsume", "ParallelMapConsume", "MapAndBatchConsume",
            "ParseExampleConsume", "ParallelBatchConsume")

PLAYBOOK = "https://www.tensorflow.org/guide/data_performance_analysis"
_SOURCES = {"TFRecord", "SSTable", "RecordIO", "Spanner", "TFColumn", "SleepwalkRemoteDataset", "TextLine",
            "StitchedTimelineDataset", "DateKeyDataset", "CapacitorProto", "LMDB", "ExternalDataset",
            "PearModel", "FixedLengthRecordV2", "FromTensor", "TensorSlice", "Generator", "SyntheticDatasetOp"}
_REMOTE = {"GuzzlerDataGuzzlerRemoteDataset", "ReverbDataset", "DatasetSampleGame", "Courier",
           "ReverbEpisodeDataset"}
SUGGESTIONS = {
    "source": ("1. Check the locality of a host and input data. Ideally, they should be in the same cell "
               "(or very close, like the same region). 2. Parallelize reading from this dataset source. "
               f"See {PLAYBOOK}#source_datasets and "
               "https://www.tensorflow.org/guide/data_performance#parallelizing_data_extraction."),
    "data_service": ("1. Fetching data from tf.data service took a while. Profile the tf.data service worker "
                     "to analyze the issue further. 2. See "
                     "https://www.tensorflow.org/api_docs/python/tf/data/experimental/service for more "
                     f"details on tf.data service. 3. See {PLAYBOOK} for other suggestions."),
    "remote": ("1. The remote data source is slow. Profile its host to analyze the issue further. "
               f"2. See {PLAYBOOK} for other suggestions."),
    "parallelizable": (
        "1. Parallelize this transformation by setting num_parallel_calls=tf.data.experimental.AUTOTUNE. See "
        "https://www.tensorflow.org/guide/data_performance#parallelizing_data_transformation. 2. Consider "
        "adding cache after this transformation if your data fits into memory and it is appropriate (e.g., "
        "there is no randomness in upstream transformations like shuffle). See "
        f"https://www.tensorflow.org/guide/data_performance#caching. 3. Find more resources: {PLAYBOOK}"
        "#transformation_datasets."),
    "sequential": (
        "1. This transformation is inherently sequential. Add outer parallelism by running multiple copies "
        "of the input pipeline over sharded inputs and combining the results. See "
        f"{PLAYBOOK}#transformation_datasets. 2. Consider adding cache after this transformation if your "
        "data fits into memory and it is appropriate (e.g., there is no randomness in upstream "
        "transformations like shuffle). See https://www.tensorflow.org/guide/data_performance#caching. "
        f"3. Find more resources: {PLAYBOOK}#3_are_you_reaching_high_cpu_utilization."),
    "other": f"See {PLAYBOOK} for suggestions.",
}


def bottleneck_kind(iterator_name: str) -> str:
    if iterator_name in _SOURCES:
        return "source"
    if iterator_name == "DataService":
        return "data_service"
    if iterator_name in _REMOTE:
        return "remote"
    if iterator_name in ("Map", "Interleave"):
        return "parallelizable"
    if iterator_name in ("Filter", "Batch", "Unbatch"):
        return "sequential"
    return "other"


RUNS_SCHEMA: dict[str, Any] = {"rank": pl.Int64, "start_us": pl.Float64, "duration_us": pl.Float64,
                               "bottleneck_iterator": pl.String, "bottleneck_self_us": pl.Float64}
MAX_RUNS_WALKED = 200  # calls whose bottleneck is found (each walks its iterator tree); the rest: duration only


@dataclass
class PipelineStats:
    host: str
    name: str  # "Host:0"
    root_id: int
    calls: int
    avg_latency_ps: int
    min_latency_ps: int
    max_latency_ps: int
    slow_calls: int
    bottleneck_iterator: str  # short name ("MapAndBatch")
    bottleneck_long_name: str  # "Iterator::Root::Prefetch::MapAndBatch"
    bottleneck_latency_ps: int
    iterators: pl.DataFrame  # slowest call: iterator, long_name, is_async, calls, start (from the call's
    # start), duration, self, blocking (on the critical path), depth in the iterator tree
    side: str = "host"  # "device": a distribution strategy's device-side pipeline (XProf's Device:N)
    runs: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=RUNS_SCHEMA))  # every call, slowest first
    holds: list[tuple[str, str, str]] = field(default_factory=list)  # Python it runs: (kind, what, evidence)

    @property
    def suggestion(self) -> str:
        return SUGGESTIONS[bottleneck_kind(self.bottleneck_iterator)]

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "input_pipeline": self.name, "side": self.side, "calls": self.calls,
                "avg_latency_us": self.avg_latency_ps / 1e6, "min_latency_us": self.min_latency_ps / 1e6,
                "max_latency_us": self.max_latency_ps / 1e6, "slow_calls": self.slow_calls,
                "bottleneck_iterator": self.bottleneck_iterator,
                "bottleneck_iterator_long_name": self.bottleneck_long_name,
                "bottleneck_iterator_latency_us": self.bottleneck_latency_ps / 1e6,
                "suggestion": self.suggestion}


@dataclass
class TfDataAnalysis:
    pipelines: list[PipelineStats] = field(default_factory=list)  # host pipelines, slowest first (XProf's)
    device_pipelines: list[PipelineStats] = field(default_factory=list)  # device side, apart (XProf ignores them)

    @property
    def is_input_bound(self) -> bool:
        return bool(self.pipelines) and self.pipelines[0].max_latency_ps > SLOW_CALL_PS

    @property
    def summary(self) -> str:
        top = self.pipelines[0].max_latency_ps if self.pipelines else 0
        if top > SLOW_CALL_PS:
            return ("Your profile has a tf.data input pipeline slower than 50 us. For each slow input pipeline, "
                    "below shows a bottleneck in the input pipeline and a suggestion on how to fix it.")
        if top > 0:
            return ("Your profile does not have any tf.data input pipeline slower than 50 us. Your job could "
                    "be still input bound if this profile didn't capture all workers.")
        return ("No tf.data activity captured in your profile. If your job uses tf.data, try to capture a "
                "longer profile.")

    def to_json(self) -> dict[str, Any]:
        top = self.pipelines[0] if self.pipelines else None
        return {
            "is_input_bound": self.is_input_bound, "summary": self.summary,
            "input_bound_host": top.host if top and self.is_input_bound else None,
            "slowest_input_pipeline": top.name if top else None,
            "pipelines": [p.to_json() for p in self.pipelines],
            "device_pipelines": [p.to_json() for p in self.device_pipelines],
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        rows = self.to_json()["pipelines"]
        return {"tf_data_pipelines": pl.DataFrame(rows) if rows else pl.DataFrame()}


def analyze_run(run: RunData, hosts: list[str]) -> TfDataAnalysis:
    """The hosts' pipelines, one host's frame at a time; a giant host (giant_host.py) gives only
    its host plane (the only plane read), and not even that when no event there is tf.data's."""
    return _analyze((h, _host_plane(run, h)) for h in hosts)


def _host_plane(run: RunData, host: str) -> XSpaceFrame:
    if giant_host.pieces(run, host) is None:
        return run.frame(host)
    return tf_data_lines(run, host)


def tf_data_lines(run: RunData, host: str) -> XSpaceFrame:
    """The host plane with only the lines _host_pipelines reads: those with an iterator, produce
    or consume event (nesting is per line, so each is read whole), and tf.data's threads (their
    py-function ops); the others add no event it looks at. Which lines: from the plane's tf.data
    events alone (event_subset), then those lines decoded whole."""
    meta = giant_host.planes_without_lines(run, host, lambda n: n == schema.HOST_PLANE)
    if not any(om.parse_tf_op(n)[0] == om.CAT_TF_DATA for n in meta.raw.em_name):
        return meta  # no line: no pipeline, as the whole plane would give
    wanted = [n for n in meta.raw.em_name if om.parse_tf_op(n)[0] == om.CAT_TF_DATA or n in _PRODUCE or n in _CONSUME]
    events = events_named(run.host_file(host), schema.HOST_PLANE, wanted)
    if events is None:  # not a .xplane.pb (giant hosts are)
        return run.frame(host, planes=[schema.HOST_PLANE], keep=False)
    raw = events.raw
    lines = [ln for ln in range(len(raw.line_plane)) if raw.line_num_events[ln] > 0 or is_tf_data_thread(raw.line_name[ln])]
    del events, raw
    return giant_host.plane_lines(run, host, schema.HOST_PLANE, lines)


def _analyze(frames: Iterable[tuple[str, XSpaceFrame]]) -> TfDataAnalysis:
    pipes: list[PipelineStats] = []
    for host, fr in frames:
        pipes += _host_pipelines(host, fr)
    host_side = sorted((p for p in pipes if p.side == "host"), key=lambda p: -p.max_latency_ps)
    return TfDataAnalysis(host_side, [p for p in pipes if p.side == "device"])


def _host_pipelines(host: str, fr: XSpaceFrame) -> list[PipelineStats]:
    plane = fr.plane_index(schema.HOST_PLANE)
    if plane is None:
        return []
    raw = fr.raw
    parts = [np.arange(fr.line_events(ln).start, fr.line_events(ln).stop, dtype=np.int64)
             for ln in fr.lines_of(plane)]
    if not parts:
        return []
    rows = np.concatenate(parts)
    md = fr.events["metadata"].to_numpy()[rows].astype(np.int64)
    names = raw.em_name
    is_iter_name = np.array([om.parse_tf_op(n)[0] == om.CAT_TF_DATA for n in names] + [False])
    md_i = np.where(md >= 0, md, len(names))
    iter_mask = is_iter_name[md_i]
    if not iter_mask.any():
        return []
    parent = om.line_parents(fr, plane, rows)
    pos = {int(r): i for i, r in enumerate(rows)}  # row -> index (tf.data users only: modest sizes)
    ids = _stat(fr, "id", rows)
    parent_ids = _stat(fr, "parent_id", rows)
    element = _stat(fr, "element_id", rows)
    start = fr.start_ps[rows].astype(np.int64)
    dur = raw.event_duration_ps[rows].astype(np.int64)

    # Children of each event: tf.data events nested directly, plus produced iterators.
    children: dict[int, list[int]] = {}
    for i in np.flatnonzero(iter_mask & (parent >= 0)).tolist():
        children.setdefault(pos[int(parent[i])], []).append(i)
    name_of = lambda i: names[md_i[i]] if md_i[i] < len(names) else ""
    produce_names = {k for k, n in enumerate(names) if n in _PRODUCE}
    consume_names = {k for k, n in enumerate(names) if n in _CONSUME}
    producers: dict[tuple[int, int], list[int]] = {}
    direct: dict[int, list[int]] = {}
    for i in np.flatnonzero(parent >= 0).tolist():
        direct.setdefault(pos[int(parent[i])], []).append(i)
    for i in np.flatnonzero(np.isin(md_i, list(produce_names)) & element[0]).tolist():
        for c in sorted(direct.get(i, []), key=lambda k: start[k]):
            if iter_mask[c]:
                if parent_ids[0][c]:
                    producers.setdefault((int(parent_ids[1][c]), int(element[1][i])), []).append(c)
                break
    for i in np.flatnonzero(np.isin(md_i, list(consume_names)) & element[0]).tolist():
        if parent[i] < 0:
            continue
        it = pos[int(parent[i])]
        if not iter_mask[it] or not ids[0][it]:
            continue
        for c in producers.get((int(ids[1][it]), int(element[1][i])), []):
            children.setdefault(it, []).append(c)

    # Root iterator calls (two-part names: `Iterator::Root`), grouped by iterator id.
    roots: dict[int, list[int]] = {}
    for i in np.flatnonzero(iter_mask & ids[0]).tolist():
        if len(name_of(i).split("::")) == 2:
            roots.setdefault(int(ids[1][i]), []).append(i)
    parent_of, names_of = _iterator_tree_ids(np.flatnonzero(iter_mask & ids[0]), ids, parent_ids, name_of)
    device = _device_roots(parent_of, names_of, set(roots))
    py_funcs = py_func_counts(fr) if roots else {}
    out = []
    numbers = {"host": 0, "device": 0}
    for root_id, calls in sorted(roots.items(), key=lambda kv: min(start[c] for c in kv[1])):
        side = "device" if root_id in device else "host"
        n_pipe = numbers[side]
        numbers[side] += 1
        calls.sort(key=lambda c: -dur[c])
        lat = dur[calls]
        stats, b_self, b_long = _bottleneck(calls[0], children, ids, start, dur, name_of)
        runs: list[tuple[int, float, float, str | None, float | None]] = []  # every call, slowest first,
        # with its own bottleneck (the first MAX_RUNS_WALKED)
        for rank, c in enumerate(calls, 1):
            r_self, r_long = b_self, b_long
            if rank > MAX_RUNS_WALKED:
                runs.append((rank, int(start[c]) / 1e6, int(dur[c]) / 1e6, None, None))
                continue
            if rank > 1:
                _, r_self, r_long = _bottleneck(c, children, ids, start, dur, name_of)
            runs.append((rank, int(start[c]) / 1e6, int(dur[c]) / 1e6, r_long.split("::")[-1], r_self / 1e6))
        members = {names_of[i] for i in names_of if _root_of(i, parent_of) == root_id}
        call_start = int(start[calls[0]])
        iters = pl.DataFrame([{"iterator": s["long_name"].split("::")[-1], "long_name": s["long_name"],
                               "is_async": s["long_name"].split("::")[-1] in _ASYNC, "calls": s["calls"],
                               "start_us": (s["start_ps"] - call_start) / 1e6,
                               "duration_us": s["dur_ps"] / 1e6, "self_time_us": s["self_ps"] / 1e6,
                               "blocking": s["blocking"], "depth": len(s["long_name"].split("::")) - 2}
                              for s in stats.values()])
        out.append(PipelineStats(
            host=host, name=f"{side.capitalize()}:{n_pipe}", root_id=root_id, calls=len(calls),
            avg_latency_ps=int(lat.sum() // len(lat)), min_latency_ps=int(lat.min()), max_latency_ps=int(lat.max()),
            slow_calls=int((lat > SLOW_CALL_PS).sum()), bottleneck_iterator=b_long.split("::")[-1] if b_long else "",
            bottleneck_long_name=b_long, bottleneck_latency_ps=int(b_self), iterators=iters, side=side,
            runs=pl.DataFrame(runs, schema=RUNS_SCHEMA, orient="row"),
            holds=_holds(members, py_funcs) if side == "host" else [],
        ))
    return out


def _bottleneck(call, children, ids, start, dur, name_of) -> tuple[dict[int, dict[str, Any]], int, str]:
    """One call's iterator stats, and its bottleneck: the largest self time on the blocking path."""
    stats: dict[int, dict[str, Any]] = {}
    _walk(call, True, 0, children, ids, start, dur, name_of, stats)
    blocking = [(s["self_ps"], it) for it, s in stats.items() if s["blocking"]]
    b_self, b_id = max(blocking, key=lambda x: x[0]) if blocking and max(blocking)[0] > 0 else (0, None)
    return stats, int(b_self), stats[b_id]["long_name"] if b_id is not None else ""


def _iterator_tree_ids(rows, ids, parent_ids, name_of) -> tuple[dict[int, int], dict[int, str]]:
    """{iterator id: its parent iterator's id} and {iterator id: long name} over every iterator event."""
    parent_of: dict[int, int] = {}
    names_of: dict[int, str] = {}
    for i in rows.tolist():
        it = int(ids[1][i])
        names_of.setdefault(it, name_of(i))
        if parent_ids[0][i]:
            parent_of.setdefault(it, int(parent_ids[1][i]))
    return parent_of, names_of


def _root_of(it: int, parent_of: dict[int, int]) -> int:
    for _ in range(100):  # XProf's depth limit
        if it not in parent_of:
            return it
        it = parent_of[it]
    return it


def _device_roots(parent_of: dict[int, int], names_of: dict[int, str], roots: set[int]) -> set[int]:
    """Roots of device input pipelines (XProf's rule: the pipeline whose iterator is the parent of an
    `Iterator::Prefetch::Generator`; TensorFlow now names it `Iterator::Root::Prefetch::Generator`,
    under the root's Prefetch, so the root is one step further up)."""
    found = set()
    for it, name in names_of.items():
        if name not in DEVICE_SECOND_ITERATORS or it not in parent_of:
            continue
        up = parent_of[it]
        if up in roots:
            found.add(up)
        elif parent_of.get(up) in roots:
            found.add(parent_of[up])
    return found


def _holds(members: set[str], py_funcs: dict[str, int]) -> list[tuple[str, str, str]]:
    """The Python a host pipeline runs, named from its iterators' long names (a from_generator source)
    and the py-function ops on tf.data's threads (given to a pipeline that maps or generates)."""
    generators = tuple(sorted(n for n in members if is_generator_source(n)))
    maps = any("Map" in n.split("::")[-1].split("[")[0] for n in members)
    return python_input_sources(TfInputFacts(generators=generators,
                                             py_funcs=py_funcs if maps or generators else {}))


def _walk(i, blocking, level, children, ids, start, dur, name_of, stats) -> None:
    """XProf's ProcessIteratorEvent: accumulate per-iterator time, self time and blocking."""
    if level > 100 or not ids[0][i]:
        return
    it = int(ids[1][i])
    s = stats.setdefault(it, {"long_name": name_of(i), "dur_ps": 0, "self_ps": 0, "calls": 0, "blocking": False,
                              "start_ps": int(start[i])})
    s["start_ps"] = min(s["start_ps"], int(start[i]))
    s["dur_ps"] += int(dur[i])
    self_ps = int(dur[i])
    a, b = int(start[i]), int(start[i] + dur[i])
    for c in children.get(i, []):
        ov = max(0, min(b, int(start[c] + dur[c])) - max(a, int(start[c])))
        _walk(c, blocking and ov > 0, level + 1, children, ids, start, dur, name_of, stats)
        self_ps -= ov
    s["self_ps"] += self_ps
    s["blocking"] = s["blocking"] or blocking
    s["calls"] += 1


def _stat(fr: XSpaceFrame, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return om.event_stat(fr, name, rows)

"""TensorFlow input facts of one host, for the Advice checks (issue #31): where the dataset iterator is
called relative to the steps, and what Python the input pipelines hold. Computed in the op-stats map
(HostOpStats.tf_input), so the checks read them without the frame.

Iterator outside the step: the Profiler guide asks for the dataset's next() inside the step's
`tf.profiler.experimental.Trace(..., step_num=..., _r=1)` context; outside it the input time falls
between steps, where the input pipeline analysis cannot count it as the step waiting for input. Seen
here as root iterator calls (`Iterator::Root`, or any two-part `Iterator::X` name) on a host thread that
runs step events (XProf's step groups' roots) but nested in none of them.

Pipeline shape: file readers with no parallel interleave above them (TFRecordDataset without
num_parallel_reads reads its files one after the other, in a FlatMap), and a Shard above file reading,
mapping or shuffling (sharded late). A TensorFlow program (tf.function runs, `__inference_...`) is
noted so a check can see it ran without XLA.

Python in the pipeline: a `Dataset.from_generator` source (an iterator whose long name ends in
`::Generator` under a FlatMap: `Iterator::Root::...::FlatMap[0]::Generator`; not a distribution
strategy's device-side `Iterator::[Root::]Prefetch::Generator`), and py-function ops (`PyFunc`:
tf.numpy_function, the generator's own calls; `EagerPyFunc`: tf.py_function) run on tf.data's threads.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from tputui.analysis.event_grouping import HostGrouping
from tputui.analysis.event_groups import root_candidates
from tputui.data import schema
from tputui.data.xspace import XSpaceFrame

ITERATOR_PREFIX = "Iterator::"
DEVICE_SECOND_ITERATORS = ("Iterator::Prefetch::Generator", "Iterator::Root::Prefetch::Generator")
FILE_READERS = {"TFRecord", "TextLine", "FixedLengthRecord"}
SHARD_AFTER = {"Map", "ParallelMap", "MapAndBatch", "Shuffle", "ShuffleAndRepeat", "FlatMap", "Interleave",
               "ParallelInterleave", "TFRecord", "TextLine", "FixedLengthRecord"}
TF_FUNCTION = re.compile(r"^(EagerLocalExecute: )?__inference_")
PY_FUNC_OPS = {"PyFunc": "tf.numpy_function", "EagerPyFunc": "tf.py_function"}
_TF_DATA_THREAD = re.compile(r"^tf_data_")


@dataclass(frozen=True)
class TfInputFacts:
    iterator_calls: int = 0  # root iterator calls on threads that run steps
    outside_calls: int = 0  # of them, nested in no step of their thread
    outside_ps: int = 0  # their time
    outside_thread: str = ""  # the thread with the most of them
    step_threads: int = 0  # threads with step events and iterator calls
    generators: tuple[str, ...] = ()  # from_generator iterators (long names)
    py_funcs: dict[str, int] = field(default_factory=dict)  # op (PyFunc / EagerPyFunc) -> events on tf.data threads
    sequential_reads: tuple[str, ...] = ()  # file readers with no parallel interleave above them (long names)
    late_shards: tuple[str, ...] = ()  # Shard iterators with reading / mapping / shuffling below them
    tf_function_calls: int = 0  # tf.function runs (`__inference_...` events): a TensorFlow program

    @property
    def iterator_outside_steps(self) -> bool:
        """Most root iterator calls on step threads fall outside every step."""
        return self.outside_calls > 0 and 2 * self.outside_calls >= self.iterator_calls


def _kind(segment: str) -> str:
    """An iterator name's segment without its input index and version: `ParallelMap` of `ParallelMapV2[0]`."""
    return re.sub(r"V\d+$", "", re.sub(r"\[\d+\]$", "", segment))


def is_sequential_read(name: str) -> bool:
    """A file reader (TFRecord, TextLine, FixedLengthRecord) not under a parallel interleave: its files are
    read one after the other (TFRecordDataset without num_parallel_reads reads them in a FlatMap)."""
    parts = [_kind(p) for p in name.split("::")[1:]]
    return bool(parts) and parts[-1] in FILE_READERS and "ParallelInterleave" not in parts


def late_shard_of(name: str) -> str | None:
    """The Shard iterator above this one (its long name) when this one reads files, maps or shuffles:
    the shard comes after that work, so every worker does all of it and keeps 1/N."""
    segments = name.split("::")
    kinds = [_kind(p) for p in segments]
    if "Shard" not in kinds[1:]:
        return None
    at = kinds.index("Shard", 1)
    return "::".join(segments[:at + 1]) if any(k in SHARD_AFTER for k in kinds[at + 1:]) else None


def _dedupe(names) -> tuple[str, ...]:
    """One long name per iterator position (inputs `[k]` of a FlatMap / interleave collapsed)."""
    out: dict[str, str] = {}
    for n in sorted(names):
        out.setdefault(re.sub(r"\[\d+\]", "[*]", n), n)
    return tuple(out.values())


def is_root_iterator(name: str) -> bool:
    return name.startswith(ITERATOR_PREFIX) and name.count("::") == 1


def is_generator_source(name: str) -> bool:
    """A from_generator source (not the device-side prefetch's generator)."""
    return name.startswith(ITERATOR_PREFIX) and name.endswith("::Generator") and name not in DEVICE_SECOND_ITERATORS


def host_tf_input(frame: XSpaceFrame, grouping: HostGrouping) -> TfInputFacts | None:
    """The host's facts; None when its host plane has no tf.data iterator event."""
    plane = frame.plane_index(schema.HOST_PLANE)
    names = frame.raw.em_name
    if plane is None or not any(n.startswith(ITERATOR_PREFIX) for n in names):
        return None
    raw = frame.raw
    md_all = frame.events["metadata"].to_numpy()
    root_md = np.array([is_root_iterator(n) for n in names] + [False])
    step_rows = _step_rows(frame, grouping)
    calls = outside = outside_ps = threads = 0
    per_thread: dict[str, int] = {}
    for ln in frame.lines_of(plane):
        sl = frame.line_events(ln)
        md = md_all[sl].astype(np.int64)
        md = np.where(md >= 0, md, len(names))
        line_name = raw.line_name[ln]
        rows = np.arange(sl.start, sl.stop)
        steps = step_rows[(step_rows >= sl.start) & (step_rows < sl.stop)]
        iters = rows[root_md[md]]
        if not len(steps) or not len(iters):
            continue
        threads += 1
        s_start = frame.start_ps[steps].astype(np.int64)
        order = np.argsort(s_start, kind="stable")
        s_start = s_start[order]
        s_end = s_start + raw.event_duration_ps[steps][order].astype(np.int64)
        i_start = frame.start_ps[iters].astype(np.int64)
        i_end = i_start + raw.event_duration_ps[iters].astype(np.int64)
        # The step starting last at or before the call holds it if it ends after the call (a thread's
        # steps do not overlap).
        k = np.searchsorted(s_start, i_start, "right") - 1
        inside = (k >= 0) & (s_end[np.maximum(k, 0)] >= i_end)
        calls += len(iters)
        out = int((~inside).sum())
        outside += out
        outside_ps += int((i_end - i_start)[~inside].sum())
        if out:
            per_thread[line_name] = per_thread.get(line_name, 0) + out
    generators = tuple(sorted({n for n in names if is_generator_source(n)}))
    tf_functions = [k for k, n in enumerate(names) if TF_FUNCTION.match(n)]
    return TfInputFacts(calls, outside, outside_ps, max(per_thread, key=per_thread.__getitem__) if per_thread else "",
                        threads, generators, py_func_counts(frame),
                        _dedupe(n for n in names if is_sequential_read(n)),
                        _dedupe({shard for n in names if n.startswith(ITERATOR_PREFIX)
                                 for shard in [late_shard_of(n)] if shard}),
                        int(np.isin(md_all, tf_functions).sum()) if tf_functions else 0)


def _step_rows(frame: XSpaceFrame, grouping: HostGrouping) -> np.ndarray:
    """Frame rows of the host's step events: the roots of XProf's step groups."""
    if not grouping.enabled or not grouping.count:
        return np.zeros(0, np.int64)
    candidates = root_candidates(frame)
    if not grouping.fits(candidates):
        return np.zeros(0, np.int64)
    ranks = grouping.root_rank[grouping.root_rank >= 0]
    return np.sort(candidates[ranks])


def python_input_sources(facts: TfInputFacts) -> list[tuple[str, str, str]]:
    """What Python the host's input pipelines hold: (kind, what it is, the evidence)."""
    out = [("from_generator", "a Python generator (tf.data.Dataset.from_generator)", name) for name in facts.generators]
    eager = facts.py_funcs.get("EagerPyFunc", 0)
    plain = facts.py_funcs.get("PyFunc", 0)
    if eager:
        out.append(("py_function", "a tf.py_function", f"{eager:,} EagerPyFunc ops on tf.data threads"))
    if plain and not facts.generators:  # a generator's own calls are PyFunc ops too
        out.append(("numpy_function", "a tf.numpy_function", f"{plain:,} PyFunc ops on tf.data threads"))
    return out


PYTHON_INPUT_CHANGE = {
    "from_generator": "a generator runs on one thread under the GIL, so tf.data cannot parallelize it: write the "
                      "data to TFRecord shards and read them with TFRecordDataset(files, num_parallel_reads="
                      "tf.data.AUTOTUNE) (from_tensor_slices for data in memory), or interleave several "
                      "generator datasets over shards of the data",
    "py_function": "tf.py_function runs Python under the GIL one element at a time, whatever num_parallel_calls "
                   "says: rewrite the map in TensorFlow ops (tf.image, tf.strings, tf.io), or do the work offline",
    "numpy_function": "tf.numpy_function runs Python under the GIL one element at a time, whatever "
                      "num_parallel_calls says: rewrite the map in TensorFlow ops, or do the work offline",
}


def is_tf_data_thread(line_name: str) -> bool:
    return bool(_TF_DATA_THREAD.match(line_name))


def py_func_counts(frame: XSpaceFrame) -> dict[str, int]:
    """Py-function ops (PyFunc / EagerPyFunc) run on the host plane's tf.data threads."""
    plane = frame.plane_index(schema.HOST_PLANE)
    names = frame.raw.em_name
    py_md = {k: op for k, n in enumerate(names) for op in PY_FUNC_OPS if n.split(":")[0] == op}
    if plane is None or not py_md:
        return {}
    md_all = frame.events["metadata"].to_numpy()
    out: dict[str, int] = {}
    for ln in frame.lines_of(plane):
        if is_tf_data_thread(frame.raw.line_name[ln]):
            md = md_all[frame.line_events(ln)]
            for k, c in zip(*np.unique(md[np.isin(md, list(py_md))], return_counts=True)):
                out[py_md[int(k)]] = out.get(py_md[int(k)], 0) + int(c)
    return out

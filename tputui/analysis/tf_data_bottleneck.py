"""tf.data bottleneck analysis as its own tool: every host input pipeline, slowest first, with the
iterator tree of its slowest call (start from the call's start, duration, self time, calls per
iterator), the critical path (the iterators the call waited on) and the bottleneck iterator's
suggestion; every other call (run) of a pipeline, slowest first, with its own bottleneck; a
distribution strategy's device-side pipelines apart (after the host ones, as XProf's Device:N);
advice named from the Python a pipeline holds (a from_generator source, a py_function map). The
analysis itself is tputui/analysis/tf_data.py (XProf's xplane_to_tf_data_stats.cc), which the input
pipeline analyzer also summarizes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tputui.analysis import host_map, tf_data, tool_facts
from tputui.analysis.result import NoDataError
from tputui.analysis.tf_input import PYTHON_INPUT_CHANGE
from tputui.data.run_data import RunData

# What to change, by the kind of bottleneck iterator (tf.data performance guide), beside XProf's text.
SPECIFIC = [
    (("MapAndBatch", "ParallelMap", "Map", "ParallelBatch"),
     "map: set num_parallel_calls=tf.data.AUTOTUNE (a py_function / numpy_function runs on one thread "
     "under the GIL: move it to TensorFlow ops, or out of the pipeline), vectorize the map by batching first "
     "and mapping over the batch, and cache() after it if the result fits in memory."),
    (("ParallelInterleave", "Interleave", "LegacyParallelInterleave"),
     "interleave: set num_parallel_calls=tf.data.AUTOTUNE and cycle_length to read several files at once; "
     "use deterministic=False if order does not matter."),
    (("Batch", "PaddedBatch", "Unbatch"),
     "batch: batch is sequential; batch after the expensive map (vectorized map), or use "
     "num_parallel_calls on batch, and keep the batch size a multiple of 8 per core."),
    (("Prefetch",),
     "prefetch: the buffer ran dry, so the producer upstream is the real cost: look at its children; "
     "prefetch(tf.data.AUTOTUNE) at the end only hides a producer that is fast enough on average."),
    (("TFRecord", "TextLine", "FixedLengthRecordV2", "TensorSlice", "Generator"),
     "source: read files in parallel (TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE), or interleave "
     "over shards), keep data close to the host, and prefer TFRecord shards of 100+ MB; a Python generator is "
     "single-threaded."),
]


def specific_advice(iterator: str) -> str:
    for names, text in SPECIFIC:
        if iterator in names:
            return text
    return ""


def pipeline_advice(pipe: tf_data.PipelineStats) -> str:
    """What to change, named from what the pipeline holds (a from_generator source, a py_function
    map: tf_input.py) when it holds Python, else from its bottleneck iterator's kind."""
    if pipe.holds:
        return " ".join(f"It runs {what} ({evidence}): {PYTHON_INPUT_CHANGE[kind]}."
                        for kind, what, evidence in pipe.holds)
    return specific_advice(pipe.bottleneck_iterator)


@dataclass
class TfDataBottleneckResult:
    analysis: tf_data.TfDataAnalysis

    @property
    def pipelines(self) -> list[tf_data.PipelineStats]:
        """The host pipelines, slowest first, then the device-side ones (a distribution strategy's)."""
        return self.analysis.pipelines + self.analysis.device_pipelines

    def pipeline_frame(self) -> pl.DataFrame:
        rows = [p.to_json() for p in self.pipelines]
        frame = pl.DataFrame(rows) if rows else pl.DataFrame()
        return frame.drop("suggestion", "bottleneck_iterator_long_name", strict=False)

    def runs(self, index: int) -> pl.DataFrame:
        """Every call (run) of the pipeline, slowest first, each with its own bottleneck iterator."""
        return self.pipelines[index].runs

    def iterator_tree(self, index: int) -> pl.DataFrame:
        """The slowest call's iterators depth first (children by start time), with their `parent`
        (long name, "" for the root), `critical` (on the blocking path) and `bottleneck` flags."""
        p = self.pipelines[index]
        names = p.iterators["long_name"].to_list()
        parent = {n: _parent(n, names) for n in names}
        start = dict(zip(names, p.iterators["start_us"].to_list()))
        order: list[str] = []

        def visit(node: str) -> None:
            order.append(node)
            for child in sorted((c for c in names if parent[c] == node), key=lambda c: (start[c], c)):
                visit(child)

        for root in sorted((n for n in names if not parent[n]), key=lambda n: (start[n], n)):
            visit(root)
        rank = {n: i for i, n in enumerate(order)}
        return (p.iterators.with_columns(parent=pl.col("long_name").replace_strict(parent, return_dtype=pl.String),
                                         critical=pl.col("blocking"),
                                         bottleneck=pl.col("long_name") == p.bottleneck_long_name,
                                         _rank=pl.col("long_name").replace_strict(rank, return_dtype=pl.Int64))
                .sort("_rank").drop("_rank", "blocking"))

    def to_json(self) -> dict[str, Any]:
        out = self.analysis.to_json()
        rows = out["pipelines"] + out["device_pipelines"]  # the order of self.pipelines
        for i, (row, pipe) in enumerate(zip(rows, self.pipelines)):
            row["advice"] = pipeline_advice(pipe)
            row["holds"] = [{"kind": k, "what": w, "evidence": e} for k, w, e in pipe.holds]
            row["iterators"] = self.iterator_tree(i).to_dicts()
            row["runs"] = pipe.runs.to_dicts()
        return out

    def tables(self) -> dict[str, pl.DataFrame]:
        def tagged(frames: list[pl.DataFrame]) -> pl.DataFrame:
            if not frames:
                return pl.DataFrame()
            both = pl.concat(frames)
            return both.select("host", "input_pipeline", *[c for c in both.columns if c not in ("host", "input_pipeline")])

        label = [(pl.lit(p.host).alias("host"), pl.lit(p.name).alias("input_pipeline")) for p in self.pipelines]
        return {"pipelines": self.pipeline_frame(),
                "iterators": tagged([self.iterator_tree(i).with_columns(*label[i]) for i in range(len(label))]),
                "runs": tagged([p.runs.with_columns(*label[i]) for i, p in enumerate(self.pipelines)])}


def _parent(name: str, names: list[str]) -> str:
    """The iterator whose long name prefixes this one ("A::B" for "A::B::C" or "A::B[0]::C")."""
    best = ""
    for other in names:
        if other != name and name.startswith(other) and name[len(other):len(other) + 1] in (":", "[") \
                and len(other) > len(best):
            best = other
    return best


def has_data(run: RunData) -> bool:
    return any(tool_facts.TF_DATA in facts for facts in host_map.host_facts(run)) if run.hosts else False


def analyze(run: RunData, host: str | None = None, **_options) -> TfDataBottleneckResult:
    hosts = [host] if host else run.require_hosts()
    analysis = tf_data.analyze_run(run, hosts)
    if not analysis.pipelines and not analysis.device_pipelines:
        raise NoDataError("no tf.data input pipeline in this profile (iterator events come from TensorFlow's "
                          "tf.data with the host tracer on)")
    return TfDataBottleneckResult(analysis)

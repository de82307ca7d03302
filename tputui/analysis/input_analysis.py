"""XProf's input-pipeline analysis of combined op stats: per-step breakdown and the verdict.

Shared by the input pipeline analyzer and the overview page (XProf's overview embeds this
analysis). Device side: per-step time and its breakdown, % of each step waiting for input; host
side: the tf.data / enqueue ops on the host threads (count, total and self time, category) and the
host time split into enqueue / demanded file read / advanced file read / preprocessing; the verdict
and next step in XProf's words.

Facts from XProf (op_stats_to_input_pipeline_analysis.cc): input = host wait-for-input + host-to-device
time; a program is HIGHLY input-bound from 20% of step time, MODERATELY from 5%, POTENTIALLY when
'All others' time reaches 3%; input ops are tf.data iterators (`Iterator::...`), infeed enqueue and
host-to-device memcpy, ranked by self time; iterators reading files (TFRecord, TextLine, ...) are file
reads, "in advance" under Prefetch / Interleave / ParallelMap / MemoryReader; the rest preprocessing.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis import op_metrics as om
from tputui.analysis import steps as st
from tputui.analysis.op_stats import OpStats
from tputui.analysis.tpu_steps import HostSteps, align_steps, combine_hosts, step_span
from tputui.data.stat_values import to_float

HIGHLY_INPUT_BOUND, MODERATELY_INPUT_BOUND = 20.0, 5.0
HIGHLY_OUTPUT_BOUND, MODERATELY_OUTPUT_BOUND = 20.0, 5.0
HIGHLY_KERNEL_LAUNCH, MODERATELY_KERNEL_LAUNCH = 15.0, 3.0
HIGHLY_ALL_OTHER, MODERATELY_ALL_OTHER = 15.0, 3.0
HIGHLY_COLLECTIVES, MODERATELY_COLLECTIVES = 15.0, 3.0

# Per-step breakdown columns (ms) in XProf's step-time graph order, with their labels.
GENERIC_COLUMNS = {
    "device_compute_ms": "Device compute",
    "device_to_device_ms": "Device to device",
    "device_collectives_ms": "Device collective communication",
    "host_compute_ms": "Host compute",
    "kernel_launch_ms": "Kernel launch",
    "input_ms": "Input",
    "output_ms": "Output",
    "compile_ms": "Compilation",
    "other_ms": "All others",
}

NO_STEP_STATEMENT = "No step time measured. Therefore we cannot tell where the performance bottleneck is."
ALL_OTHERS_PYTHON = (" % of the total step time sampled is spent on 'All Others' time. "
                     "This could be due to Python execution overhead.")
KERNEL_LAUNCH_TF_DATA = (" It could be due to CPU contention with tf.data. In this case, you may try to "
                         "set the environment variable TF_GPU_THREAD_MODE=gpu_private.")
TF_DATA_GUIDE = "https://www.tensorflow.org/guide/data"
_DATASET = "https://www.tensorflow.org/api_docs/python/tf/data/Dataset#"
_TFRECORD = "https://www.tensorflow.org/api_docs/python/tf/data/TFRecordDataset#class_tfrecorddataset"
RECOMMENDATIONS = [  # XProf's text, links written as "text (url)"
    "Enqueuing data: you may want to combine small input data chunks into fewer but larger chunks.",
    (f"Data preprocessing: you may increase num_parallel_calls in Dataset map() ({_DATASET}map) or "
     "preprocess the data OFFLINE."),
    ("Reading data from files in advance: you may tune parameters in the following tf.data API "
     f"(prefetch size ({_DATASET}prefetch), interleave cycle_length ({_DATASET}interleave), reader "
     f"buffer_size ({_TFRECORD}))"),
    ("Reading data from files on demand: you should read data IN ADVANCE using the following tf.data API "
     f"(prefetch ({_DATASET}prefetch), interleave ({_DATASET}interleave), reader buffer ({_TFRECORD}))"),
    ("Other data reading or processing: you may consider using the tf.data API "
     "(https://www.tensorflow.org/programmers_guide/datasets) (if you are not using it now)"),
]


def one_digit(x: float) -> str:
    """XProf's OneDigit (absl %.1f)."""
    return f"{x:.1f}"


def html_to_text(s: str) -> str:
    """XProf's statements carry <a href> links; the terminal shows 'text (url)'."""
    s = re.sub(r'<a href="([^"]*)"[^>]*>(.*?)</a>', r"\2 (\1)", s)
    return html.unescape(re.sub(r"<[^>]+>", "", s))


# --- step breakdown -------------------------------------------------------------------------------
# --- TPU: XProf's per-step details across cores -------------------------------------------------------
TPU_COLUMNS = {
    "tc_compute_ms": "TensorCore compute", "scv0_compute_ms": "SparseCoreV0 compute",
    "scv0_infeed_ms": "SparseCoreV0 input", "tc_infeed_ms": "TensorCore input",
    "tc_outfeed_ms": "TensorCore output", "tc_idle_ms": "TensorCore idle", "host_transfer_ms": "Host transfer",
}


def _tpu_fields(cats: dict[str, int], step_ps: int) -> dict[str, int]:
    """XProf's TpuStepBreakdown of one core's step from its op self time per HLO category."""
    t = {c: v for c, v in cats.items() if c != "IDLE"}
    total = sum(t.values())
    g = lambda *names: sum(t.get(n, 0) for n in names)
    sc_in, sc_out = g("sparsecorev0 infeed"), g("sparsecorev0 outfeed")
    transform = min(sc_in, sc_out)
    return {"infeed": g("infeed"), "outfeed": g("outfeed"), "idle": max(step_ps, total) - total,
            "host_send": g("host send", "host send-done"), "host_recv": g("host recv", "host recv-done"),
            "wait_scv0": sc_in - transform, "scv0_transform": transform}


def _step_sources(hosts: list[HostSteps]) -> list[dict[int, tuple]]:
    """For each step XProf keeps (tpu_steps.combine_hosts), each host's own step (begin, dur)."""
    if len(hosts) == 1:
        return [{0: (b, d)} for _, b, d, _ in hosts[0].steps]
    any_device = any(h.has_device for h in hosts)
    workers = [(i, h) for i, h in enumerate(hosts) if h.has_device or not any_device]
    spans = {i: [step_span(x) for x in h.steps] for i, h in workers}
    chief, best = None, None
    for i, _ in workers:
        lo = min((a for a, _ in spans[i]), default=None)
        hi = max((b for _, b in spans[i]), default=0)
        dur = (hi - lo) if (lo is not None and lo < hi) else 0
        if best is None or dur < best:
            chief, best = i, dur
    if chief is None:
        return []
    align = {i: ((0, 0, len(h.steps)) if i == chief else align_steps(spans[i], spans[chief])) for i, h in workers}
    begin = max(a[1] for a in align.values())
    end = min(a[1] + a[2] for a in align.values())
    out = []
    for k in range(max(0, end - begin)):
        src = {}
        for i, h in workers:
            bs, bc, _ = align[i]
            _, b, d, _ = h.steps[bs + (begin - bc) + k]
            src[i] = (b, d)
        out.append(src)
    return out


def tpu_step_table(hosts: list[HostSteps], allreduce: list[dict]) -> pl.DataFrame | None:
    """XProf's PerTpuStepDetails per step (ComputeTpuPerStepDataAcrossCores), in ms / %: TensorCore
    compute = the least step time minus waiting for the host over cores; input = the most infeed;
    output = mean outfeed; idle = the shortest step minus all that; input % avg/min/max over cores;
    all-reduce compute / sync from the all-reduce ops shared across cores (the core with the most).
    `hosts` are the hosts' per-core step databases, `allreduce` their all-reduce spans per core."""
    combined, cores, _ = combine_hosts(hosts)
    if not combined:
        return None
    sources = _step_sources(hosts)
    rows = []
    for k, (step, per_core) in enumerate(combined):
        opt, infeed, outfeed, sends, durs, pct = [], [], [], [], [], []
        for core, (d, cats, generic) in per_core.items():
            if core not in cores or generic:
                continue
            f = _tpu_fields(cats, d)
            durs.append(d)
            infeed.append(f["infeed"])
            outfeed.append(f["outfeed"])
            sends.append(f["host_send"] + f["host_recv"])
            wait = f["infeed"] + f["outfeed"] + f["host_send"] + f["host_recv"] + f["idle"] + f["wait_scv0"]
            opt.append(d - wait)
            pct.append(100.0 * (f["infeed"] + f["wait_scv0"]) / d if d else 0.0)
        if not durs:
            continue
        # All-reduce: per unique id the fastest core's time is compute, the rest is waiting (sync).
        per_core_ar: dict[tuple[int, int], list] = {}
        fastest: dict[int, int] = {}
        for hid, (b, d) in (sources[k].items() if k < len(sources) else []):
            for plane, (s, e, uid) in allreduce[hid].items():
                sel = (s >= b) & (e <= b + d)
                dd, uu = (e - s)[sel], uid[sel]
                per_core_ar[(hid, plane)] = list(zip(dd.tolist(), uu.tolist()))
                for x, u in zip(dd.tolist(), uu.tolist()):
                    fastest[u] = min(fastest.get(u, x), x)
        ar_compute = ar_sync = 0
        for events in per_core_ar.values():
            c = sum(fastest[u] for _, u in events)
            sync = sum(x for x, _ in events) - c
            if c + sync > ar_compute + ar_sync:
                ar_compute, ar_sync = c, sync
        compute = min(opt) / 1e9
        tc_infeed, tc_outfeed = max(infeed) / 1e9, float(np.mean(outfeed)) / 1e9
        host_transfer = max(sends) / 1e9
        idle = max(0.0, min(durs) / 1e9 - (compute + tc_infeed + tc_outfeed))
        rows.append({
            "step": int(step), "name": str(step), "step_time_ms": max(durs) / 1e9, "min_step_time_ms": min(durs) / 1e9,
            "tc_compute_ms": compute, "scv0_compute_ms": 0.0, "scv0_infeed_ms": 0.0, "tc_infeed_ms": tc_infeed,
            "tc_outfeed_ms": tc_outfeed, "tc_idle_ms": idle, "host_transfer_ms": host_transfer,
            "all_reduce_compute_ms": ar_compute / 1e9, "all_reduce_sync_ms": ar_sync / 1e9,
            "infeed_percent_avg": float(np.mean(pct)), "infeed_percent_min": min(pct),
            "infeed_percent_max": max(pct), "cores": len(durs),
        })
    return pl.DataFrame(rows) if rows else None


def tpu_generic_table(tpu: pl.DataFrame) -> pl.DataFrame:
    """The TPU step details in the generic step-table columns (compute / input / output / idle)."""
    return tpu.select(
        "step", "name", "step_time_ms",
        device_compute_ms=pl.col("tc_compute_ms") + pl.col("scv0_compute_ms"), device_to_device_ms=pl.lit(0.0),
        device_collectives_ms=pl.lit(0.0), host_compute_ms=pl.lit(0.0), kernel_launch_ms=pl.lit(0.0),
        input_ms=pl.col("tc_infeed_ms") + pl.col("scv0_infeed_ms"), output_ms="tc_outfeed_ms",
        compile_ms=pl.lit(0.0), other_ms="tc_idle_ms", host_to_device_ms=pl.lit(0.0),
        input_percent="infeed_percent_max",
        **{c: c for c in TPU_COLUMNS if c not in ("tc_outfeed_ms",)},
        tc_outfeed_ms_=pl.col("tc_outfeed_ms"), infeed_percent_avg="infeed_percent_avg",
        infeed_percent_min="infeed_percent_min", infeed_percent_max="infeed_percent_max",
    ).rename({"tc_outfeed_ms_": "tc_outfeed_ms"})


def tpu_bottleneck(tpu: pl.DataFrame | None) -> Bottleneck:
    """XProf's TpuBottleneckAnalysis: input % of the summed step time (compute + input + all-reduce
    + output + idle), HIGHLY / MODERATELY / NOT input-bound as for generic hardware."""
    if tpu is None or not len(tpu):
        return Bottleneck()
    step = (tpu["tc_compute_ms"] + tpu["scv0_compute_ms"] + tpu["tc_infeed_ms"] + tpu["scv0_infeed_ms"] +
            tpu["all_reduce_compute_ms"] + tpu["all_reduce_sync_ms"] + tpu["tc_outfeed_ms"] + tpu["tc_idle_ms"])
    total = float(step.sum())
    if total == 0:
        return Bottleneck()
    input_p = 100.0 * float((tpu["tc_infeed_ms"] + tpu["scv0_infeed_ms"]).sum()) / total
    output_p = 100.0 * float(tpu["tc_outfeed_ms"].sum()) / total
    idle_p = 100.0 * float(tpu["tc_idle_ms"].sum()) / total
    b = Bottleneck(input_percent=input_p, output_percent=output_p, idle_percent=idle_p,
                   compute_percent=max(0.0, 100.0 - input_p - output_p - idle_p))
    _input_analysis(input_p, 0.0, b)
    b.output_statement = _output_statement(output_p)
    b.kernel_launch_classification = b.all_other_classification = b.device_collectives_classification = ""
    return b


def generic_step_table(steps: st.StepDb) -> pl.DataFrame:
    """One row per step in ms: XProf's generic step-time graph columns, step time and input %."""
    df = steps.per_step()
    if not len(df):
        return pl.DataFrame(schema={"step": pl.Int64, "name": pl.String, "step_time_ms": pl.Float64,
                                    **{c: pl.Float64 for c in GENERIC_COLUMNS}, "host_to_device_ms": pl.Float64,
                                    "input_percent": pl.Float64})
    ms = lambda *cols: sum(pl.col(f"{c}_ps") for c in cols) / 1e9
    if steps.kind == "device":
        # TPU: compute / input (infeed) / output (outfeed) / collectives / idle of the slowest core.
        out = df.select(
            "step", "name", step_time_ms=pl.col("duration_ps") / 1e9,
            device_compute_ms=ms("device_compute_16", "device_compute_32"),
            device_to_device_ms=ms("device_to_device", "device_wait_device"),
            device_collectives_ms=ms("device_collectives"), host_compute_ms=pl.lit(0.0),
            kernel_launch_ms=pl.lit(0.0), input_ms=ms("device_wait_host", "host_to_device", "host_wait_input"),
            output_ms=ms("device_to_host"), compile_ms=pl.lit(0.0), other_ms=ms("unknown"),
            host_to_device_ms=ms("host_to_device", "device_wait_host"),
        )
    else:
        out = df.select(
            "step", "name", step_time_ms=pl.col("duration_ps") / 1e9,
            device_compute_ms=ms("device_compute_16", "device_compute_32"),
            device_to_device_ms=ms("device_to_device", "device_wait_device"),
            device_collectives_ms=ms("device_collectives"), host_compute_ms=ms("host_compute"),
            kernel_launch_ms=ms("host_prepare"), input_ms=ms("host_wait_input", "host_to_device",
                                                           "device_wait_host"),
            output_ms=ms("device_to_host"), compile_ms=ms("host_compile"), other_ms=ms("unknown"),
            host_to_device_ms=ms("host_to_device", "device_wait_host"),
        )
    return out.with_columns(input_percent=pl.when(pl.col("step_time_ms") > 0).then(
        100.0 * pl.col("input_ms") / pl.col("step_time_ms")).otherwise(0.0))


def per_core_ranges(steps: st.StepDb) -> pl.DataFrame | None:
    """TPU: per step, the range of step time and input % across cores (None for host steps)."""
    if steps.kind != "device" or not len(steps.steps):
        return None
    return steps.steps.with_columns(
        t=pl.col("duration_ps") / 1e9,
        inp=100.0 * pl.col("device_wait_host_ps") / pl.col("duration_ps"),
    ).group_by("step", maintain_order=True).agg(
        cores=pl.len(), step_time_min_ms=pl.col("t").min(), step_time_max_ms=pl.col("t").max(),
        input_percent_min=pl.col("inp").min(), input_percent_avg=pl.col("inp").mean(),
        input_percent_max=pl.col("inp").max(),
    )


@dataclass
class Bottleneck:
    """XProf's BottleneckAnalysis (generic hardware)."""
    input_classification: str = "unknown"
    input_statement: str = NO_STEP_STATEMENT
    output_statement: str = ""
    kernel_launch_classification: str = "no"
    kernel_launch_statement: str = ""
    all_other_classification: str = "no"
    all_other_statement: str = ""
    device_collectives_classification: str = "no"
    device_collectives_statement: str = ""
    input_percent: float = 0.0
    output_percent: float = 0.0
    idle_percent: float = 0.0
    compute_percent: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def bottleneck_analysis(table: pl.DataFrame, tf_data_used: bool) -> Bottleneck:
    total = float(table["step_time_ms"].sum()) if len(table) else 0.0
    if total == 0:
        return Bottleneck()
    pct = lambda col: 100.0 * float(table[col].sum()) / total
    input_p, output_p = pct("input_ms"), pct("output_ms")
    compute_p, coll_p = pct("device_compute_ms"), pct("device_collectives_ms")
    idle_p = max(0.0, 100.0 - input_p - output_p - compute_p - coll_p)
    launch_p, other_p = pct("kernel_launch_ms"), pct("other_ms")
    b = Bottleneck(input_percent=input_p, output_percent=output_p, idle_percent=idle_p,
                   compute_percent=compute_p)
    other_reported = _input_analysis(input_p, other_p, b)
    b.output_statement = _output_statement(output_p)
    for cls_attr, st_attr, p, hi, mod, tail in (
        ("device_collectives_classification", "device_collectives_statement", coll_p,
         HIGHLY_COLLECTIVES, MODERATELY_COLLECTIVES,
         " % of the total step time sampled is spent on 'Device Collective Communication'."),
        ("kernel_launch_classification", "kernel_launch_statement", launch_p,
         HIGHLY_KERNEL_LAUNCH, MODERATELY_KERNEL_LAUNCH,
         " % of the total step time sampled is spent on 'Kernel Launch'." +
         (KERNEL_LAUNCH_TF_DATA if tf_data_used else "")),
    ):
        level = "high" if p >= hi else "moderate" if p >= mod else "no"
        setattr(b, cls_attr, level)
        setattr(b, st_attr, one_digit(p) + tail if level != "no" else "")
    if other_reported:
        b.all_other_classification, b.all_other_statement = "no", ""
    else:
        level = "high" if other_p >= HIGHLY_ALL_OTHER else "moderate" if other_p >= MODERATELY_ALL_OTHER else "no"
        b.all_other_classification = level
        b.all_other_statement = one_digit(other_p) + ALL_OTHERS_PYTHON if level != "no" else ""
    return b


def _input_analysis(input_p: float, other_p: float, b: Bottleneck) -> bool:
    """XProf's InputAnalysis; True when 'All others' time was reported in the statement."""
    if input_p >= HIGHLY_INPUT_BOUND:
        b.input_classification = "host"
        b.input_statement = (f"Your program is HIGHLY input-bound because {one_digit(input_p)}% of the total "
                             "step time sampled is waiting for input. Therefore, you should first focus on "
                             "reducing the input time.")
        return False
    if input_p >= MODERATELY_INPUT_BOUND:
        b.input_classification = "both"
        b.input_statement = (f"Your program is MODERATELY input-bound because {one_digit(input_p)}% of the "
                             "total step time sampled is waiting for input. Therefore, you would need to "
                             "reduce both the input time and other time.")
        return False
    if other_p >= MODERATELY_ALL_OTHER:
        b.input_classification = "both"
        b.input_statement = (f"Your program is POTENTIALLY input-bound because {one_digit(other_p)}% of the "
                             "total step time sampled is spent on 'All Others' time (which could be due to "
                             "I/O or Python execution or both).")
        return True
    b.input_classification = "device"
    b.input_statement = (f"Your program is NOT input-bound because only {one_digit(input_p)}% of the total "
                         "step time sampled is waiting for input. Therefore, you should focus on reducing "
                         "other time.")
    return False


def _output_statement(output_p: float) -> str:
    if output_p >= HIGHLY_OUTPUT_BOUND:
        return (f"Your program is HIGHLY output-bound because {one_digit(output_p)}% of the total step time "
                "sampled is spent on output. Therefore, you should first focus on reducing the output time.")
    if output_p >= MODERATELY_OUTPUT_BOUND:
        return (f"Your program is MODERATELY output-bound because {one_digit(output_p)}% of the total step "
                "time sampled is spent on output. Therefore, you would need to reduce both the output time "
                "and other time.")
    return ""


def without_section_refs(text: str) -> str:
    """XProf's next-step sentence for a page without the input pipeline's sections (the overview):
    its pointer to "Section 3 below" has nothing below to point at."""
    return (text.replace(" (please ignore Section 3 below)", "")
            .replace("Look at Section 3 for", "Look at the input pipeline analyzer's Section 3 (I) for"))


def summary_next_step(classification: str, tf_data_used: bool) -> str:
    if classification in ("host", "both"):
        if not tf_data_used:
            return (f"Consider using the tf.data API ({TF_DATA_GUIDE}) to enable profiler's host-side analysis "
                    "for input pipeline. Profiler currently does not support custom input pipeline (please "
                    "ignore Section 3 below).")
        return "Look at Section 3 for the breakdown of input time on the host."
    return "You may skip the rest of this page."


def stats(values) -> dict[str, float]:
    return st.stats_ms(values)


# --- host side --------------------------------------------------------------------------------------
_FILE_READERS = ("::TFRecord", "::TextLine", "::FixedLengthRecord", "::SSTable", "::RecordIO")
_IN_ADVANCE = ("::MemoryReader", "::MemoryWriter", "::Interleave", "::Prefetch", "::ParallelMap")
HOST_CATEGORIES = ("enqueue", "demanded_file_read", "advanced_file_read", "preprocessing",
                   "unclassified_non_enqueue")


def _input_category(name: str, op_type: str) -> str | None:
    if op_type.startswith("InfeedEnqueue") or op_type == "MemcpyHToD":
        return "Enqueue"
    if op_type != "Dataset":
        return None
    if name.endswith(_FILE_READERS):
        return "Advanced file read" if any(s in name for s in _IN_ADVANCE) else "Demanded file read"
    return "Preprocessing"


def input_op_table(host_db: om.OpMetricsDb) -> pl.DataFrame:
    """Input ops on the hosts ranked by self time; percents of all input-op self time."""
    ops = host_db.ops
    cats = [_input_category(n, t) for n, t in zip(ops["name"].to_list(), ops["category"].to_list())]
    sel = ops.with_columns(input_category=pl.Series(cats, dtype=pl.String)).filter(
        pl.col("input_category").is_not_null())
    sel = sel.sort(["self_time_ps", "name"], descending=[True, False])
    total = float(sel["self_time_ps"].sum()) if len(sel) else 0.0
    return sel.select(
        name="name", count="occurrences", total_ms=pl.col("time_ps") / 1e9,
        total_percent=(100.0 * pl.col("time_ps") / total) if total else pl.lit(0.0),
        self_ms=pl.col("self_time_ps") / 1e9,
        self_percent=(100.0 * pl.col("self_time_ps") / total) if total else pl.lit(0.0),
        category="input_category",
    )


def host_breakdown_ms(table: pl.DataFrame, step_table: pl.DataFrame,
                      enqueue_ratio: float | None = None) -> dict[str, float]:
    """XProf's InputTimeBreakdown in ms: self time per input category, non-enqueue time scaled by
    the host-to-device share of time: the hosts' infeed enqueue ratio (`enqueue_ratio`,
    OpMetricsDb.host_infeed_enqueue_ratio) when they enqueue, else from the steps (0: unscaled)."""
    by = {c: float(table.filter(pl.col("category") == c)["self_ms"].sum()) for c in
          ("Enqueue", "Demanded file read", "Advanced file read", "Preprocessing")}
    enqueue = by["Enqueue"]
    total_input = by["Demanded file read"] + by["Advanced file read"] + by["Preprocessing"]
    # Share of step time spent sending to the device (XProf: from infeed enqueues, else from steps).
    ratio = 0.0
    if enqueue_ratio is not None:
        ratio = min(1.0, enqueue_ratio)
    elif len(step_table) and to_float(step_table["step_time_ms"].mean()) > 0:
        ratio = min(1.0, to_float(step_table["host_to_device_ms"].mean()) / to_float(step_table["step_time_ms"].mean()))
    non_enqueue = enqueue * (1 - ratio) / ratio if ratio else total_input
    scale = (non_enqueue / total_input) if total_input else 0.0
    demanded, advanced, prep = (by["Demanded file read"] * scale, by["Advanced file read"] * scale,
                                by["Preprocessing"] * scale)
    return {"enqueue": enqueue, "demanded_file_read": demanded, "advanced_file_read": advanced,
            "preprocessing": prep,
            "unclassified_non_enqueue": max(0.0, non_enqueue - demanded - advanced - prep)}


def tf_data_in_use(breakdown: dict[str, float]) -> bool:
    return (breakdown["demanded_file_read"] > 0 or breakdown["advanced_file_read"] > 0 or
            breakdown["preprocessing"] > 0)


# --- the result ---------------------------------------------------------------------------------------
@dataclass
class InputPipelineResult:
    run: str
    hosts: list[str]
    hardware_type: str
    step_table: pl.DataFrame
    core_ranges: pl.DataFrame | None
    input_ops: pl.DataFrame
    host_breakdown: dict[str, float]
    bottleneck: Bottleneck
    next_step: str
    diagnostics: list[dict[str, str]]
    tf_data_used: bool = False
    tf_data: Any = None  # tf_data.TfDataAnalysis | None (the input pipeline tool fills it in)

    @property
    def has_steps(self) -> bool:
        return len(self.step_table) > 0

    def step_time_summary(self) -> dict[str, float]:
        return stats(self.step_table["step_time_ms"].to_list())

    def input_percent_summary(self) -> dict[str, float]:
        return stats(self.step_table["input_percent"].to_list())

    def breakdown_summary(self) -> dict[str, dict[str, float]]:
        return {c: {k: v for k, v in stats(self.step_table[c].to_list()).items() if k in ("avg", "stddev")}
                for c in GENERIC_COLUMNS}

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": "input_pipeline_analyzer", "run": self.run, "hosts": self.hosts,
            "hardware_type": self.hardware_type,
            "step_time_ms": self.step_time_summary() if self.has_steps else None,
            "input_percent": self.input_percent_summary(),
            "step_time_breakdown_ms": self.breakdown_summary(),
            "steps": [{"step": r["name"], "step_number": r["step"], **{k: v for k, v in r.items()
                                                                        if k not in ("name", "step")}}
                      for r in self.step_table.iter_rows(named=True)],
            "per_core_step_range": self.core_ranges.to_dicts() if self.core_ranges is not None else None,
            "verdict": {"input_classification": self.bottleneck.input_classification,
                        "statement": self.bottleneck.input_statement,
                        "output_statement": self.bottleneck.output_statement,
                        "summary_next_step": self.next_step},
            "bottleneck": self.bottleneck.to_json(),
            "host_breakdown_ms": self.host_breakdown,
            "input_ops": self.input_ops.to_dicts(),
            "recommendations": RECOMMENDATIONS,
            "tf_data_bottleneck": self.tf_data.to_json() if self.tf_data is not None else None,
            "diagnostics": self.diagnostics,
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        out = {"steps": self.step_table, "input_ops": self.input_ops}
        if self.core_ranges is not None:
            out["per_core_steps"] = self.core_ranges
        if self.tf_data is not None:
            out.update(self.tf_data.tables())
        return out


def diagnostics_of(stats_: OpStats) -> list[dict[str, str]]:
    out = [{"severity": "ERROR", "message": e} for e in stats_.errors]
    out += [{"severity": "WARNING", "message": w} for w in stats_.warnings]
    out += [{"severity": "WARNING", "message": d} for d in stats_.steps.diagnostics]
    return out


def analyze_stats(run_name: str, stats_: OpStats) -> InputPipelineResult:
    """The input-pipeline analysis of combined op stats (the tf.data bottleneck is the tool's own)."""
    tpu = None
    if stats_.hardware_type == "TPU":
        tpu = tpu_step_table([h.step_db for h in stats_.per_host], [h.all_reduce for h in stats_.per_host])
    table = tpu_generic_table(tpu) if tpu is not None else generic_step_table(stats_.steps)
    ops = input_op_table(stats_.host_db)
    breakdown = host_breakdown_ms(ops, table, stats_.host_db.host_infeed_enqueue_ratio())
    used = tf_data_in_use(breakdown)
    bott = tpu_bottleneck(tpu) if stats_.hardware_type == "TPU" else bottleneck_analysis(table, used)
    return InputPipelineResult(
        run=run_name, hosts=stats_.hosts, hardware_type=stats_.hardware_type, step_table=table,
        core_ranges=per_core_ranges(stats_.steps), input_ops=ops, host_breakdown=breakdown, bottleneck=bott,
        next_step=summary_next_step(bott.input_classification, used), diagnostics=diagnostics_of(stats_),
        tf_data_used=used,
    )

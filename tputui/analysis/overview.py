"""Overview page (XProf's `overview_page`): the first thing a user looks at.

Performance summary (step time and its breakdown, device / host idle, device duty cycle, FLOPS and
memory-bandwidth utilization, MXU utilization, 16/32-bit compute), the per-step graph, the top 10
device ops, the run environment, XProf's recommendation (bottleneck statement and what to open next)
and diagnostics. `analyze(run)` covers all hosts of the run together; `analyze(run, host)` one host: a reduce over
the hosts' op stats (op_stats.py), with the input-pipeline analysis XProf embeds (input_analysis.py).

Facts from XProf (op_stats_to_overview_page.cc): idle / duty cycle / host idle are computed for TPUs
only (XProf shows 0.0% otherwise); top ops are device ops rolled up to framework ops, ranked by self
time as a share of all device op time, with flop rate = flops / time; the bottleneck statement comes
from the input-pipeline analysis; tips name op_profile for TPUs and framework_op_stats otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tputui.analysis import advice_rules, gpu_trace_hint, host_map, perf_guide, tpu_runtime_log, utilization
from tputui.analysis import input_analysis as ip
from tputui.analysis import op_metrics as om
from tputui.analysis.batch_size import BatchSize, run_batch_size
from tputui.analysis.op_stats import OpStats
from tputui.data.run_data import RunData

TOP_OPS = 10
LOW_PRECISION_PERCENT = 10.0


@dataclass
class OverviewResult:
    run: str
    hosts: list[str]
    stats: OpStats
    pipeline: ip.InputPipelineResult
    top_ops: pl.DataFrame  # name, category, self_time_percent, cumulative_time_percent, flop_rate_gflops
    device_idle_time_percent: float
    host_idle_time_percent: float
    device_duty_cycle_percent: float
    idle_time_high_confidence_ps: int
    flop_rate_utilization_percent: float
    memory_bw_utilization_percent: float
    device_compute_16bit_percent: float
    device_compute_32bit_percent: float
    host_tf_op_percent: float
    device_tf_op_percent: float
    precision_statement: str
    tips: list[dict[str, str]] = field(default_factory=list)
    advice: list[dict[str, Any]] = field(default_factory=list)  # advice_rules.advice_rows: XProf's rules, the guide's
    tpu_runtime: tpu_runtime_log.TpuRuntime | None = None  # from the TPU runtime log (--tpu-logs), when read
    hints: list[str] = field(default_factory=list)  # beyond XProf's diagnostics: the CUPTI hint (gpu_trace_hint)

    # --- views the screen and export share ----------------------------------------------------
    @property
    def steps(self) -> pl.DataFrame:
        return self.pipeline.step_table

    @property
    def has_steps(self) -> bool:
        return self.pipeline.has_steps

    @property
    def bottleneck(self) -> ip.Bottleneck:
        """XProf's overview bottleneck: the generic analysis, which comes out empty for TPU steps
        (XProf cannot read TPU step details there); the input pipeline's verdict is `input_conclusion`."""
        if self.stats.hardware_type == "TPU" and self.has_steps:
            return ip.Bottleneck(input_classification="", input_statement="", kernel_launch_classification="",
                                 all_other_classification="", device_collectives_classification="")
        return self.pipeline.bottleneck

    @property
    def input_conclusion(self) -> str:
        return self.pipeline.bottleneck.input_statement

    def run_environment(self) -> dict[str, Any]:
        s = self.stats
        return {"device_type": s.device_type, "device_core_count": s.device_core_count,
                "host_count": len(s.hosts), "hosts": s.hosts, "task_count": len(s.hosts),
                "is_training": s.is_training, "hardware_type": s.hardware_type,
                "tpu_runtime": self.tpu_runtime.to_json() if self.tpu_runtime else None,
                "batch_size": self.batch_size.to_json() if self.batch_size else None}

    @property
    def batch_size(self) -> BatchSize | None:
        """Beyond XProf (which records none): recorded by the profile, else derived (batch_size.py)."""
        return run_batch_size([h.batch_size for h in self.stats.per_host])

    def recommendation(self) -> dict[str, Any]:
        b = self.bottleneck
        verdict = self.pipeline.bottleneck.input_classification
        next_tool = ("input_pipeline_analyzer" if verdict in ("host", "both")
                     else ("op_profile" if self.stats.hardware_type == "TPU" else "framework_op_stats")
                     if verdict == "device" else None)
        return {
            "bottleneck": b.input_classification, "statement": b.input_statement,
            "input_conclusion": self.input_conclusion, "next_tool": next_tool, "summary_next_step": self.pipeline.next_step,
            "kernel_launch_bottleneck": b.kernel_launch_classification,
            "kernel_launch_statement": b.kernel_launch_statement,
            "all_other_bottleneck": b.all_other_classification, "all_other_statement": b.all_other_statement,
            "device_collectives_bottleneck": b.device_collectives_classification,
            "device_collectives_statement": b.device_collectives_statement,
            "precision_statement": self.precision_statement, "tips": self.tips,
        }

    @property
    def step_time_ms(self) -> dict[str, float] | None:
        """Step time in ms: count, avg, stddev, min, max (None without steps)."""
        return {"count": len(self.steps), **self.pipeline.step_time_summary()} if self.has_steps else None

    @property
    def step_parts_ms(self) -> list[tuple[str, float]]:
        """The step-time breakdown's averages (column, ms) with any time, the largest first."""
        avg = self.pipeline.breakdown_summary()
        return sorted(((c, v["avg"]) for c, v in avg.items() if v["avg"] > 0), key=lambda cv: -cv[1])

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": "overview_page", "run": self.run, "hosts": self.hosts,
            "device_idle_time_percent": self.device_idle_time_percent,
            "host_idle_time_percent": self.host_idle_time_percent,
            "device_duty_cycle_percent": self.device_duty_cycle_percent,
            "idle_time_high_confidence_ps": self.idle_time_high_confidence_ps,
            "flop_rate_utilization_relative_to_roofline_percent": self.flop_rate_utilization_percent,
            "memory_bw_utilization_relative_to_hw_limit_percent": self.memory_bw_utilization_percent,
            "mxu_utilization_percent": self.stats.mxu_utilization_percent,
            "hbm_utilization_percent": self.stats.hbm_utilization_percent,
            "device_compute_16bit_percent": self.device_compute_16bit_percent,
            "device_compute_32bit_percent": self.device_compute_32bit_percent,
            "host_tf_op_percent": self.host_tf_op_percent, "device_tf_op_percent": self.device_tf_op_percent,
            "run_environment": self.run_environment(),
            "step_time_ms": self.step_time_ms,
            "step_time_breakdown_ms": self.pipeline.breakdown_summary(),
            "steps": [{"step": r["name"], "step_number": r["step"],
                       **{k: v for k, v in r.items() if k not in ("name", "step", "host_to_device_ms")}}
                      for r in self.steps.iter_rows(named=True)],
            "top_device_ops": self.top_ops.to_dicts(),
            "bottleneck": self.bottleneck.input_classification,
            "statement": self.bottleneck.input_statement,
            "input_conclusion": self.input_conclusion,
            "recommendation": self.recommendation(),
            "advice": self.advice,
            "diagnostics": self.pipeline.diagnostics,
            "hints": self.hints,
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"top_device_ops": self.top_ops, "steps": self.steps.drop("host_to_device_ms")}


def top_device_ops(device_db: om.OpMetricsDb, n: int = TOP_OPS) -> pl.DataFrame:
    """Framework ops of the device ranked by self time (XProf's top device ops)."""
    tf = om.tf_op_metrics(device_db, with_idle=False)
    total = tf.total_time_ps
    ops = tf.ops.sort(["self_time_ps", "name"], descending=[True, False]).head(n)
    frac = (ops["self_time_ps"] / total) if total else ops["self_time_ps"] * 0.0
    return pl.DataFrame({
        "name": ops["name"], "category": ops["category"],
        "self_time_percent": frac * 100.0, "cumulative_time_percent": frac.cum_sum() * 100.0,
        "flop_rate_gflops": pl.Series([f / (t / 1000) if t else 0.0 for f, t in
                                       zip(ops["flops"].to_list(), ops["time_ps"].to_list())], dtype=pl.Float64),
    }, schema={"name": pl.String, "category": pl.String, "self_time_percent": pl.Float64,
               "cumulative_time_percent": pl.Float64, "flop_rate_gflops": pl.Float64})


def _tips(hardware: str) -> list[dict[str, str]]:
    device_name = hardware
    timeline, op_tool = (("TPU core", "op_profile") if hardware == "TPU" else (device_name, "framework_op_stats"))
    return [
        {"type": "faq", "tip": "Refer to the TF2 Profiler FAQ", "description": "Tool troubleshooting / FAQ"},
        {"type": "host", "tip": "input_pipeline_analyzer (especially Section 3 for the breakdown of input "
                                "operations on the Host)", "description": "Next steps for reducing the Host time"},
        {"type": "host", "tip": "trace_viewer (look at the activities on the timeline of each Host Thread near "
                                "the bottom of the trace view)", "description": "Next steps for reducing the Host time"},
        {"type": "device", "tip": f"{op_tool} (identify the time-consuming operations executed on the "
                                  f"{device_name})", "description": "Next steps for reducing the Device time"},
        {"type": "device", "tip": f"trace_viewer (look at the activities on the timeline of each {timeline} in "
                                  "the trace view)", "description": "Next steps for reducing the Device time"},
        {"type": "doc", "tip": "Analyze tf.data performance with the TF Profiler "
                               "(https://www.tensorflow.org/guide/data_performance_analysis)",
         "description": "Other useful resources"},
        {"type": "doc", "tip": "Better performance with the tf.data API "
                               "(https://www.tensorflow.org/guide/data_performance)",
         "description": "Other useful resources"},
    ]


def analyze_stats(run_name: str, stats: OpStats) -> OverviewResult:
    """The overview of combined op stats."""
    pipeline = ip.analyze_stats(run_name, stats)
    dev, host = stats.device_db, stats.host_db
    tpu = stats.hardware_type == "TPU"
    device_idle = dev.idle_ratio * 100.0 if tpu else 0.0
    host_idle = host.idle_ratio * 100.0 if tpu else 0.0
    duty = 0.0
    if tpu and dev.busy_time_ps is not None and dev.idle_duty_ps is not None \
            and (dev.busy_time_ps + dev.idle_duty_ps) > 0:
        duty = 100.0 * dev.busy_time_ps / (dev.busy_time_ps + dev.idle_duty_ps)
    tf_dev = om.tf_op_metrics(dev, with_idle=False)
    n_host = int(host.ops["occurrences"].sum()) if len(host.ops) else 0
    n_dev = int(tf_dev.ops["occurrences"].sum()) if len(tf_dev.ops) else 0
    total_ops = n_host + n_dev
    steps = stats.steps.per_step()
    c16 = float(steps["device_compute_16_ps"].sum()) if len(steps) else 0.0
    c32 = float(steps["device_compute_32_ps"].sum()) if len(steps) else 0.0
    precision = ""
    if c16 + c32 > 0 and 100.0 * c16 / (c16 + c32) < LOW_PRECISION_PERCENT:
        precision = (f"Only {ip.one_digit(100.0 * c16 / (c16 + c32))}% of device computation is 16 bit. So you "
                     "might want to replace more 32-bit Ops by 16-bit Ops to improve performance (if the "
                     "reduced accuracy is acceptable).")
    flop_util, bw_util = utilization.flops_and_bandwidth(stats, steps)
    return OverviewResult(
        run=run_name, hosts=stats.hosts, stats=stats, pipeline=pipeline, top_ops=top_device_ops(dev),
        device_idle_time_percent=device_idle, host_idle_time_percent=host_idle, device_duty_cycle_percent=duty,
        idle_time_high_confidence_ps=int(dev.idle_duty_ps or 0) if tpu else 0,
        flop_rate_utilization_percent=flop_util, memory_bw_utilization_percent=bw_util,
        device_compute_16bit_percent=100.0 * c16 / (c16 + c32) if c16 + c32 else 0.0,
        device_compute_32bit_percent=100.0 * c32 / (c16 + c32) if c16 + c32 else 0.0,
        host_tf_op_percent=100.0 * n_host / total_ops if total_ops else 0.0,
        device_tf_op_percent=100.0 * n_dev / total_ops if total_ops else 0.0,
        precision_statement=precision, tips=_tips(stats.hardware_type),
    )


def analyze(run: RunData, host: str | None = None, tpu_logs: str | None = None, **options) -> OverviewResult:
    """`tpu_logs`: a folder (or file) holding the TPU runtime log, tpu_driver.INFO."""
    stats = host_map.run_op_stats(run, host)
    result = analyze_stats(run.name, stats)
    result.tpu_runtime = tpu_runtime_log.read(tpu_logs)
    hint = gpu_trace_hint.cupti_hint(stats.per_host)
    result.hints = [hint] if hint else []
    try:  # the recommendation panel's advice; never worth failing the overview for
        result.advice = advice_rules.advice_rows(advice_rules.suggestions(run, host, result.pipeline),
                                                perf_guide.by_severity(perf_guide.checks(run, host)
                                                                       + tpu_runtime_log.checks(result.tpu_runtime)))
    except Exception:  # noqa: BLE001
        result.advice = []
    return result


def has_data(run: RunData) -> bool:
    return bool(run.hosts)

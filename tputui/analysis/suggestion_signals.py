"""The figures XProf's smart-suggestion rules read (suggestion_rules.Signals), from our combined op
stats and the input-pipeline analysis, as XProf's SignalProvider reads them from its OpStats,
overview page and input pipeline (xprof/convert/smart_suggestion/signal_provider.h,
tool_data_provider_impl.h):

- overview: MXU utilization (the host plane's counter, averaged over hosts) and HBM bandwidth
  utilization (utilization.flops_and_bandwidth);
- input pipeline: input % of step time (the bottleneck analysis), the host input time breakdown
  (enqueue / file reads / preprocessing / unclassified, in us), the average step time and, on TPU
  only, the average TensorCore idle time of the step breakdown;
- op stats' step database (hosts intersected): per step, the collective and data-shuffle HLO
  categories' self time on the TensorCores and the sum of their step times;
- the event-time fractions of `debug_print` ops per host (barrier_cores.py, in the op-stats map).
"""
from __future__ import annotations

from tputui.analysis import input_analysis as ip
from tputui.analysis import tpu_steps, utilization
from tputui.analysis.op_stats import OpStats
from tputui.analysis.suggestion_rules import (
    COLLECTIVE_CATEGORIES,
    DATA_SHUFFLE_CATEGORIES,
    Signals,
    average_percent,
)

MS_TO_US = 1000.0


def step_category_ps(stats: OpStats) -> list[tuple[int, int, int]]:
    """Per step of the combined step database: (collective ps, data-shuffle ps, summed core step ps)."""
    combined, _, _ = tpu_steps.combine_hosts([h.step_db for h in stats.per_host])
    return category_ps_of_steps(combined)


def category_ps_of_steps(combined) -> list[tuple[int, int, int]]:
    """`combined`: [(step, {core: (step ps, {HLO category: self ps}, generic)})] (tpu_steps.combine_hosts).
    Steps without cores are skipped; host (CPU / GPU) steps carry no HLO ops: their category time is 0."""
    out = []
    for _step, per_core in combined:
        if not per_core:
            continue
        coll = shuffle = total = 0
        for dur, cats, generic in per_core.values():
            total += int(dur)
            if generic or not cats:
                continue
            coll += sum(int(v) for c, v in cats.items() if c in COLLECTIVE_CATEGORIES)
            shuffle += sum(int(v) for c, v in cats.items() if c in DATA_SHUFFLE_CATEGORIES)
        out.append((coll, shuffle, total))
    return out


def debug_print_hosts(stats: OpStats) -> list[tuple[str, float]]:
    """(hostname, average % of its steps in debug_print ops) of the hosts that have any. XProf names
    a host by its XSpace's hostname; op stats cached before this field existed have none."""
    out = []
    for h in stats.per_host:
        fr = h.barrier_cores
        per_step = getattr(fr, "debug_print_per_step", None) if fr is not None else None
        if per_step:
            out.append((h.hostname, average_percent(per_step)))  # XProf: a float Stat of the doubles
    return out


def signals(stats: OpStats, pipeline: ip.InputPipelineResult | None = None) -> Signals:
    """Every signal of the run's combined op stats (`pipeline`: its input-pipeline analysis, when
    the caller has it already)."""
    p = pipeline if pipeline is not None else ip.analyze_stats("", stats)
    _, bw = utilization.flops_and_bandwidth(stats, stats.steps.per_step())
    b = p.host_breakdown
    tpu_table = "tc_idle_ms" in p.step_table.columns and stats.hardware_type == "TPU"
    return Signals(
        hbm_utilization=bw, mxu_utilization=stats.mxu_utilization_percent,
        input_percent=p.bottleneck.input_percent,
        enqueue_us=b["enqueue"] * MS_TO_US,
        non_enqueue_us=(b["demanded_file_read"] + b["advanced_file_read"] + b["preprocessing"]
                        + b["unclassified_non_enqueue"]) * MS_TO_US,
        step_time_ms=p.step_time_summary()["avg"],
        tc_idle_ms=ip.stats(p.step_table["tc_idle_ms"].to_list())["avg"] if tpu_table else None,
        step_category_ps=step_category_ps(stats),
        debug_print_hosts=debug_print_hosts(stats),
    )

"""XProf's smart-suggestion rules beyond BarrierCoresRule: thresholds, conditions and the text each
emits, over the figures they read (`Signals`).

XProf (xprof/convert/smart_suggestion/, mirror of openxla/xprof) registers ten rules in
`RegisterAllRules` (all_rules.h) but its open-source build only BarrierCoresRule
(`RegisterAllRulesFor3P`), so its converter never shows these nine; their own unit tests
(`*_rule_test.cc`) are the oracle we port in tests/test_smart_suggestion.py. The wording is XProf's
output, reproduced so users read the same advice; the code is ours.

What each rule reads (signal_provider.h; thresholds from constants.h):
  CollectiveBound      per step: self time of collective HLO categories / sum of the TensorCores'
                       step times; average >= 30%
  ComputeBound         overview MXU utilization > 70% and HBM bandwidth utilization < 50%
  DataShuffleBound     as CollectiveBound with data-shuffle categories; >= 30%
  DataTransferBound    input-bound (input % of step time > 10) and enqueue >= 30% of input time
  DebugPrint           a host whose average `debug_print` share of its steps is >= 5%
  HostProcessingBound  input-bound and non-enqueue (file reads, preprocessing) >= 50% of input time
  InputBound           input-bound and the host's input time is neither (no host input ops)
  MemoryBound          HBM bandwidth utilization > 70% and MXU utilization < 50%
  TensorCoreIdleBound  latency-bound (MXU and HBM both < 50%) and TensorCore idle > 10% of the
                       average step (TPU step breakdown only)
A signal XProf cannot read (no TPU breakdown, no such event) is None here: the rule does not fire.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

HBM_LOW, HBM_HIGH = 50.0, 70.0  # kHbmUtilization{Low,High}Threshold
MXU_LOW, MXU_HIGH = 50.0, 70.0  # kMxuUtilization{Low,High}Threshold
INFEED_PERCENT = 10.0  # kInfeedPercentageThreshold
COLLECTIVE_PERCENT = 30.0  # kCollectiveBoundThresholdInPercent
DATA_SHUFFLE_PERCENT = 30.0  # kDataShuffleBoundThresholdInPercent
DATA_TRANSFER_PERCENT = 30.0  # kDataTransferBoundThresholdInPercent
HOST_PROCESSING_PERCENT = 50.0  # kHostProcessingBoundThresholdInPercent
TC_IDLE_PERCENT = 10.0  # kTensorCoreIdleTimeThresholdInPercent
DEBUG_PRINT_PERCENT = 5.0  # kDebugPrintBoundThresholdInPercent
ZERO_EPSILON = 1e-6  # kZeroEpsilon
DEBUG_PRINT = "debug_print"

# HLO categories XProf counts as collectives / data shuffle (SignalProvider::IsCollective, IsDataShuffle).
COLLECTIVE_CATEGORIES = frozenset({
    "all-reduce", "all-reduce fusion", "all-reduce-scatter fusion", "all-to-all", "all-gather",
    "all-gather-start", "all-gather-done", "all-gather fusion", "reduce-scatter", "collective-permute",
    "collective-permute-done", "collective-permute-start", "megacore fusion", "host recv", "host recv-done",
    "host send", "host send-done",
})
DATA_SHUFFLE_CATEGORIES = frozenset({
    "broadcast", "concatenate", "data formatting", "dynamic-slice", "dynamic-update-slice", "gather", "pad",
    "reverse", "scatter", "select", "select-and-scatter", "shuffle", "slice", "sort",
})


@dataclass
class Signals:
    """The figures the rules read; None where XProf's SignalProvider returns an error."""
    hbm_utilization: float | None = None  # overview: memory_bw_utilization_relative_to_hw_limit_percent
    mxu_utilization: float | None = None  # overview: mxu_utilization_percent
    input_percent: float | None = None  # input pipeline: input % of step time
    enqueue_us: float | None = None  # input pipeline: host enqueue time
    non_enqueue_us: float | None = None  # file reads + preprocessing + unclassified
    step_time_ms: float | None = None  # input pipeline: average step time
    tc_idle_ms: float | None = None  # TPU step breakdown: average TensorCore idle (None: not TPU)
    # Per step: (collective self ps, data-shuffle self ps, sum of the TensorCores' step ps).
    step_category_ps: list[tuple[int, int, int]] | None = None
    debug_print_hosts: list[tuple[str, float]] | None = None  # (hostname, average debug_print %)


def _pct(x: float) -> str:
    return f"{x:.1f}"


def average_percent(fractions: list[float]) -> float:
    """SignalProvider::CalculateAveragePercent: float fractions averaged in double, times 100."""
    if not fractions:
        return 0.0
    return float(np.mean(np.asarray(fractions, np.float32), dtype=np.float64)) * 100.0


def step_fractions(steps: list[tuple[int, int, int]], which: int) -> list[float]:
    """GetTimeFractionEachStepImpl: each step's category time over the summed core step times,
    divided in float as XProf does; steps without time skipped."""
    return [float(np.float32(s[which]) / np.float32(s[2])) for s in steps if s[2] > 0]


# --- signals as SignalProvider derives them ----------------------------------------------------
def collective_percent(s: Signals) -> float | None:
    return None if s.step_category_ps is None else average_percent(step_fractions(s.step_category_ps, 0))


def data_shuffle_percent(s: Signals) -> float | None:
    return None if s.step_category_ps is None else average_percent(step_fractions(s.step_category_ps, 1))


def enqueue_percent_of_input(s: Signals) -> float | None:
    if s.enqueue_us is None or s.non_enqueue_us is None:
        return None
    total = s.enqueue_us + s.non_enqueue_us
    return 0.0 if total == 0 else s.enqueue_us / total * 100.0


def non_enqueue_percent_of_input(s: Signals) -> float | None:
    if s.enqueue_us is None or s.non_enqueue_us is None:
        return None
    total = s.non_enqueue_us + s.enqueue_us
    return 0.0 if total == 0 else s.non_enqueue_us / total * 100.0


def tc_idle_percent(s: Signals) -> float | None:
    if s.tc_idle_ms is None or s.step_time_ms is None:
        return None
    return 0.0 if s.step_time_ms == 0 else s.tc_idle_ms / s.step_time_ms * 100.0


def is_input_bound(s: Signals) -> bool:
    return s.input_percent is not None and s.input_percent > INFEED_PERCENT


def is_latency_bound(s: Signals) -> bool:
    return (s.mxu_utilization is not None and s.hbm_utilization is not None
            and s.mxu_utilization < MXU_LOW and s.hbm_utilization < HBM_LOW)


def _found(rule: str, text: str) -> dict[str, str]:
    return {"ruleName": rule, "suggestionText": text}


# --- the rules, in XProf's registration order (after BarrierCoresRule) ------------------------------
def collective_bound(s: Signals) -> dict[str, str] | None:
    p = collective_percent(s)
    if p is None or p < COLLECTIVE_PERCENT:
        return None
    return _found("CollectiveBoundRule", (
        "<p>Your program is likely bottlenecked by <b>Collective operations (e.g., AllReduce, AllGather)</b>. "
        f"An average of <b>{_pct(p)}%</b> of each step is spent on these operations. This suggests that your "
        "model is collective communication-bound. Please consider the following optimizations:</p><ul>"
        "<li><b>Overlap Communication with Computation:</b> Try to schedule collective operations to overlap "
        "with computation to hide communication latency.</li>"
        "<li><b>Investigate Workload Balance and Input Pipeline:</b> Check for stragglers, i.e., workers that "
        "are significantly slower than others. Uneven workloads and data loading can cause faster workers to "
        "wait during collective operations.</li>"
        "<li><b>Optimize Collective Operations:</b> Reduce the amount of data transferred between devices by "
        "using lower precision data formats for gradients (e.g., bfloat16).</li>"
        "<li><b>Check Network:</b> Network latency or bandwidth can be a bottleneck for distributed "
        "operations, causing workers to wait longer during collectives.</li></ul>"))


def compute_bound(s: Signals) -> dict[str, str] | None:
    if s.hbm_utilization is None or s.mxu_utilization is None:
        return None
    if not (s.mxu_utilization > MXU_HIGH and s.hbm_utilization < HBM_LOW):
        return None
    return _found("ComputeBoundRule", (
        "<p>Your program is likely bottlenecked by <b>Compute Operations</b>: High MXU utilization of "
        f"<b>{_pct(s.mxu_utilization)}%</b> and low HBM Bandwidth utilization of <b>{_pct(s.hbm_utilization)}%"
        "</b> indicates that the primary bottleneck is the raw processing power of the hardware. Please "
        "consider the following optimizations: </p><ul>"
        "<li><b>Use Mixed Precision:</b> Using bfloat16 for computations and storing weights can significantly "
        "speed up matrix multiplications and reduce memory usage. Ensure that this does not negatively impact "
        "your model's convergence.</li>"
        "<li><b>Optimize Your Kernels:</b> If you are using custom operations, profile them to identify any "
        "inefficiencies. For standard operations, ensure you are using the latest version of your framework "
        "and libraries (e.g., CUDA, cuDNN for GPUs) which often include optimized kernels.</li>"
        "<li><b>Experiment with Batch Size:</b> While a large batch size can improve hardware utilization, an "
        "excessively large batch size might not always be optimal. Experiment with different batch sizes to "
        "find the sweet spot for your specific model and hardware.</li>"
        "<li><b>Switching to a Mixture of Experts (MoE) Strategy:</b> Consider switching to a Mixture of "
        "Experts (MoE) architecture by replacing one massive FFN with several smaller expert networks to "
        "leverage SparseCores. The SparseCore handles the gating logic\u2014deciding which specific expert "
        "should handle which token. It performs the routing (scatter/gather). It effectively trades excess "
        "Compute (MXU) load for Memory Bandwidth and Sparse Core utilization.</li></ul>"))


def data_shuffle_bound(s: Signals) -> dict[str, str] | None:
    p = data_shuffle_percent(s)
    if p is None or p < DATA_SHUFFLE_PERCENT:
        return None
    return _found("DataShuffleBoundRule", (
        "<p>Your program is likely bottlenecked by <b>Data Shuffle operations (e.g., sort, gather, scatter)"
        f"</b>. An average of <b>{_pct(p)}%</b> of each step is spent on these operations. Please consider "
        "the following optimizations:</p><ul>"
        "<li><b>Optimize Gather, Scatter Operations:</b> If gather, scatter operations are the bottleneck, "
        "review their implementation. Ensure that the dimensions of tensors involved in gather and scatter "
        "operations are multiples of 128 (common for most TPUs).</li></ul>"))


def data_transfer_bound(s: Signals) -> dict[str, str] | None:
    p = enqueue_percent_of_input(s)
    if not is_input_bound(s) or p is None or p < DATA_TRANSFER_PERCENT:
        return None
    assert s.input_percent is not None
    return _found("DataTransferBoundRule", (
        "<p>Your program is likely bottlenecked by <b>data transfer</b> between Host and Device: "
        f"<b>{_pct(s.input_percent * p / 100)}% of the total step time</b> is spent on enqueuing data to the "
        "device. Please consider the following optimizations:</p><ul>"
        "<li><b>Combine small data chunks:</b> Transferring many small chunks of data can be inefficient. Try "
        "to batch them into fewer, larger transfers.</li>"
        "<li><b>Check transfer size:</b> Ensure the size of data being transferred in each batch is optimal "
        "for the hardware.</li>"
        "<li><b>Use prefetching:</b> Overlap data transfer with computation.</li></ul>"))


def debug_print(s: Signals) -> dict[str, str] | None:
    high = [(h, p) for h, p in (s.debug_print_hosts or []) if p >= DEBUG_PRINT_PERCENT]
    if not high:
        return None
    # XProf lists the hosts from a hash map (no defined order); we list them by name.
    hosts = "".join(f"<li>Host <b>{h}</b> average debug_print time fraction: <b>{_pct(p)}%</b></li>"
                    for h, p in sorted(dict(high).items()))
    worst = max(p for _, p in high)
    return _found("DebugPrintRule", (
        f"<p>Your program is likely bottlenecked by <b>{DEBUG_PRINT}</b> operations: <b> up to {_pct(worst)}% "
        "of step time</b> is spent on these operations on some hosts. This often indicates the debug print "
        "operations causes busy waiting for other workers in a distributed training setup. Please consider "
        "the following optimizations:</p><ul>"
        "<li><b>Investigate Hosts with High Debug Print Time:</b> The following hosts have high debug_print "
        f"time fraction compared to others:<ul>{hosts}</ul></li>"
        "<li><b>Check for debug print usage:</b> Check for <code>jax.debug.print</code> calls in your "
        "code.</li></ul>"))


def host_processing_bound(s: Signals) -> dict[str, str] | None:
    p = non_enqueue_percent_of_input(s)
    if not is_input_bound(s) or p is None or p < HOST_PROCESSING_PERCENT:
        return None
    assert s.input_percent is not None
    return _found("HostProcessingBoundRule", (
        "<p>Your program is likely bottlenecked by <b>Host-side Processing</b> in the input pipeline: "
        f"<b>{_pct(s.input_percent * p / 100)}% of the total step time</b> is spent on host-side input data "
        "processing. Please consider the following optimizations:</p><ul>"
        "<li><b>Optimize Data Reading:</b> Ensure efficient file reading patterns. Use prefetching and "
        "interleaving to load data in parallel and in advance.</li>"
        "<li><b>Parallelize Data Preprocessing:</b> Utilize parallel processing techniques for CPU-bound "
        "preprocessing steps.</li>"
        "<li><b>Offline Preprocessing:</b> For static datasets, consider performing expensive preprocessing "
        "steps offline and saving the results.</li>"
        "<li><b>Tuning Parameters:</b> Experiment with buffer sizes, the number of parallel threads, and "
        "prefetch distances in your input pipeline to find the best settings.</li></ul>"))


def input_bound(s: Signals) -> dict[str, str] | None:
    enq, non = enqueue_percent_of_input(s), non_enqueue_percent_of_input(s)
    if not is_input_bound(s) or enq is None or non is None:
        return None
    # Infeed on the device but no host input op XProf can classify (a custom input pipeline).
    if not (abs(non) < ZERO_EPSILON and abs(enq) < ZERO_EPSILON):
        return None
    assert s.input_percent is not None
    return _found("InputBoundRule", (
        f"<p>Your program is likely <b>input-bound</b> : <b>{_pct(s.input_percent)}% of step time</b> is spent "
        "on input operations. Please consider the following documentations to optimize your input "
        "pipeline:</p><ul></ul>"))


def memory_bound(s: Signals) -> dict[str, str] | None:
    if s.hbm_utilization is None or s.mxu_utilization is None:
        return None
    if not (s.hbm_utilization > HBM_HIGH and s.mxu_utilization < MXU_LOW):
        return None
    return _found("MemoryBoundRule", (
        "<p>Your program is likely bottlenecked by <b>Memory Operations</b>: High HBM Bandwidth utilization "
        f"of <b>{_pct(s.hbm_utilization)}%</b> and low MXU utilization of <b>{_pct(s.mxu_utilization)}%</b> "
        "indicates that processors are often waiting for data. Please consider the following "
        "optimizations:</p><ul>"
        "<li><b>Increase the Batch Size:</b> A larger batch size increases the computational work (the matrix "
        "multiplications in your model) done for each data loading step. This improves the ratio of "
        "computation to memory access, which should directly increase MXU utilization.</li>"
        "<li><b>Utilize Gradient Accumulation:</b> This technique processes several smaller batches "
        "sequentially and only updates the model weights after accumulating the gradients from all of them. "
        "This simulates a larger effective batch size without a proportional increase in memory usage.</li>"
        "<li><b>Increase Model Depth or Width:</b> Make the model larger by adding more layers or increasing "
        "the size of the hidden dimensions to improve the MXU utilization.</li>"
        "<li><b>Optimize the Data Format:</b> Store your dataset in a format optimized for high-throughput "
        "reads, such as TFRecord for TensorFlow or Petastorm for PyTorch. These formats are more efficient "
        "than reading individual image or text files.</li></ul>"))


def tensor_core_idle_bound(s: Signals) -> dict[str, str] | None:
    p = tc_idle_percent(s)
    if not is_latency_bound(s) or p is None or p <= TC_IDLE_PERCENT:
        return None
    return _found("TensorCoreIdleBoundRule", (
        "<p>Your program is likely bottlenecked by <b>TensorCore Idle Time</b>: High TensorCore idle time "
        f"percentage of <b>{_pct(p)}%</b> indicates that TensorCores are spending a significant amount of time "
        "waiting, not working. Please consider the following optimizations: </p><ul>"
        "<li><b>Reduce Kernel Launch Overhead:</b> Batch small operations into larger ones to reduce the "
        "number of kernel launches.</li>"
        "<li><b>Minimize Python Overhead:</b> Enclose more operations within compiled graphs or functions to "
        "reduce Python interpreter overhead between steps.</li>"
        "<li><b>Avoid Small CPU Ops:</b> Shift small, frequent operations from the CPU to the device if "
        "possible.</li>"
        "<li><b>Use Asynchronous Operations:</b> Employ asynchronous execution for tasks like checkpointing or "
        "metric logging to prevent blocking device execution.</li></ul>"))


# XProf's RegisterAllRules order (keep-sorted), BarrierCoresRule (advice_rules.py) first.
RULES = (collective_bound, compute_bound, data_shuffle_bound, data_transfer_bound, debug_print,
         host_processing_bound, input_bound, memory_bound, tensor_core_idle_bound)


def apply_rules(s: Signals) -> list[dict[str, str]]:
    return [found for rule in RULES if (found := rule(s)) is not None]


def signals_json(s: Signals | None) -> dict[str, Any] | None:
    """The signals and the figures the rules derive from them (None: not computed)."""
    if s is None:
        return None
    return {
        "hbm_utilization_percent": s.hbm_utilization, "mxu_utilization_percent": s.mxu_utilization,
        "input_percent": s.input_percent, "enqueue_us": s.enqueue_us, "non_enqueue_us": s.non_enqueue_us,
        "enqueue_percent_of_input": enqueue_percent_of_input(s),
        "non_enqueue_percent_of_input": non_enqueue_percent_of_input(s),
        "step_time_ms": s.step_time_ms, "tensor_core_idle_ms": s.tc_idle_ms,
        "tensor_core_idle_percent": tc_idle_percent(s),
        "collective_percent": collective_percent(s), "data_shuffle_percent": data_shuffle_percent(s),
        "debug_print_hosts": [{"host": h, "percent": p} for h, p in (s.debug_print_hosts or [])],
    }

"""XProf's smart-suggestion rules, and the advice list the advice tool and the overview share.

The suggestions are XProf's smart suggestions, rule for rule and word for word: all ten rules of its
RegisterAllRules (xprof/convert/smart_suggestion/all_rules.h), in its order. Its open-source build
(XProf 2.24's `smart_suggestion` tool) registers only the first, BarrierCoresRule (here; its output
equals ours on the fixtures); the other nine are in suggestion_rules.py, checked against XProf's
own rule tests and, through the figures they read, against XProf's overview and input pipeline.
BarrierCoresRule: from the event-time-fraction
analyzer (xprof/convert/xspace_to_event_time_fraction_analyzer.cc), per host and TensorCore, the
share of each step spent in `barrier-cores` ops (device durations, the dummy 0 and 1.25 ns ones
skipped), first and last step dropped when there are 3 or more; it fires at >= 10% on average
over every core's steps and names straggler hosts (modified z-score of the hosts' averages
> 3.5, MAD at least 0.1, 3 hosts or more).

Device events carry no step (group) id in real captures; XProf links them to the host step that
launched the program. We take the device's own `Steps` markers on the same core instead (an
event belongs to the step marker that contains it), which finds the same steps.

`advice(run, host)` puts them first and the performance guide's checks (analysis/perf_guide.py)
after them, most severe first.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from tputui.analysis import host_map, perf_guide, suggestion_rules, suggestion_signals
from tputui.analysis.barrier_cores import SPECIAL_OP, HostFractions
from tputui.analysis.input_analysis import InputPipelineResult
from tputui.analysis.op_stats import OpStats
from tputui.data.run_data import RunData

OPEN_SOURCE_RULES = ("BarrierCoresRule",)  # RegisterAllRulesFor3P: what XProf's own converter runs
SPECIAL_OP_THRESHOLD_PERCENT = 10.0  # kSpecialOpBoundThresholdInPercent
STRAGGLER_Z, MAD_FLOOR, MODIFIED_Z_K = 3.5, 0.1, 0.6745
TAG = re.compile(r"<[^>]+>")


def _percentile(values: list[float], p: int) -> float:
    """tsl's StatWithPercentiles::percentile: the sorted value at index p * (n - 1) / 100."""
    v = sorted(values)
    return v[p * (len(v) - 1) // 100]


def stragglers(hosts: list[HostFractions]) -> list[tuple[str, float, float]]:
    """(host, average %, modified z-score) of the hosts whose share stands out."""
    avgs = [(h.host, float(np.mean(np.asarray(h.per_step, np.float32))) * 100.0) for h in hosts if h.per_step]
    if len(avgs) < 3:
        return []
    median = _percentile([a for _, a in avgs], 50)
    mad = _percentile([abs(a - median) for _, a in avgs], 50)
    out = []
    for host, a in avgs:
        if mad == 0:
            score = float("inf") if abs(a - median) > 1e-6 else 0.0
        else:
            score = MODIFIED_Z_K * (a - median) / max(mad, MAD_FLOOR)
        if abs(score) > STRAGGLER_Z:
            out.append((host, a, score))
    return out


def barrier_cores_suggestion(hosts: list[HostFractions]) -> dict[str, str] | None:
    fractions = [f for h in hosts for fs in h.per_core.values() for f in fs]
    if not fractions:
        return None
    percent = float(np.mean(np.asarray(fractions, np.float32), dtype=np.float64)) * 100.0
    if percent < SPECIAL_OP_THRESHOLD_PERCENT:
        return None
    slow = stragglers(hosts)
    if slow:
        items = "".join(f"<li>Host <b>{h}</b> average barrier-cores time fraction: <b>{a:.1f}%</b></li>"
                        for h, a, _ in slow)
        balance = ("<li><b>Investigate Stragglers:</b> The following hosts are identified as potential stragglers "
                   "with significantly different barrier time fraction compared to others:<ul>" + items + "</ul></li>")
    else:
        balance = ("<li><b>Investigate Workload Balance:</b> Check for stragglers, i.e., workers that are "
                   "significantly slower than others. Uneven workloads can cause faster workers to wait at the "
                   "barrier.</li>")
    text = (f"<p>Your program is likely bottlenecked by <b>TPU {SPECIAL_OP}</b> operations: <b> an average of "
            f"{percent:.1f}% of each step time</b> is spent on these operations. This often indicates a "
            "synchronization issue between workers in a distributed training setup. Please consider the following "
            "optimizations:</p><ul>" + balance +
            "<li><b>Optimize Collective Operations:</b> Operations like AllReduce involve synchronization. Ensure "
            "they are used efficiently. Check the size of data being communicated.</li>"
            "<li><b>Check Network:</b> Network latency or bandwidth can be a bottleneck for distributed operations, "
            "causing workers to wait longer at barriers.</li>"
            "<li><b>Improve Data Input Pipeline:</b> Ensure your data loading and preprocessing pipeline is "
            "efficient and balanced across all workers. A slow input pipeline on one worker can stall all "
            "others.</li></ul>")
    return {"ruleName": "BarrierCoresRule", "suggestionText": text}


def plain_text(html: str) -> str:
    """A suggestion's HTML as terminal text: list items as bullets, tags dropped."""
    text = html.replace("<li>", "\n  • ").replace("<ul>", "").replace("</p>", "\n")
    return re.sub(r"\n\s*\n", "\n", TAG.sub("", text)).strip()




def suggestions(run: RunData, host: str | None = None,
                pipeline: InputPipelineResult | None = None) -> list[dict[str, str]]:
    """XProf's smart suggestions for the run (or one host): every rule of its RegisterAllRules, in
    its order (`pipeline`: the run's input-pipeline analysis, when the caller has it)."""
    return suggestions_of(host_map.run_op_stats(run, host), pipeline)


def suggestions_of(stats: OpStats, pipeline: InputPipelineResult | None = None,
                   signals: suggestion_rules.Signals | None = None) -> list[dict[str, str]]:
    # XProf names straggler hosts by their XSpace's hostname (fields copied one by one: op stats cached
    # by an older version lack the newer HostFractions fields)
    found = barrier_cores_suggestion([HostFractions(h.hostname, h.barrier_cores.per_core, h.barrier_cores.per_step)
                                      for h in stats.per_host if h.barrier_cores is not None])
    if signals is None:
        signals = suggestion_signals.signals(stats, pipeline)
    return ([found] if found else []) + suggestion_rules.apply_rules(signals)


# XProf's rule class names as a reader would name the finding (the JSON keeps XProf's ruleName).
RULE_TITLES = {
    "BarrierCoresRule": "Cores waiting at barriers",
    "CollectiveBoundRule": "Collective-bound",
    "ComputeBoundRule": "Compute-bound",
    "DataShuffleBoundRule": "Data-shuffle-bound",
    "DataTransferBoundRule": "Host-to-device transfer bound",
    "DebugPrintRule": "Debug prints",
    "HostProcessingBoundRule": "Host input processing bound",
    "InputBoundRule": "Input-bound",
    "MemoryBoundRule": "Memory-bound",
    "TensorCoreIdleBoundRule": "TensorCore idle",
}


def rule_title(rule: str) -> str:
    return RULE_TITLES.get(rule, rule)


def advice_rows(found: list[dict[str, str]], checks: list[perf_guide.Check]) -> list[dict[str, Any]]:
    """Every piece of advice as one row: XProf's first, then the guide's by severity."""
    rows = [{"source": "XProf", "severity": "high", "title": rule_title(s["ruleName"]),
             "detail": plain_text(s["suggestionText"]),
             "ops": [], "change": ""} for s in found]
    rows += [{"source": "guide", "severity": c.severity, "title": c.title, "detail": c.detail, "ops": c.ops,
              "change": c.change} for c in checks]
    return rows

"""Input pipeline analyzer (XProf's `input_pipeline_analyzer`): am I input-bound?

A reduce over the hosts' op stats: XProf's input-pipeline analysis (input_analysis.py: per-step
breakdown, input ops, host breakdown, verdict) plus, when tf.data is in use, the tf.data bottleneck
analysis (tf_data.py).
"""
from __future__ import annotations

from tputui.analysis import host_map, input_analysis, tf_data
from tputui.analysis.input_analysis import RECOMMENDATIONS, InputPipelineResult, html_to_text
from tputui.data.run_data import RunData

__all__ = ["RECOMMENDATIONS", "InputPipelineResult", "analyze", "has_data", "html_to_text"]


def analyze(run: RunData, host: str | None = None, **options) -> InputPipelineResult:
    stats = host_map.run_op_stats(run, host)
    result = input_analysis.analyze_stats(run.name, stats)
    if result.tf_data_used:
        result.tf_data = tf_data.analyze_run(run, stats.hosts)
    return result


def has_data(run: RunData) -> bool:
    return bool(run.hosts)

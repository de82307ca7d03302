"""Advice (XProf's `smart_suggestion` tool, and more): XProf's smart suggestions word for word (all
ten rules of its RegisterAllRules), then the Cloud TPU performance guide's checks on this profile
(see analysis/advice_rules.py, suggestion_rules.py and perf_guide.py). `to_json()` has XProf's
`suggestions` ([{ruleName, suggestionText}]), the `signals` the rules read and our `checks`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tputui.analysis import advice_rules, host_map, perf_guide, suggestion_rules, suggestion_signals, tpu_runtime_log
from tputui.data.run_data import RunData


@dataclass
class AdviceResult:
    suggestions: list[dict[str, str]]  # XProf's smart suggestions (ruleName, suggestionText)
    checks: list[perf_guide.Check]
    hosts: list[str]
    signals: suggestion_rules.Signals | None = None

    def to_json(self) -> dict[str, Any]:
        return {"suggestions": self.suggestions, "signals": suggestion_rules.signals_json(self.signals),
                "checks": [c.to_json() for c in self.checks]}

    def items(self) -> pl.DataFrame:
        """Every piece of advice, XProf's first: source, title, detail (plain text), ops."""
        rows = advice_rules.advice_rows(self.suggestions, self.checks)
        return pl.DataFrame(rows, schema={"source": pl.String, "severity": pl.String, "title": pl.String,
                                          "detail": pl.String, "ops": pl.List(pl.String), "change": pl.String})

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"advice": self.items(), "op_findings": perf_guide.findings_frame(self.checks)}


def analyze(run: RunData, host: str | None = None, tpu_logs: str | None = None, **_options) -> AdviceResult:
    """`tpu_logs`: a folder (or file) holding the TPU runtime log, whose premapped-buffer failures and
    slow initialization are checks too."""
    hosts = [host] if host else run.require_hosts()
    stats = host_map.run_op_stats(run, host)
    signals = suggestion_signals.signals(stats)
    found = perf_guide.by_severity(perf_guide.checks(run, host) + tpu_runtime_log.checks(tpu_runtime_log.read(tpu_logs)))
    return AdviceResult(advice_rules.suggestions_of(stats, signals=signals), found, hosts, signals)

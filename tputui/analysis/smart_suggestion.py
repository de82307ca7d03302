"""Advice (XProf's `smart_suggestion` tool, and more): XProf's smart suggestions word for word,
then the Cloud TPU performance guide's checks on this profile (see analysis/advice_rules.py and
analysis/perf_guide.py). `to_json()` has XProf's `suggestions` and our `checks`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tputui.analysis import advice_rules, perf_guide
from tputui.data.run_data import RunData


@dataclass
class AdviceResult:
    suggestions: list[dict[str, str]]  # XProf's smart suggestions (ruleName, suggestionText)
    checks: list[perf_guide.Check]
    hosts: list[str]
    barrier_percent: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"suggestions": self.suggestions, "checks": [c.to_json() for c in self.checks]}

    def items(self) -> pl.DataFrame:
        """Every piece of advice, XProf's first: source, title, detail (plain text), ops."""
        rows = advice_rules.advice_rows(self.suggestions, self.checks)
        return pl.DataFrame(rows, schema={"source": pl.String, "severity": pl.String, "title": pl.String,
                                          "detail": pl.String, "ops": pl.List(pl.String), "change": pl.String})

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"advice": self.items(), "op_findings": perf_guide.findings_frame(self.checks)}


def analyze(run: RunData, host: str | None = None, **_options) -> AdviceResult:
    hosts = [host] if host else run.require_hosts()
    return AdviceResult(advice_rules.suggestions(run, host), perf_guide.checks(run, host), hosts)

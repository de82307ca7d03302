"""XProf's own smart-suggestion rule tests, ported: same inputs -> same suggestion (text) or none.

XProf's open-source converter never runs these rules (RegisterAllRulesFor3P registers only
BarrierCoresRule), so its unit tests are the oracle for their conditions and wording. Each case
names the XProf test it comes from (xprof/convert/smart_suggestion/<file>:<TEST name>); the mock
ToolDataProvider's figures become our `Signals` (an error from the provider: the signal is None).
The real-pipeline checks (profile -> our analysis -> signals, against XProf's tool outputs) are in
tests/test_smart_suggestion.py.
"""
from __future__ import annotations

import pytest

from tputui.analysis import advice_rules, suggestion_rules, suggestion_signals
from tputui.analysis.barrier_cores import HostFractions
from tputui.analysis.suggestion_rules import Signals


def steps_of(*steps: dict[str, int], duration_ps: int = 100) -> list[tuple[int, int, int]]:
    """OpStats step_db steps of one core (core 0, `duration_ps` long), each with HLO metrics by category."""
    combined = [(i, {0: (duration_ps, cats, False)}) for i, cats in enumerate(steps)]
    return suggestion_signals.category_ps_of_steps(combined)


def overview(mxu: float, hbm: float) -> dict:
    return {"mxu_utilization": mxu, "hbm_utilization": hbm}


def input_pipeline(input_percent: float, enqueue_us: float = 0.0, demanded_file_read_us: float = 0.0) -> dict:
    # GetNonEnqueueUs: demanded + advanced file read + preprocessing + unclassified
    return {"input_percent": input_percent, "enqueue_us": enqueue_us, "non_enqueue_us": demanded_file_read_us}


# (XProf test, rule, signals, suggestion expected, substring of its text)
CASES = [
    ("collective_bound_rule_test.cc:MeetsConditionsAboveThreshold", suggestion_rules.collective_bound,
     Signals(step_category_ps=steps_of({"all-reduce": 35}, {"all-reduce": 36})), True, None),
    ("collective_bound_rule_test.cc:MeetsConditionsBelowThreshold", suggestion_rules.collective_bound,
     Signals(step_category_ps=steps_of({"all-reduce": 1}, {"all-reduce": 2})), False, None),
    ("collective_bound_rule_test.cc:MeetsConditionsError (GetOpStats fails)", suggestion_rules.collective_bound,
     Signals(), False, None),
    ("compute_bound_rule_test.cc:MeetsConditions", suggestion_rules.compute_bound,
     Signals(**overview(71.0, 49.0)), True, "71.0%</b> and low HBM Bandwidth utilization of <b>49.0%"),
    ("compute_bound_rule_test.cc:MxuUtilizationTooLow", suggestion_rules.compute_bound,
     Signals(**overview(69.0, 49.0)), False, None),
    ("compute_bound_rule_test.cc:HbmUtilizationTooHigh", suggestion_rules.compute_bound,
     Signals(**overview(71.0, 51.0)), False, None),
    ("data_shuffle_bound_rule_test.cc:MeetsConditionsAboveThreshold", suggestion_rules.data_shuffle_bound,
     Signals(step_category_ps=steps_of({"shuffle": 24}, {"gather": 37})), True, None),
    ("data_shuffle_bound_rule_test.cc:MeetsConditionsBelowThreshold", suggestion_rules.data_shuffle_bound,
     Signals(step_category_ps=steps_of({"shuffle": 1}, {"gather": 2})), False, None),
    ("data_shuffle_bound_rule_test.cc:MeetsConditionsError (GetOpStats fails)", suggestion_rules.data_shuffle_bound,
     Signals(), False, None),
    ("data_transfer_bound_rule_test.cc:MeetsConditions", suggestion_rules.data_transfer_bound,
     Signals(**input_pipeline(20.0, 40.0, 10.0)), True, "16.0% of the total step time"),
    ("data_transfer_bound_rule_test.cc:NotInputBound", suggestion_rules.data_transfer_bound,
     Signals(**input_pipeline(5.0, 40.0, 10.0)), False, None),
    ("data_transfer_bound_rule_test.cc:InputBoundButNotDataTransferBound", suggestion_rules.data_transfer_bound,
     Signals(**input_pipeline(20.0, 10.0, 90.0)), False, None),
    ("host_processing_bound_rule_test.cc:MeetsConditions", suggestion_rules.host_processing_bound,
     Signals(**input_pipeline(20.0, 10.0, 90.0)), True, "18.0% of the total step time"),
    ("host_processing_bound_rule_test.cc:NotInputBound", suggestion_rules.host_processing_bound,
     Signals(**input_pipeline(5.0, 10.0, 90.0)), False, None),
    ("host_processing_bound_rule_test.cc:InputBoundButNotHostProcessingBound", suggestion_rules.host_processing_bound,
     Signals(**input_pipeline(20.0, 90.0, 10.0)), False, None),
    ("memory_bound_rule_test.cc:MeetsConditions", suggestion_rules.memory_bound,
     Signals(**overview(49.0, 71.0)), True, "71.0%</b> and low MXU utilization of <b>49.0%"),
    ("memory_bound_rule_test.cc:HbmUtilizationTooLow", suggestion_rules.memory_bound,
     Signals(**overview(49.0, 69.0)), False, None),
    ("memory_bound_rule_test.cc:MxuUtilizationTooHigh", suggestion_rules.memory_bound,
     Signals(**overview(51.0, 71.0)), False, None),
    ("tensor_core_idle_bound_rule_test.cc:MeetsConditions", suggestion_rules.tensor_core_idle_bound,
     Signals(step_time_ms=100.0, tc_idle_ms=11.0, **overview(49.0, 49.0)), True,
     "High TensorCore idle time percentage of <b>11.0%</b>"),
    ("tensor_core_idle_bound_rule_test.cc:IdleTimeTooLow", suggestion_rules.tensor_core_idle_bound,
     Signals(step_time_ms=100.0, tc_idle_ms=9.0, **overview(49.0, 49.0)), False, None),
    ("tensor_core_idle_bound_rule_test.cc:NoTpuStepTimeBreakdownField (generic breakdown)",
     suggestion_rules.tensor_core_idle_bound, Signals(step_time_ms=100.0, tc_idle_ms=None), False, None),
    ("tensor_core_idle_bound_rule_test.cc:HbmAndMxuUtilizationTooHigh", suggestion_rules.tensor_core_idle_bound,
     Signals(step_time_ms=100.0, tc_idle_ms=11.0, **overview(51.0, 51.0)), False, None),
    # No XProf test for these two; the cases follow the conditions in input_bound_rule.h and
    # debug_print_rule.h.
    ("input_bound_rule.h (no XProf test): infeed but no classified host input time", suggestion_rules.input_bound,
     Signals(**input_pipeline(20.0)), True, "<b>20.0% of step time</b> is spent on input operations."),
    ("input_bound_rule.h (no XProf test): host input time classified", suggestion_rules.input_bound,
     Signals(**input_pipeline(20.0, 10.0, 90.0)), False, None),
    ("debug_print_rule.h (no XProf test): one host at 6%", suggestion_rules.debug_print,
     Signals(debug_print_hosts=[("host0", 2.0), ("host1", 6.0)]), True,
     "<b> up to 6.0% of step time</b> is spent on these operations on some hosts. "),
    ("debug_print_rule.h (no XProf test): every host below 5%", suggestion_rules.debug_print,
     Signals(debug_print_hosts=[("host0", 4.9)]), False, None),
]


@pytest.mark.parametrize("origin,rule,signals,fires,substring", CASES, ids=[c[0] for c in CASES])
def test_ported_xprof_rule_tests(origin, rule, signals, fires, substring):
    found = rule(signals)
    assert (found is not None) == fires
    if found is not None:
        assert found["ruleName"] == {
            "collective_bound": "CollectiveBoundRule", "compute_bound": "ComputeBoundRule",
            "data_shuffle_bound": "DataShuffleBoundRule", "data_transfer_bound": "DataTransferBoundRule",
            "debug_print": "DebugPrintRule", "host_processing_bound": "HostProcessingBoundRule",
            "input_bound": "InputBoundRule", "memory_bound": "MemoryBoundRule",
            "tensor_core_idle_bound": "TensorCoreIdleBoundRule"}[rule.__name__]
        if substring:
            assert substring in found["suggestionText"]


def test_collective_signal_mock_call():
    """collective_bound_rule_test.cc:MockCallTest: one 100 ps step, 5 ps of all-reduce -> 5%."""
    s = Signals(step_category_ps=steps_of({"all-reduce": 5}))
    assert suggestion_rules.collective_percent(s) == pytest.approx(5.0, abs=0.001)


def test_data_shuffle_signal_is_the_mean_of_step_fractions():
    """data_shuffle_bound_rule_test.cc:MeetsConditionsAboveThreshold: (24% + 37%) / 2 = 30.5% >= 30%."""
    s = Signals(step_category_ps=steps_of({"shuffle": 24}, {"gather": 37}))
    assert suggestion_rules.data_shuffle_percent(s) == pytest.approx(30.5, abs=1e-4)
    assert suggestion_rules.collective_percent(s) == 0.0  # shuffle categories are not collectives


# barrier_cores_rule_test.cc: chip-level fractions (HostFractions.per_core), host-level (per_step)
def test_barrier_cores_meets_conditions():
    """barrier_cores_rule_test.cc:MeetsConditions: (0.15+0.25+0.05+0.35)/4 = 20%."""
    hosts = [HostFractions("h", per_core={"chip0": [0.15, 0.25], "chip1": [0.05, 0.35]})]
    found = advice_rules.barrier_cores_suggestion(hosts)
    assert found is not None and found["ruleName"] == "BarrierCoresRule"
    assert "20.0% of each step time" in found["suggestionText"]


def test_barrier_cores_not_special_op_bound():
    """barrier_cores_rule_test.cc:NotSpecialOpBound: 8.25% < 10%."""
    hosts = [HostFractions("h", per_core={"chip0": [0.01, 0.02], "chip1": [0.05, 0.25]})]
    assert advice_rules.barrier_cores_suggestion(hosts) is None


def test_barrier_cores_error_fetching():
    """barrier_cores_rule_test.cc:ErrorFetchingPercentile: no analyzer result -> no suggestion."""
    assert advice_rules.barrier_cores_suggestion([]) is None


def test_barrier_cores_with_stragglers():
    """barrier_cores_rule_test.cc:MeetsConditionsWithStragglers: hosts at 50, 50, 50 and 10%."""
    per_host = {"host0": [0.5, 0.5], "host1": [0.5, 0.5], "host2": [0.5, 0.5], "host3": [0.1, 0.1]}
    hosts = [HostFractions(h, per_step=f) for h, f in per_host.items()]
    hosts[0].per_core = {"chip0": [0.5] * 6 + [0.1] * 2}
    found = advice_rules.barrier_cores_suggestion(hosts)
    assert found is not None
    assert "<li>Host <b>host3</b> average barrier-cores time fraction: <b>10.0%</b></li>" in found["suggestionText"]
    assert "Investigate Stragglers" in found["suggestionText"]


def test_rules_run_in_xprof_registration_order():
    """all_rules.h RegisterAllRules (keep-sorted): every rule that fires, in that order."""
    s = Signals(mxu_utilization=82.0, hbm_utilization=10.0, input_percent=30.0, enqueue_us=50.0, non_enqueue_us=50.0,
                step_category_ps=steps_of({"all-reduce": 40, "sort": 35}), debug_print_hosts=[("h", 9.0)])
    assert [f["ruleName"] for f in suggestion_rules.apply_rules(s)] == [
        "CollectiveBoundRule", "ComputeBoundRule", "DataShuffleBoundRule", "DataTransferBoundRule", "DebugPrintRule",
        "HostProcessingBoundRule"]

"""op_metrics: nesting / self time on synthetic intervals, and XProf's device figures on the TPU profile."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import PROFILES, oracle_dir

from tputui.analysis import op_metrics as om
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData


def _frame(profile: str):
    return RunData(open_logdir(str(PROFILES / profile)).runs[0]).frame()


def _sorted(intervals):
    iv = sorted(intervals, key=lambda x: (x[0], -x[1]))
    return np.array([a for a, _ in iv]), np.array([b for _, b in iv])


def test_nest_parents_and_self_times():
    # root [0,100] > a [10,40] > b [20,30]; c [40,60] touches a's end (sibling, not child);
    # z [60,60] zero-length at c's end (inside c); d [100,120] after root.
    s, e = _sorted([(0, 100), (10, 40), (20, 30), (40, 60), (60, 60), (100, 120)])
    parent = om.nest_parents(s, e)
    assert parent.tolist() == [-1, 0, 1, 0, 3, -1]
    assert om.self_times(s, e).tolist() == [100 - 30 - 20, 30 - 10, 10, 20, 0, 20]


def test_nest_parents_identical_spans_and_partial_overlap():
    s, e = _sorted([(0, 10), (0, 10), (5, 20)])  # the second copy nests in the first
    parent = om.nest_parents(s, e)
    assert parent[:2].tolist() == [-1, 0]
    assert parent[2] == -1  # [5,20] overlaps but is not inside: a root, as XProf's stack pops


def test_parse_tf_op():
    assert om.parse_tf_op("model/dense/MatMul:MatMul") == ("tensorflow", "model/dense/MatMul", "MatMul")
    assert om.parse_tf_op("Iterator::Root::Prefetch") == ("tf.data", "Iterator::Root::Prefetch", "Dataset")
    assert om.parse_tf_op("jit(f)/jit(main)/add:") == ("jax", "jit(f)/jit(main)/add", "add")
    assert om.parse_tf_op("PjitFunction(train_step)")[0] == "unknown"
    assert om.parse_tf_op("$jax_mlp.py:21 loss")[0] == "unknown"


def test_union_length():
    assert om.union_length(np.array([0, 5, 20]), np.array([10, 12, 25])) == 17


@pytest.fixture(scope="module")
def tpu():
    return _frame("tpu_v6e_inference")


def _overview_oracle(profile):
    return json.loads((oracle_dir(profile) / "overview_page.json").read_text())


def test_tpu_idle_and_duty_cycle_match_xprof(tpu):
    p = _overview_oracle("tpu_v6e_inference")[0]["p"]
    db = om.device_op_metrics(tpu)
    # XProf prints one decimal; ours must round to the same figure.
    assert f"{db.idle_ratio * 100:.1f}%" == p["device_idle_time_percent"]
    duty = db.busy_time_ps / (db.busy_time_ps + db.idle_duty_ps) * 100
    assert f"{duty:.1f}%" == p["device_duty_cycle_percent"]
    assert db.idle_duty_ps == pytest.approx(float(p["idle_time_high_confidence_ps"]), rel=1e-5)


def test_tpu_top_tf_ops_match_xprof(tpu):
    rows = _overview_oracle("tpu_v6e_inference")[0]["rows"]
    tf = om.tf_op_metrics(om.device_op_metrics(tpu))
    top = tf.ops.sort("self_time_ps", descending=True, maintain_order=True).head(len(rows))
    for want, (name, cat, self_ps, flops, time_ps) in zip(
            rows, top.select("name", "category", "self_time_ps", "flops", "time_ps").iter_rows()):
        frac, _, wcat, wname, rate = (c["v"] for c in want["c"])
        assert (name, cat) == (wname, wcat)
        assert self_ps / tf.total_time_ps == pytest.approx(frac, rel=1e-9, abs=1e-12)
        assert (flops / (time_ps / 1000) if time_ps else 0.0) == pytest.approx(rate, rel=1e-9)


def test_host_tf_ops_of_tf_profile():
    db = om.host_op_metrics(_frame("tf_loop"))
    names = set(db.ops["name"].to_list())
    assert "Iterator::Root::Prefetch" in names
    assert (db.ops["self_time_ps"] <= db.ops["time_ps"]).all()
    assert db.total_op_time_ps == db.ops["self_time_ps"].sum()
    assert 0 <= db.idle_ratio <= 1


def test_nest_parents_equals_xprof_ancestor_stack_on_random_intervals():
    """The vectorized parents equal a plain AncestorStack walk (partial overlaps included)."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        m = int(rng.integers(1, 40))
        s = np.sort(rng.integers(0, 100, m))
        e = s + rng.integers(0, 30, m)
        order = np.lexsort((-e, s))
        s, e = s[order], e[order]
        stack, want = [], []
        for i in range(m):
            while stack and e[stack[-1]] < e[i]:  # the top does not include i: pop it
                stack.pop()
            want.append(stack[-1] if stack else -1)
            stack.append(i)
        assert om.nest_parents(s, e).tolist() == want


def test_event_stat_answers_any_row_order_like_the_whole_profile_spread():
    """event_stat for a line's rows (contiguous), a shuffled copy and scattered rows equals the
    whole-profile answer indexed by those rows."""
    from conftest import PROFILES

    from tputui.analysis.op_metrics import event_stat
    from tputui.data.xspace import decode

    path = next(PROFILES.rglob("t1v-tpu-host.xplane.pb"))
    frame = decode(path.read_bytes())
    rng = np.random.default_rng(0)
    for name in ("device_offset_ps", "device_duration_ps", "run_id"):
        has_all, val_all = event_stat(frame, name)
        assert has_all.any(), name
        for line in range(len(frame.raw.line_id)):
            sl = frame.line_events(line)
            rows = np.arange(sl.start, sl.stop)
            for pick in (rows, rng.permutation(rows), np.sort(rng.choice(rows, min(len(rows), 7)))):
                has, val = event_stat(frame, name, pick)
                np.testing.assert_array_equal(has, has_all[pick])
                np.testing.assert_array_equal(val[has], val_all[pick][has])

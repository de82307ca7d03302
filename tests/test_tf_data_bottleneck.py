"""tf.data bottleneck tool: pipelines slowest first, the slowest call's iterator tree with start,
duration, self time, calls, the critical path and the bottleneck (XProf 2.24 has no open-source
converter for this tool, so the figures are checked against the raw iterator events of the real
tf_loop / tf_keras profiles, exactly, in µs)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import PROFILES

from tputui.analysis import tf_data_bottleneck
from tputui.analysis.result import NoDataError
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text
from tputui.screens.tf_data import TfDataScreen

SIZE = (120, 40)


def run_of(profile: str) -> RunData:
    return RunData(open_logdir(str(PROFILES / profile)).runs[0], use_cache=False)


def iterator_events(run: RunData, name: str) -> tuple[np.ndarray, np.ndarray]:
    fr = run.frame(run.hosts[0])
    md = fr.events["metadata"].to_numpy()
    wanted = [i for i, n in enumerate(fr.raw.em_name) if n == name]
    rows = np.flatnonzero(np.isin(md, wanted))
    return fr.start_ps[rows].astype(np.int64), fr.raw.event_duration_ps[rows].astype(np.int64)


def test_tree_of_the_slowest_call_from_raw_events():
    run = run_of("tf_loop")
    result = tf_data_bottleneck.analyze(run)
    tree = result.iterator_tree(0)
    assert tree["iterator"].to_list() == ["Root", "Prefetch", "MapAndBatch", "ForeverRepeat", "TensorSlice"]
    assert tree["depth"].to_list() == [0, 1, 2, 3, 4] and tree["parent"][1] == "Iterator::Root"
    # the slowest call is the longest Iterator::Root event
    s, d = iterator_events(run, "Iterator::Root")
    slow = int(np.argmax(d))
    assert tree["duration_us"][0] == d[slow] / 1e6 and result.pipelines[0].max_latency_ps == d[slow]
    # Prefetch runs inside it: its start is relative to the call's start
    ps, pd = iterator_events(run, "Iterator::Root::Prefetch")
    inside = (ps >= s[slow]) & (ps + pd <= s[slow] + d[slow])
    assert tree["start_us"][1] == (ps[inside].min() - s[slow]) / 1e6
    assert tree["calls"][3] == 32 and tree["calls"][4] == 32  # one batch: 32 elements pulled
    assert tree.filter(tree["bottleneck"])["iterator"].to_list() == ["MapAndBatch"]
    assert tree["critical"].all()
    # self time of the root: its duration minus the overlapping child (Prefetch)
    assert tree["self_time_us"][0] == pytest.approx(tree["duration_us"][0] - tree["duration_us"][1], abs=1e-6)


def test_export_json_and_csv():
    run = run_of("tf_keras")
    doc = json.loads(export_text(run, "tf_data_bottleneck_analysis", "json"))
    pipe = doc["pipelines"][0]
    assert pipe["bottleneck_iterator"] == "MapAndBatch"
    # tf_keras maps with tf.numpy_function: the advice names it, not the MapAndBatch kind
    assert pipe["advice"].startswith("It runs a tf.numpy_function (707 PyFunc ops on tf.data threads)")
    assert [h["kind"] for h in pipe["holds"]] == ["numpy_function"]
    assert [i["iterator"] for i in pipe["iterators"]] == ["Root", "Prefetch", "MapAndBatch", "Shuffle", "TensorSlice"]
    csv = export_text(run, "tf_data_bottleneck_analysis", "csv", table="iterators").splitlines()
    assert csv[0].startswith("host,input_pipeline,iterator,long_name") and len(csv) == 6
    with pytest.raises(NoDataError, match="no tf.data"):
        tf_data_bottleneck.analyze(run_of("jax_mlp"))
    assert not tf_data_bottleneck.has_data(run_of("jax_mlp")) and tf_data_bottleneck.has_data(run)


async def test_screen_tree_and_suggestion():
    app = TputuiApp(open_logdir(str(PROFILES / "tf_loop")), tool="tf_data_bottleneck_analysis", use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TfDataScreen) and screen.error is None
        labels = []

        def walk(node):
            for c in node.children:
                labels.append(c.label.plain)
                walk(c)

        walk(screen.iter_tree.root)
        assert labels[2].startswith("★ MapAndBatch") and labels[0].startswith("▶ Root")
        text = str(screen.query_one("#tfd-suggestion").render())
        assert "Bottleneck: MapAndBatch" in text and "num_parallel_calls" in text
        await pilot.press("tab")
        assert screen.iter_tree.has_focus


def _snap(profile: str):
    async def loaded(pilot):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    return TputuiApp(open_logdir(str(PROFILES / profile)), tool="tf_data_bottleneck_analysis", use_cache=False), loaded


def test_tf_data_snapshot(snap_compare):
    app, loaded = _snap("tf_loop")
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_tf_data_small_terminal_snapshot(snap_compare):
    app, loaded = _snap("tf_keras")
    assert snap_compare(app, terminal_size=(80, 24), run_before=loaded)


def test_tf_data_no_color_snapshot(snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app, loaded = _snap("tf_loop")
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_tf_data_light_theme_snapshot(snap_compare):
    app, loaded = _snap("tf_keras")

    async def light(pilot):
        pilot.app.theme = "textual-light"
        await loaded(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=light)

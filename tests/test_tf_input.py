"""TensorFlow input (issue #31), each finding on a small TF fixture built to show it
(scripts/make_tf_input_fixtures.py) and silent on the others:

  tf_input/iterator_outside_step  next(iterator) before the step's Trace context  -> iterator_outside_step
  tf_input/from_generator         Dataset.from_generator                         -> python_input (from_generator)
  tf_input/py_function_map        a map calling tf.py_function                   -> python_input (py_function)
  tf_input/device_pipeline        MirroredStrategy, a distributed dataset         -> two Device:N pipelines
  tf_input/tfrecord_late_shard    4 TFRecord files read in turn, map, then shard  -> sequential_file_reads, shard_late
                                  (its step compiled with jit_compile=True: the only TF fixture tf_without_xla skips)
  profiles/tf_loop, tf_keras      maps calling tf.numpy_function                  -> python_input (numpy_function)

XProf computes the overview and input pipeline of these fixtures (oracle/ beside each): its input
conclusion is checked equal to ours, and it shows the point of the first check: with the iterator
outside the step, XProf sees no input wait at all. XProf's converter has no tf.data bottleneck tool,
so the pipelines' runs are checked against the raw `Iterator::Root` events.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis import tf_data_bottleneck
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text, run_tool

TF_INPUT = FIXTURES / "tf_input"
FIXTURE = {name: TF_INPUT / name for name in ("iterator_outside_step", "from_generator", "py_function_map",
                                              "device_pipeline", "tfrecord_late_shard")} | {
    "tf_loop": PROFILES / "tf_loop", "tf_keras": PROFILES / "tf_keras", "jax_mlp": PROFILES / "jax_mlp"}
# finding (check, kind of Python) -> the fixtures it fires on; silent on every other one
FIRES_ON = {("iterator_outside_step", None): {"iterator_outside_step"},
            ("python_input", "from_generator"): {"from_generator"},
            ("python_input", "py_function"): {"py_function_map"},
            ("python_input", "numpy_function"): {"tf_loop", "tf_keras"},
            ("sequential_file_reads", None): {"tfrecord_late_shard"},
            ("shard_late", None): {"tfrecord_late_shard"},
            # every TensorFlow program here but the one compiled with jit_compile=True; never a JAX one
            ("tf_without_xla", None): {"iterator_outside_step", "from_generator", "py_function_map", "device_pipeline",
                                       "tf_loop", "tf_keras"}}


def _run(name: str) -> RunData:
    return RunData(open_logdir(str(FIXTURE[name])).runs[0], use_cache=False)


@pytest.fixture(scope="module")
def advice() -> dict[str, dict[str, dict]]:
    return {name: {c["check"]: c for c in run_tool(_run(name), "smart_suggestion").to_json()["checks"]}
            for name in FIXTURE}


@pytest.mark.parametrize("finding", sorted(FIRES_ON, key=str), ids=lambda f: f"{f[0]}:{f[1]}")
def test_each_finding_fires_on_its_fixture_only(finding, advice):
    check, kind = finding
    fired = {name for name, checks in advice.items() if check in checks
             and (kind is None or kind in {f["kind"] for f in checks[check]["findings"]})}
    assert fired == FIRES_ON[finding]


def test_iterator_outside_the_step_figures(advice):
    c = advice["iterator_outside_step"]["iterator_outside_step"]
    f = c["findings"][0]
    assert (f["outside_calls"], f["iterator_calls"], f["thread"]) == (8, 8, "python")  # every GetNext, 8 steps
    assert "Trace('train'" in c["what_to_change"] and c["severity"] == "medium"
    # XProf sees it the same way: no input wait in the steps (the point of the check), while the same
    # pipeline fetched inside the step is input-bound
    ours = json.loads(export_text(_run("iterator_outside_step"), "overview_page", "json"))
    xprof = json.loads((TF_INPUT / "iterator_outside_step" / "oracle" / "overview_page.json").read_text())[1]["p"]
    assert ours["input_conclusion"] == xprof["input_conclusion"] and "waiting for input" not in ours["input_conclusion"]
    assert "input_bound" not in advice["iterator_outside_step"] and "input_bound" in advice["py_function_map"]


@pytest.mark.parametrize("name", ["from_generator", "py_function_map", "device_pipeline", "tfrecord_late_shard"])
def test_input_conclusion_equals_xprofs(name):
    ours = json.loads(export_text(_run(name), "overview_page", "json"))["input_conclusion"]
    xprof = json.loads((TF_INPUT / name / "oracle" / "overview_page.json").read_text())[1]["p"]["input_conclusion"]
    assert ours == xprof and "HIGHLY input-bound" in ours


def test_pipeline_shape_checks_name_the_iterators(advice):
    reads = advice["tfrecord_late_shard"]["sequential_file_reads"]
    assert reads["findings"][0]["op"].endswith("::FlatMap[0]::TFRecord")  # TFRecordDataset(files): a FlatMap
    assert "num_parallel_reads=tf.data.AUTOTUNE" in reads["what_to_change"]
    shard = advice["tfrecord_late_shard"]["shard_late"]
    assert [f["op"] for f in shard["findings"]] == ["Iterator::Root::Prefetch::BatchV2::Shard"]
    assert "list_files" in shard["what_to_change"]
    xla = advice["tf_loop"]["tf_without_xla"]
    assert xla["findings"][0]["tf_function_calls"] == 20 and "jit_compile=True" in xla["what_to_change"]


def test_advice_is_named_from_what_the_pipeline_holds():
    doc = {n: json.loads(export_text(_run(n), "tf_data_bottleneck_analysis", "json"))["pipelines"][0]
           for n in ("from_generator", "py_function_map", "iterator_outside_step")}
    gen, pyf, plain = doc["from_generator"], doc["py_function_map"], doc["iterator_outside_step"]
    assert gen["holds"] == [{"kind": "from_generator", "what": "a Python generator (tf.data.Dataset.from_generator)",
                             "evidence": "Iterator::Root::Prefetch::BatchV2::FlatMap[0]::Generator"}]
    assert gen["advice"].startswith("It runs a Python generator") and "num_parallel_reads" in gen["advice"]
    assert pyf["bottleneck_iterator"] == "MapAndBatch" and [h["kind"] for h in pyf["holds"]] == ["py_function"]
    assert pyf["advice"].startswith("It runs a tf.py_function (96 EagerPyFunc ops on tf.data threads)")
    # plain TensorFlow ops in the map: nothing held, the advice follows the bottleneck's kind
    assert plain["holds"] == [] and plain["advice"] == tf_data_bottleneck.specific_advice(plain["bottleneck_iterator"])


def test_device_side_pipelines_apart():
    result = tf_data_bottleneck.analyze(_run("device_pipeline"))
    doc = result.to_json()
    assert [p["input_pipeline"] for p in doc["pipelines"]] == ["Host:0"]
    assert [(p["input_pipeline"], p["side"], p["calls"]) for p in doc["device_pipelines"]] == \
        [("Device:0", "device", 8), ("Device:1", "device", 8)]  # one per replica, a call per step
    assert doc["pipelines"][0]["calls"] == 16  # the host pipeline feeds both replicas
    # XProf ranks the host pipelines only: a slower device-side pipeline does not take the first place
    assert doc["slowest_input_pipeline"] == "Host:0"
    assert max(p["max_latency_us"] for p in doc["device_pipelines"]) > doc["pipelines"][0]["max_latency_us"]
    assert result.pipeline_frame()["side"].to_list() == ["host", "device", "device"]
    for name in ("from_generator", "py_function_map", "iterator_outside_step"):
        assert not tf_data_bottleneck.analyze(_run(name)).analysis.device_pipelines
    for name in ("tf_loop", "tf_keras"):
        assert not tf_data_bottleneck.analyze(_run(name)).analysis.device_pipelines


@pytest.mark.parametrize("name", ["tf_loop", "py_function_map"])
def test_runs_ranked_by_duration_from_raw_events(name):
    run = _run(name)
    pipe = tf_data_bottleneck.analyze(run).pipelines[0]
    fr = run.frame(run.hosts[0])
    md = fr.events["metadata"].to_numpy()
    root = [i for i, n in enumerate(fr.raw.em_name) if n == "Iterator::Root"]
    rows = np.flatnonzero(np.isin(md, root))
    durations = np.sort(fr.raw.event_duration_ps[rows].astype(np.int64))[::-1] / 1e6
    assert pipe.runs["rank"].to_list() == list(range(1, pipe.calls + 1)) and pipe.calls == len(rows)
    assert pipe.runs["duration_us"].to_list() == durations.tolist()
    assert pipe.runs["duration_us"][0] == pipe.max_latency_ps / 1e6
    assert pipe.runs["bottleneck_iterator"][0] == pipe.bottleneck_iterator
    assert pipe.runs["bottleneck_iterator"].null_count() == 0  # every run walked (under MAX_RUNS_WALKED)
    csv = export_text(run, "tf_data_bottleneck_analysis", "csv", table="runs").splitlines()
    assert csv[0] == "host,input_pipeline,rank,start_us,duration_us,bottleneck_iterator,bottleneck_self_us"
    assert len(csv) == pipe.calls + 1


def test_help_explains_iterator_long_names():
    from tputui.screens.tf_data import TfDataScreen

    assert "Iterator::A::B::C is the iterator of C, which feeds B, which feeds A" in TfDataScreen.help_notes


async def test_screen_shows_device_pipelines_and_other_runs():
    from tputui.app import TputuiApp
    from tputui.screens.tf_data import TfDataScreen

    app = TputuiApp(open_logdir(str(FIXTURE["device_pipeline"])), tool="tf_data_bottleneck_analysis", use_cache=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TfDataScreen) and screen.error is None
        assert "the last 2 device-side" in str(screen.pipes.border_title)
        text = str(screen.query_one("#tfd-suggestion").render())
        assert "Other runs, slowest first (15): #2 332.934 µs" in text and "device-side" not in text
        await pilot.press("down")
        text = str(screen.query_one("#tfd-suggestion").render())
        assert "A device-side pipeline of a distribution strategy" in text
        assert "Other runs, slowest first (7)" in text

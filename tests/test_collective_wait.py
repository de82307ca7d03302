"""An all-reduce's wait for the slowest core in the trace viewer's details (issue #31), against XProf's
pod viewer: a core's all-reduce time is its "Device collective communication" there, and the wait plus
the exchange add up to it, the last core to arrive waiting for nobody."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, PROFILES, settle

from tputui.analysis.collective_wait import wait_for_slowest
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

POD = FIXTURES / "pod" / "pod_v5e_single"


@pytest.fixture(scope="module")
def frame():
    run = RunData(open_logdir(str(POD)).run(None), use_cache=False)
    return run.frame(run.hosts[0])


def _all_reduces(frame) -> list[int]:
    names = frame.metadata_names(frame.events["metadata"].to_numpy()).to_list()
    return [i for i, n in enumerate(names) if str(n).startswith("%all-reduce")]


def test_wait_plus_exchange_is_xprofs_collective_time_per_core(frame):
    ours: dict[int, list[float]] = {}
    for i in _all_reduces(frame):
        w = wait_for_slowest(frame, i)
        assert w is not None and w.cores == 4
        core = int(frame.raw.plane_name[int(frame.events["plane"][i])].rsplit(":", 1)[1])
        ours.setdefault(core, []).append((w.waited_ps + w.together_ps) / 1e6)
    xprof: dict[int, list[float]] = {}
    pod = json.loads((POD / "oracle" / "pod_viewer.json").read_text())
    for step in pod["podStatsSequence"]["podStatsMap"]:
        for core, v in step["podStatsPerCore"].items():
            xprof.setdefault(int(core), []).append(v["stepBreakdownUs"]["3"])  # Device collective communication
    assert set(ours) == set(xprof)
    for core in ours:
        assert sorted(ours[core]) == pytest.approx(sorted(xprof[core]), abs=1e-3)


def test_the_last_core_waits_for_nobody_and_the_others_name_it(frame):
    waits = [wait_for_slowest(frame, i) for i in _all_reduces(frame)]
    last = {w.last_core for w in waits if w is not None}
    assert last == {"/device:TPU:1"}  # the fixture's slow chip on this host
    for w in waits:
        assert w is not None
        if w.this_core == w.last_core:
            assert w.waited_ps == 0 and "arrived last" in w.text(str)
        else:
            assert w.waited_ps > 0 and "for the slowest core (/device:TPU:1 arrived last of 4)" in w.text(str)
    # the exchange is the same for every core of a step: the slowest core's whole all-reduce
    together = {w.together_ps for w in waits if w is not None}
    assert len(together) == 1


def test_other_events_and_cpu_profiles_have_no_wait(frame):
    names = frame.metadata_names(frame.events["metadata"].to_numpy()).to_list()
    fusion = next(i for i, n in enumerate(names) if str(n).startswith("%fusion"))
    assert wait_for_slowest(frame, fusion) is None
    run = RunData(open_logdir(str(PROFILES / "jax_mlp")).run(None), use_cache=False)
    cpu = run.frame(run.hosts[0])
    assert all(wait_for_slowest(cpu, i) is None for i in range(0, cpu.num_events, max(1, cpu.num_events // 50)))


async def test_details_pane_says_how_long_it_waited():
    from conftest import make_app

    from tputui.screens.trace_viewer import TraceFocus, TraceViewerScreen

    app = make_app(str(POD), "trace_viewer", use_cache=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TraceViewerScreen)
        rows = [i for i in _all_reduces(screen.index.frame)
                if screen.index.frame.raw.plane_name[int(screen.index.frame.events["plane"][i])] == "/device:TPU:0"]
        screen.apply_focus(TraceFocus(frame_rows=(rows[0],)))
        await settle(pilot)
        text = _plain(screen.query_one("#details").content)
        assert "Waited" in text and "for the slowest core (/device:TPU:1 arrived last of 4)" in text
        # The capture's edges: said in the screen's help (`?`), the details pane keeps its one hint line.
        assert "cross the capture's start or end are missing" in type(screen).help_notes


def _plain(renderable) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()

"""A long load shows it is alive: the progress line names the step and its seconds keep moving
between progress messages (a 3 GB host spends tens of seconds in one step)."""
from __future__ import annotations

import asyncio
import re

from conftest import PROFILES

from tputui.analysis import host_map
from tputui.data.logdir import open_logdir


def test_a_single_host_says_when_its_op_stats_begin():
    from tputui.data.run_data import RunData

    said: list[str] = []
    run = RunData(open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0], use_cache=False, jobs=1)
    host_map.host_op_stats(run, progress=said.append)
    assert said[0] == "op stats: host 1/1 (t1v-tpu-host)"
    assert re.fullmatch(r"op stats: host 1/1 \(t1v-tpu-host, [\d,]+ events\)", said[-1]), said


async def test_elapsed_seconds_move_while_one_step_runs(monkeypatch):
    from tputui.app import TputuiApp

    real = host_map.op_stats.map_host
    started = asyncio.Event()

    def slow(frame, host):
        started.set()
        import time

        time.sleep(3)  # one long step, no progress message meanwhile
        return real(frame, host)

    monkeypatch.setattr(host_map.op_stats, "map_host", slow)
    app = TputuiApp(open_logdir(str(PROFILES / "tpu_v6e_inference")), use_cache=False)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(40):  # until the slow step has begun
            await pilot.pause(0.05)
            if started.is_set():
                break
        await pilot.pause(0.5)
        first = str(app.screen.query_one("#progress").render())
        await pilot.pause(1.3)
        later = str(app.screen.query_one("#progress").render())
        step = re.compile(r"op stats: host 1/1 \(t1v-tpu-host, [\d,]+ events\)(?:  \((\d+\.\d) s\))?")
        a, b = step.fullmatch(first), step.fullmatch(later)
        assert a and b and b.group(1), (first, later)  # the same line, with its seconds
        assert float(b.group(1)) > float(a.group(1) or 0) + 0.9  # and they moved on their own
        await app.workers.wait_for_complete()


def test_pace_gives_the_percentage_then_the_time_left():
    from tputui.data.progress import Pace, Step

    pace = Pace()
    pace.note("decoding w0 (12.0 MB)", 0.0)  # a line that counts nothing: no figures
    assert pace.describe(0.0) == ""
    pace.note(Step("piece 1/4 done", 1, 4), 10.0)
    assert pace.describe(10.0) == "25%"  # nothing to measure a pace on yet
    pace.note(Step("piece 2/4 done", 2, 4), 14.0)  # 25% in 4 s: 50% left takes 8 s
    assert pace.describe(14.0) == "50%, ~8 s left"
    assert pace.describe(17.0) == "50%, ~5 s left"  # the time left counts down between steps
    pace.note(Step("host 1/3", 0, 3), 20.0)  # another count starts its own pace
    assert pace.describe(20.0) == "0%"
    pace.note(Step("host 1/1", 0, 1), 21.0)  # one of one says nothing: the last count stays
    assert pace.describe(21.0) == "0%"


async def test_a_multi_host_load_shows_its_percentage(monkeypatch):
    """Four hosts mapped one after another: the loading line says how far along it is."""
    from conftest import FIXTURES, settle

    from tputui.app import TputuiApp

    real = host_map.map_host_file

    def slow(hf, use_cache):
        import time

        time.sleep(0.4)
        return real(hf, use_cache)

    monkeypatch.setattr(host_map, "map_host_file", slow)
    app = TputuiApp(open_logdir(str(FIXTURES / "pod" / "pod_v4_32")), tool="overview_page", use_cache=False, jobs=1)
    seen: list[str] = []
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(80):
            await pilot.pause(0.05)
            found = app.screen.query("#progress")
            if found:
                seen.append(str(found.first().render()))
            if any(re.search(r"host [34]/4 .*\((50|75)%", s) for s in seen):
                break
        await settle(pilot)
    assert any(re.search(r"op stats: host [34]/4 \(v4-w-\d\)  \((50|75)%", s) for s in seen), seen


async def test_the_in_app_diff_counts_its_steps(monkeypatch):
    """The diff loads four tools of each run: its line says which (n of 8) and the percentage."""
    from conftest import make_app, settle

    from tputui import compare
    from tputui.screens.diff import DiffScreen

    real = compare.run_tool

    def slow(run, tool, host):
        import time

        time.sleep(0.2)
        return real(run, tool, host)

    monkeypatch.setattr(compare, "run_tool", slow)
    app = make_app("jax_two_runs")
    seen: list[str] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            if not isinstance(app.screen, DiffScreen) or app.screen.result is not None:
                break
            found = app.screen.query("#diff-progress")
            if found:
                seen.append(str(found.first().render()))
        await settle(pilot)
    assert any(re.match(r"comparing: 2026_11_22_12_58_50: \w+ \([5-8] of 8\)  \((50|62|75|87)%", s) for s in seen), seen

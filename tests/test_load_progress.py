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

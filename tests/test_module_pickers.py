"""The module pickers rank modules by what matters (the graph viewer by the time each ran, the
memory viewer by its HBM allocation) and show that figure; the graph viewer opens on the module
that ran longest (the training step), not the largest proto (an unrolled `jit__randint`)."""
from __future__ import annotations

from conftest import make_app, settle

from tputui.analysis import graph_viewer, memory_viewer
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.demo import demo_logdir
from tputui.screens.pickers import PickerScreen

CPU_RUN = "2026_11_22_13_23_13"


def demo_run(name: str = CPU_RUN) -> RunData:
    return RunData(open_logdir(demo_logdir()).run(name), use_cache=False)


def test_graph_viewer_opens_on_the_module_that_ran_longest():
    r = graph_viewer.analyze(demo_run())
    assert r.module == "jit_train_step(32)"  # was jit__randint(28), the largest proto
    ranked = r.modules_by_time()
    assert ranked[0] == ("jit_train_step(32)", r.module_time_ps["jit_train_step(32)"]) and ranked[0][1] > 0
    assert [t for _, t in ranked] == sorted((t for _, t in ranked), reverse=True)
    tpu = graph_viewer.analyze(demo_run("2025_12_10_00_00_00_tpu_v6e"))  # device ops' time per program
    assert tpu.module.startswith("jit_f(") and tpu.modules_by_time()[0][0] == tpu.module


def test_memory_viewer_ranks_modules_by_allocation():
    r = memory_viewer.analyze(demo_run())
    sizes = [b for _, b in r.modules_by_size()]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 0
    assert set(r.module_bytes) == set(r.modules)


async def _picker_lines(tool: str) -> list[str]:
    app = make_app(demo_logdir(), tool, run=CPU_RUN)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        return [label for _, label in app.screen.choices]


async def test_graph_viewer_module_picker_shows_times_longest_first():
    labels = await _picker_lines("graph_viewer")
    assert labels[0].startswith("jit_train_step(32)") and labels[0].rstrip().endswith(" ms"), labels[:3]
    assert labels[-1].endswith("time n/a")


async def test_memory_viewer_module_picker_shows_sizes_largest_first():
    labels = await _picker_lines("memory_viewer")
    assert labels[0].endswith(" allocated") and "MiB" in labels[0], labels[:3]
    assert not labels[0].startswith("jit__normal(16)")  # not alphabetical


def test_cpu_memory_viewer_does_not_call_host_memory_hbm():
    cpu = memory_viewer.analyze(demo_run())
    assert cpu.device_kind == "CPU" and cpu.memory_space_label == "host memory (0; no HBM on CPU)"  # was "HBM (0)"
    tpu = memory_viewer.analyze(demo_run("2025_12_10_00_00_00_tpu_v6e"))
    assert tpu.device_kind == "TPU" and tpu.memory_space_label == "HBM (0)"

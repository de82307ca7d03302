"""Pod viewer screen: keys (step picker, category, heatmap cursor, channel highlight, per-chip
columns), the topology grid (chips at their coordinates per z-layer) and its readout, the
collective split and channel latency lines, the context bar (every host; `h` sets the cursor),
empty states, and SVG snapshots of the heatmap at 8, 32 and 256 cores, folded to chips / hosts
when it does not fit."""
from __future__ import annotations

import importlib.util
import io
import sys

import polars as pl
import pytest
from conftest import FIXTURES, ROOT, make_app, settle
from rich.console import Console

from tputui.analysis.pod_viewer import CATEGORY_KEYS
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.pod_viewer import PodViewerScreen
from tputui.widgets.heatmap import Cell, Heatmap, fold
from tputui.widgets.table import FrameTable

POD = FIXTURES / "pod"
SIZE = (120, 40)


def builder():
    """scripts/make_pod_fixtures.py, imported to make a 256-core pod in a tmp dir."""
    name = "make_pod_fixtures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "make_pod_fixtures.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@pytest.fixture(scope="module")
def pod256(tmp_path_factory):
    mk = builder()
    root = tmp_path_factory.mktemp("pod256")
    spec = mk.PodSpec("pod_256", "TPU v4", hosts_per_slice=32, chips_per_host=4, cores_per_chip=2, steps=3,
                      seed=7, host_prefix="w")
    mk.build_run(spec, root / "plugins" / "profile" / mk.RUN)
    return root


@pytest.fixture(scope="module")
def pod256_mesh(tmp_path_factory):
    """The same 256 cores numbered as a 4x4x8 v4 slice numbers its chips (x fastest)."""
    mk = builder()
    root = tmp_path_factory.mktemp("pod256_mesh")
    spec = mk.PodSpec("pod_256", "TPU v4", hosts_per_slice=32, chips_per_host=4, cores_per_chip=2, steps=3,
                      seed=7, host_prefix="w", mesh=(4, 4, 8))
    mk.build_run(spec, root / "plugins" / "profile" / mk.RUN)
    return root


def app_for(path):
    return make_app(path, "pod_viewer")


async def test_step_picker_category_and_cursor():
    app = app_for(POD / "pod_v4_32")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, PodViewerScreen) and screen.error is None
        heat = screen.query_one(Heatmap)
        assert heat.level == "core" and len(heat.units) == 32
        assert screen.step == 0 and screen.category_key == "device_compute"
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert screen.step == 2
        await pilot.press("left_square_bracket")
        assert screen.step == 1
        await pilot.press("k")
        assert screen.category_key == "device_to_device"
        # The cell values are the step's per-core figures for that category, in ms.
        df = screen.pod.step_frame(1)
        assert [u.value for u in heat.units] == pytest.approx((df["device_to_device_us"] / 1000).to_list())
        await pilot.press("right", "right", "right")
        unit = heat.current
        assert unit.cores == (3,)
        details = str(screen.query_one("#details").render())
        assert "core 3" in details and "host v4-w-0" in details and "Device to device" in details
        await pilot.press("down")  # next line of host blocks or stays: never leaves the grid
        assert heat.current is not None


async def test_step_bar_left_right_and_channel_highlight():
    app = app_for(POD / "dcn_2slices")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        bar = screen.query_one("#stepbar")
        bar.focus()
        await pilot.press("right", "right", "left")
        assert screen.step == 1
        heat = screen.query_one(Heatmap)
        assert not heat.highlight
        table = screen.query_one("#channels", FrameTable)
        table.focus()
        await pilot.pause()
        assert table.row_count == 1 and heat.highlight == {0, 1, 2, 3, 1000, 1001, 1002, 1003}
        heat.focus()
        await pilot.pause()
        assert not heat.highlight


@pytest.mark.parametrize("size,level", [((120, 40), "core"), ((80, 24), "chip"), ((50, 18), "host")])
async def test_256_cores_fold_to_fit(pod256, size, level):
    app = app_for(pod256)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        heat = app.screen.query_one(Heatmap)
        assert len(heat.cells) == 256
        # Chips numbered host after host do not fit a 4x4x8 slice's host blocks: no topology.
        assert app.screen.pod.topology is None and heat.layout_kind == "strip"
        assert heat.level == level
        assert sum(len(u.cores) for u in heat.units) == 256
        assert len(heat._rows) <= max(3, size[1] // 3)


def test_fold_means():
    cells = [Cell(0, "a", 0, 1.0), Cell(1, "a", 0, 3.0), Cell(2, "a", 1, 5.0), Cell(1000, "b", 2, 7.0)]
    assert [u.value for b in fold(cells, "chip") for u in b] == [2.0, 5.0, 7.0]
    assert [u.value for b in fold(cells, "host") for u in b] == [3.0, 7.0]
    assert [u.cores for b in fold(cells, "host") for u in b] == [(0, 1, 2), (1000,)]


@pytest.mark.parametrize("fixture,keys", [
    ("dcn_2slices", ()),  # 8 cores
    ("pod_v4_32", ("right_square_bracket", "k", "k", "k", "k", "k")),  # 32 cores, colour by input
])
def test_snapshot(snap_compare, fixture, keys):
    async def loaded(pilot):
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
        await pilot.pause()

    assert snap_compare(app_for(POD / fixture), terminal_size=SIZE, run_before=loaded)


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
def test_snapshot_256_cores(snap_compare, pod256, size):
    async def loaded(pilot):
        await settle(pilot)
        await pilot.press("k", "k", "k", "k", "k", "k", "k", "k")  # all others (idle)

    assert snap_compare(app_for(pod256), terminal_size=size, run_before=loaded)


def context(screen) -> str:
    return str(screen.query_one("#context").render())


async def test_context_bar_says_every_host_and_h_sets_the_cursor():
    app = app_for(POD / "pod_v4_32")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "hosts all 4" in context(app.screen) and "all hosts" not in context(app.screen)
    app = TputuiApp(open_logdir(str(POD / "pod_v4_32")), tool="pod_viewer", host="v4-w-1")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert "hosts all 4 · cursor starts on v4-w-1" in context(screen)
        heat = screen.query_one(Heatmap)
        assert len(heat.units) == 32 and heat.current.host == "v4-w-1" and heat.current.cores == (1000,)
        assert "host v4-w-1" in str(screen.query_one("#details").render())


async def test_chip_columns_read_one_chip_with_a_scale():
    app = app_for(POD / "pod_v4_32")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("tab")  # heatmap -> per-chip columns
        assert screen.chips.has_focus
        await pilot.press("end")
        details = str(screen.query_one("#details").render())
        df = screen.pod.step_frame(0).filter(pl.col("chip") == 15)
        total = sum(df[f"{k}_us"].mean() for k in CATEGORY_KEYS) / 1000
        assert details.startswith(f"chip 15 · host v4-w-3 · mean of its 2 cores: {total:.3f} ms")
        assert f"Device compute {df['device_compute_us'].mean() / 1000:.3f}" in details
        axis = str(screen.query_one("#chip-axis").render()).splitlines()
        top = screen.per_chip["total_ms"].max()
        assert axis[0].strip() == f"{top:.3g} ms ┤" and axis[6].strip() == "0 ┤"
        await pilot.press("shift+tab")  # back on the heatmap: the line reads its cell again
        assert str(screen.query_one("#details").render()).startswith("core 0 · chip 0")


async def test_cpu_run_starts_on_its_largest_category_without_channels():
    app = TputuiApp(open_logdir(str(FIXTURES / "profiles" / "tf_loop")), tool="pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        totals = {k: screen.pod.steps[f"{k}_us"].sum() for k in CATEGORY_KEYS}
        assert screen.category_key == max(totals, key=totals.get) == "input"
        assert "host vm" in context(screen) and "1 core · CPU" in str(screen.query_one("#stepbar").render())
        assert not screen.query("#channels")
        assert str(screen.query_one("#no-channels").render()).startswith("No send/recv channels")


async def test_no_steps_is_said_first():
    app = TputuiApp(open_logdir(str(FIXTURES / "profiles" / "tpu_v6e_inference")), tool="pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = str(app.screen.query_one("#no-steps").render())
        assert text.startswith("No steps to show: this TPU v6 Lite profile has no step markers.\n")
        assert "No step marker observed" in text


async def test_grid_places_chips_at_their_coordinates():
    app = app_for(POD / "pod_v4_32")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        heat = screen.query_one(Heatmap)
        topo = screen.pod.topology
        assert heat.layout_kind == "grid" and heat.level == "core" and len(heat.units) == 32
        assert "TPU v4 2x2x4   (layout derived from chip ids)" in str(screen.query_one("#stepbar").render())
        lines = [str(t) for t in heat._render_lines(heat.size.width)]
        # One block per z-layer, side by side: a header and a line per y.
        assert lines[0].split()[::3] == [f"z{z}" for z in range(topo.dims[2])] and len(lines) == 1 + topo.dims[1]
        # Each drawn cell sits where its chip's (x, y, z) says.
        for row, idx in enumerate(heat._rows[1:]):
            for i in idx:
                x, y, z = topo.coords[heat.units[i].chip]
                assert y == row
        await pilot.press("right", "right", "right", "down")
        unit = heat.current
        (core,) = unit.cores
        info = screen.pod.core_info(core)
        x, y, z = topo.coords[info.chip]
        assert (x, y, z) == (1, 1, 0) and unit.xyz == (1, 1, 0)
        details = str(screen.query_one("#details").render())
        value = screen.step_frame().filter(pl.col("core") == core)["device_compute_us"][0] / 1000
        assert details.startswith(f"core {core} · chip {info.chip} (core {info.core_on_chip} on chip) · host {info.host}"
                                  f" · (x 1, y 1, z 0) · Device compute {value:.3f} ms")
        sync, transfer = screen.pod.collective_split(screen.step, [core])
        assert f"collectives: sync {sync:.3f} ms + transfer {transfer:.3f} ms" in details
        assert "linked by send/recv to every other core (31)" in details
        assert not heat.highlight  # every core is a partner: no ◆ drawn over the colours


async def test_collectives_line_and_channel_latency_bars():
    app = app_for(POD / "dcn_2slices")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        line = str(screen.query_one("#collectives").render())
        sync, transfer = screen.pod.collective_split(screen.step, [c.core for c in screen.pod.cores])
        assert line.startswith(f"Collectives (mean of 8 cores): sync wait {sync:.3f} ms + transfer {transfer:.3f} ms")
        bars = screen.query_one("#latency")
        assert bars.items == [(f"ch {c}", v) for c, v in screen.pod.channel_latency()]
        out = Console(width=60, record=True, file=io.StringIO())
        out.print(bars.render_chart())
        text = out.export_text()
        assert f"ch 4 ████████████████ {screen.pod.channel_latency()[0][1]:,.2f} us" in text


async def test_cpu_run_says_why_collectives_are_not_split():
    app = app_for(FIXTURES / "profiles" / "tf_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.query_one(Heatmap).layout_kind == "strip"
        line = str(screen.query_one("#collectives").render())
        assert line == ("Collectives not split into sync wait / transfer: host (CPU / GPU) steps carry no per-core "
                        "collective time.")


@pytest.mark.parametrize("size,kind,level", [((120, 40), "grid", "core"), ((80, 24), "strip", "chip")])
async def test_3d_slice_is_a_grid_per_z_layer_until_it_does_not_fit(pod256_mesh, size, kind, level):
    app = app_for(pod256_mesh)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        heat = screen.query_one(Heatmap)
        assert screen.pod.topology.dims == (4, 4, 8)
        assert (heat.layout_kind, heat.level) == (kind, level)
        assert sum(len(u.cores) for u in heat.units) == 256
        legend = str(screen.query_one("#legend").render())
        assert ("cores at chip (x, y) per z" in legend) == (kind == "grid")
        # The readout names the cell's coordinates in either layout.
        assert "(x 0, y 0, z 0)" in str(screen.query_one("#details").render())


def test_snapshot_3d_grid(snap_compare, pod256_mesh):
    async def loaded(pilot):
        await settle(pilot)
        await pilot.press("down", "right", "right")

    assert snap_compare(app_for(pod256_mesh), terminal_size=SIZE, run_before=loaded)


async def test_linked_cores_are_drawn_when_they_are_some_of_the_pod():
    """With the one-way channel of test_pod_viewer (host 0's chips 0-1 send, chips 2-3 receive),
    the cell under the cursor's partners are drawn ◆ and the readout counts them."""
    import dataclasses

    from tputui.analysis import host_map
    from tputui.analysis import pod_viewer as pv
    from tputui.data.run_data import RunData

    stats = host_map.host_op_stats(RunData(open_logdir(str(POD / "pod_v4_32")).runs[0]), None)
    ev = stats[0].send_recv
    one_way = ev.filter(((pl.col("cat") == "send") & (pl.col("plane_id") < 4))
                        | ((pl.col("cat") == "recv-done") & (pl.col("plane_id") >= 4)))
    res = pv.from_op_stats([dataclasses.replace(stats[0], send_recv=one_way),
                            *[dataclasses.replace(s, send_recv=ev.clear()) for s in stats[1:]]])
    app = app_for(POD / "pod_v4_32")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.pod = res
        screen._redraw()
        heat = screen.query_one(Heatmap)
        await pilot.press("right")  # core 1: a sender
        await pilot.pause()
        assert heat.current.cores == (1,) and heat.highlight == {4, 5, 6, 7}
        assert "◆ linked by send/recv to 4 cores" in str(screen.query_one("#details").render())
        drawn = [heat.units[i].cores[0] for row in heat._rows for i in row]
        lines = "".join(str(t) for t in heat._render_lines(heat.size.width))
        assert lines.count("◆◆") == 4 and len(drawn) == 32


async def test_x_writes_the_steps_rows_as_the_export_does(tmp_path, monkeypatch):
    """`x` on the heatmap writes the shown step's rows of `tputui export --format csv`."""
    from tputui.data.run_data import RunData
    from tputui.export import export_text

    monkeypatch.setenv("TPUTUI_EXPORT_DIR", str(tmp_path))
    app = app_for(POD / "pod_v4_32")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("right_square_bracket", "x")
        await settle(pilot)
        step = app.screen.step
    (written,) = [p.read_text().splitlines() for p in tmp_path.glob("pod_viewer-*.csv")]
    exported = export_text(RunData(open_logdir(str(POD / "pod_v4_32")).run(None), use_cache=False), "pod_viewer",
                           fmt="csv").strip().splitlines()
    assert written[0] == exported[0] and step == 1
    assert written[1:] == [line for line in exported[1:] if line.startswith(f"{step},")] and len(written) == 33

"""A host read in pieces (analysis/host_pieces.py) gives byte-identical tool outputs to the host
read whole, on every TPU fixture: one piece per chip, pieces run here and in a worker."""
from __future__ import annotations

import pathlib

import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis import host_pieces
from tputui.data import plane_directory, storage
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text
from tputui.tools import TOOLS

OP_TOOLS = [t.name for t in TOOLS if t.op_stats]
TPU_LOGDIRS = [PROFILES / "tpu_v6e_inference", *sorted((FIXTURES / "pod").iterdir()),
               *sorted((FIXTURES / "advice").iterdir()), *sorted((FIXTURES / "suggestions").iterdir()),
               *sorted((FIXTURES / "counters").iterdir()), *sorted((FIXTURES / "grouping").iterdir())]


def _outputs(logdir: pathlib.Path, jobs: int = 1, tools: list[str] = OP_TOOLS) -> dict[str, str]:
    """Each tool's JSON export of the run, or its error's text (a tool without data must fail the
    same way read whole and in pieces)."""
    run = RunData(open_logdir(str(logdir)).runs[0], use_cache=False, jobs=jobs)
    out = {}
    for tool in tools:
        try:
            out[tool] = export_text(run, tool)
        except Exception as e:  # noqa: BLE001
            out[tool] = f"{type(e).__name__}: {e}"
    return out


@pytest.fixture
def in_pieces(monkeypatch):
    """Every host file is read in pieces, one chip per piece."""
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, "0")
    monkeypatch.setattr(host_pieces, "PIECE_TARGET_BYTES", 1)


@pytest.mark.parametrize("logdir", TPU_LOGDIRS, ids=lambda p: p.name)
def test_pieces_give_the_whole_hosts_outputs(logdir, monkeypatch, in_pieces):
    read = []
    real = host_pieces.map_piece
    monkeypatch.setattr(host_pieces, "map_piece", lambda hf, piece, *a: read.append(piece) or real(hf, piece, *a))
    pieced = _outputs(logdir)
    kinds = {p.kind for p in read}
    assert {"meta", "device"} <= kinds
    if logdir.name in ("tpu_v6e_inference", "pod_v4_32", "pod_v5e_single", "dcn_2slices"):
        assert "threads" in kinds  # host threads: their ops and grouping read in pieces
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, str(1 << 30))
    whole = _outputs(logdir)
    assert pieced.keys() == whole.keys()
    for tool in OP_TOOLS:
        assert pieced[tool] == whole[tool], tool
    assert any(not v.startswith(("NoDataError", "UserError")) for v in whole.values())


def test_pieces_run_in_worker_processes_too(monkeypatch, in_pieces):
    logdir = PROFILES / "tpu_v6e_inference"
    pieced = _outputs(logdir, jobs=2)
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, str(1 << 30))
    assert pieced == _outputs(logdir, jobs=2)


def test_plan_of_a_tpu_host(in_pieces):
    hf = open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0].hosts[0]
    pieces = host_pieces.plan(hf)
    assert pieces is not None
    assert pieces[0].kind == "meta" and "/host:CPU" in pieces[0].names and "/host:metadata" in pieces[0].names
    threads = [p for p in pieces if p.kind == "threads"]
    assert [line for p in threads for line in p.lines] == list(range(122))  # one line a piece, in order
    devices = [p.names for p in pieces if p.device]
    assert devices == [("/device:TPU:0",), ("/device:TPU:1",), ("/device:TPU:2",), ("/device:TPU:3",)]
    index = sorted(i for p in pieces if p.kind != "threads" for i in p.index)
    assert index == list(range(len(index)))  # every plane in exactly one of the meta and device pieces


def test_chips_stay_whole_and_pack_up_to_the_target(monkeypatch, in_pieces):
    hf = open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0].hosts[0]
    data = storage.read(hf)
    planes = plane_directory.plane_directory(data)
    assert planes is not None
    cores = [p for p in planes if p.name.startswith("/device:TPU:")]
    # two chips' worth of bytes per piece: the four single-core chips pack two by two
    monkeypatch.setattr(host_pieces, "PIECE_TARGET_BYTES", cores[0].size + cores[1].size)
    pieces = host_pieces.plan(hf)
    assert pieces is not None
    assert [p.names for p in pieces if p.device] == [("/device:TPU:0", "/device:TPU:1"), ("/device:TPU:2", "/device:TPU:3")]


def test_plane_stat_bytes_reads_core_details():
    hf = open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0].hosts[0]
    from tputui.data.xspace import decode

    data = storage.read(hf)
    frame = decode(bytes(data))
    planes = plane_directory.plane_directory(data)
    assert planes is not None
    found = 0
    for p in planes:
        want = frame.plane_stat_map(p.index).get("core_details")
        got = plane_directory.plane_stat_bytes(data, p, "core_details")
        assert got == (bytes(want) if isinstance(want, (bytes, bytearray)) else None), p.name
        found += got is not None
    assert found == 4  # the four TensorCores


def test_small_and_cpu_hosts_are_read_whole(monkeypatch):
    hf = open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0].hosts[0]
    assert host_pieces.plan(hf) is None  # under PIECE_MIN_BYTES
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, "0")
    assert host_pieces.plan(hf) is not None
    cpu = open_logdir(str(PROFILES / "jax_mlp")).runs[0].hosts[0]
    assert host_pieces.plan(cpu) is None  # no TensorCore


HOST_LOGDIRS = [*(PROFILES / p for p in ("jax_mlp", "jax_named_steps", "jax_two_runs", "tf_keras", "tf_loop",
                                         "tpu_v6e_inference", "jax_live_capture")),
                *sorted((FIXTURES / "pod").iterdir()), FIXTURES / "flows" / "gpu_launch",
                *sorted((FIXTURES / "grouping").iterdir())]


@pytest.mark.parametrize("logdir", HOST_LOGDIRS, ids=lambda p: p.name)
def test_grouping_from_thread_pieces_equals_the_whole_planes(logdir):
    """XProf's groups of the events a giant host's first pass keeps, from one-thread pieces, equal
    the groups one reading of the whole host plane gives them."""
    from tputui.analysis import event_groups, group_extract
    from tputui.data.xspace import decode

    checked = 0
    for run in open_logdir(str(logdir)).runs:
        for hf in run.hosts:
            if hf.format != "pb":
                continue
            data = storage.read(hf)
            frame = decode(bytes(data))
            whole = event_groups.group_events(frame)
            if not group_extract.may_group(frame):  # no root named in the host plane: no group
                assert not (whole.group >= 0).any(), hf.path
            one = group_extract.extract(frame)
            host = next((p for p in plane_directory.plane_directory(data) or [] if p.name == "/host:CPU"), None)
            if host is None or one.loop_ops:
                continue
            texts = plane_directory.space_texts(data)
            parts = [group_extract.extract(decode(plane_directory.subset_xspace(data, [(host, [i])], texts)))
                     for i in range(len(plane_directory.line_sizes(data, host)))]
            pieced, _ = group_extract.groups(parts)
            expected = whole.group[one.positions]
            assert pieced.tolist() == expected.tolist(), hf.path
            assert group_extract.groups([one])[0].tolist() == expected.tolist()
            assert group_extract.launch_groups(parts) == group_extract.launch_groups([one])
            # The summary every tool reads: the same from the pieces as from the whole frame.
            from tputui.analysis.event_grouping import host_grouping
            g_whole, g_pieces = host_grouping(frame), group_extract.grouping_of(parts)
            assert (g_pieces.name, g_pieces.launch_map()) == (g_whole.name, g_whole.launch_map())
            assert g_pieces.named.tolist() == g_whole.named.tolist()
            assert g_pieces.step_num.tolist() == g_whole.step_num.tolist()
            assert (g_pieces.root_rank.tolist(), g_pieces.candidates) == (g_whole.root_rank.tolist(), g_whole.candidates)
            checked += int((expected >= 0).sum())
    if logdir.name in ("jax_mlp", "tf_loop", "pod_v4_32", "dcn_2slices", "orbax_serving"):
        assert checked > 0  # steps: some kept events are grouped
    if logdir.name == "tpu_v6e_inference":  # no step markers: its threads need no extract
        hf = open_logdir(str(logdir)).runs[0].hosts[0]
        assert not group_extract.may_group(decode(bytes(storage.read(hf))))


def test_pieces_on_a_dask_cluster(monkeypatch, in_pieces):
    distributed = pytest.importorskip("distributed")
    from tputui.analysis import host_map

    logdir = PROFILES / "tpu_v6e_inference"
    local = _outputs(logdir)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster:
        said: list[str] = []
        run = RunData(open_logdir(str(logdir)).runs[0], use_cache=False, dask=cluster.scheduler_address)
        host_map.host_op_stats(run, progress=said.append)
        assert said[0].startswith("op stats: t1v-tpu-host in ")
        assert said[0].endswith("(2 workers)")
        assert said[-1].endswith("done on Dask") and said[-1].fraction == 1.0
        out = {}
        for tool in OP_TOOLS:
            try:
                out[tool] = export_text(run, tool)
            except Exception as e:  # noqa: BLE001
                out[tool] = f"{type(e).__name__}: {e}"
        assert out == local


def _same(a, b) -> bool:
    """Deep equality of op-stats trees (dataclasses, Polars frames, numpy arrays, containers)."""
    import dataclasses

    import numpy as np
    import polars as pl

    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, pl.DataFrame):
        return isinstance(b, pl.DataFrame) and a.schema == b.schema and a.equals(b, null_equal=True)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("logdir", TPU_LOGDIRS, ids=lambda p: p.name)
def test_pieces_cut_from_decoded_columns_give_the_whole_hosts_op_stats(logdir):
    """The merged-riegeli way (data/raw_subset.py), on every TPU fixture's .pb hosts."""
    from tputui.analysis import op_stats
    from tputui.data.xspace import decode

    for hf in open_logdir(str(logdir)).runs[0].hosts:
        frame = decode(bytes(storage.read(hf)))
        pieces = host_pieces.plan_merged(frame, target=1)
        assert pieces is not None and any(p.kind == "device" for p in pieces)
        assert _same(host_pieces.map_merged_in_pieces(hf, frame, pieces), op_stats.map_host(frame, hf.host)), hf.path


RIEGELI_TPU = [FIXTURES / "riegeli" / n for n in ("tpu_planes_brotli", "tpu_lines_zstd")]


@pytest.mark.parametrize("logdir", RIEGELI_TPU, ids=lambda p: p.name)
def test_a_riegeli_host_in_pieces_of_its_merged_columns(logdir, monkeypatch, tmp_path, in_pieces):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "pieces"))
    read = []
    real = host_pieces.merged_piece
    monkeypatch.setattr(host_pieces, "merged_piece", lambda fr, piece, *a: read.append(piece) or real(fr, piece, *a))

    def outputs() -> dict[str, str]:
        run = RunData(open_logdir(str(logdir)).runs[0], use_cache=True, jobs=1)
        return {tool: export_text(run, tool) for tool in ("overview_page", "op_profile", "hlo_stats", "framework_op_stats")}

    pieced = outputs()
    assert {"meta", "threads", "device"} <= {p.kind for p in read}
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, str(1 << 30))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "whole"))
    assert outputs() == pieced

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
               *sorted((FIXTURES / "counters").iterdir())]


def _outputs(logdir: pathlib.Path, jobs: int = 1) -> dict[str, str]:
    run = RunData(open_logdir(str(logdir)).runs[0], use_cache=False, jobs=jobs)
    out = {}
    for tool in OP_TOOLS:
        try:
            out[tool] = export_text(run, tool)
        except Exception as e:  # noqa: BLE001 (a tool without data must fail the same way both times)
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
    assert sum(p.device for p in read) >= 1 and sum(not p.device for p in read) >= 1
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
    assert not pieces[0].device and "/host:CPU" in pieces[0].names and "/host:metadata" in pieces[0].names
    devices = [p.names for p in pieces[1:]]
    assert devices == [("/device:TPU:0",), ("/device:TPU:1",), ("/device:TPU:2",), ("/device:TPU:3",)]
    index = sorted(i for p in pieces for i in p.index)
    assert index == list(range(len(index)))  # every plane in exactly one piece


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
    assert [p.names for p in pieces[1:]] == [("/device:TPU:0", "/device:TPU:1"), ("/device:TPU:2", "/device:TPU:3")]


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

"""Every tool but the trace export on a giant host (read in pieces, analysis/giant_host.py) gives
byte-identical outputs to the host read whole, on every TPU fixture, and never decodes the
host's whole frame (nor any frame holding its TensorCore planes at once)."""
from __future__ import annotations

import pathlib

import pytest
from conftest import PROFILES
from test_host_pieces import TPU_LOGDIRS
from test_host_pieces import _outputs as every_output

from tputui.analysis import giant_host, hbm_capacity, host_pieces, megascale
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.data.xspace import plane_filter
from tputui.export import export_text
from tputui.tools import TOOLS

# The trace export is the trace viewer's (analysis/trace_pieces.py); the op tools have their own
# test (test_host_pieces.py) but are checked here too for the frames they decode.
TOOL_NAMES = [t.name for t in TOOLS if t.name != "trace_viewer"]


def _outputs(logdir: pathlib.Path) -> dict[str, str]:
    return every_output(logdir, tools=TOOL_NAMES)


@pytest.fixture
def whole_frames(monkeypatch) -> list[tuple[str, object, bool]]:
    """(host, planes, whether the host is read in pieces) of every frame decoded with a TensorCore
    plane in it (a host read in pieces has none: such a frame is the whole host, or most of it)."""
    seen: list[tuple[str, object, bool]] = []
    real = RunData.frame

    def frame(self, host=None, planes=None, *args, **kwargs):
        hf = self.host_file(host)
        keep = plane_filter(planes)
        if keep is None or keep("/device:TPU:0"):
            seen.append((hf.host, planes, host_pieces.plan(hf) is not None))
        return real(self, host, planes, *args, **kwargs)

    monkeypatch.setattr(RunData, "frame", frame)
    return seen


@pytest.mark.parametrize("logdir", TPU_LOGDIRS, ids=lambda p: p.name)
def test_every_tool_in_pieces_gives_the_whole_hosts_output(logdir, monkeypatch, whole_frames):
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, "0")
    monkeypatch.setattr(host_pieces, "PIECE_TARGET_BYTES", 1)  # one chip, one plane per piece
    pieced = _outputs(logdir)
    assert [f for f in whole_frames if f[2]] == []
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, str(1 << 30))
    whole = _outputs(logdir)
    assert any(planes is None for _, planes, _ in whole_frames)  # read whole, the check sees them
    for tool in TOOL_NAMES:
        assert pieced[tool] == whole[tool], tool
    assert not pieced["summary"].startswith(("NoDataError", "UserError", "LogdirError"))


def test_plane_frames_pack_planes_in_file_order(monkeypatch):
    run = RunData(open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0], use_cache=False)
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, "0")
    tpu = lambda name: name.startswith("/device:TPU:")  # noqa: E731
    one = list(giant_host.plane_frames(run, None, tpu, target=1))
    assert [places for places, _ in one] == [(0,), (1,), (2,), (3,)]
    assert [f.raw.plane_name for _, f in one] == [["/device:TPU:0"], ["/device:TPU:1"], ["/device:TPU:2"],
                                                  ["/device:TPU:3"]]
    every = list(giant_host.plane_frames(run, None, tpu, target=1 << 40))
    assert len(every) == 1 and every[0][0] == (0, 1, 2, 3)
    whole = run.frame(None, planes=["/device:TPU:"])
    assert len(every[0][1].raw.event_line) == len(whole.raw.event_line) > 0


def test_the_transport_events_of_a_giant_host_name_the_same_peers(monkeypatch):
    """megascale reads a giant host's MegaScale transport events alone (dcn_diagnosis.slice_peers)."""
    from tputui.analysis import dcn_diagnosis

    logdir = pathlib.Path(__file__).parent / "fixtures" / "pod" / "dcn_hw_stall"
    run = RunData(open_logdir(str(logdir)).runs[0], use_cache=False)
    host = run.hosts[0]
    whole = run.frame(host)
    peers = dcn_diagnosis.slice_peers(whole)
    assert peers  # the fixture's transport events name other slices
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, "0")
    meta = giant_host.planes_without_lines(RunData(run.run, use_cache=False), host, plane_filter(megascale.PLANES))
    sub = megascale._transport_events(run, host, meta)
    assert sub is not None and len(sub.raw.event_line) < len(whole.raw.event_line)
    assert dcn_diagnosis.slice_peers(sub) == peers


def test_hbm_capacity_from_the_plane_stats_at_any_size(monkeypatch):
    """A host over PLANE_READ_MAX_BYTES still gets its device's capacity: the plane's stats are
    read without its events."""
    logdir = PROFILES / "tpu_v6e_inference"
    small = hbm_capacity.device_capacity(RunData(open_logdir(str(logdir)).runs[0], use_cache=False), None)
    assert small is not None
    monkeypatch.setattr(hbm_capacity, "PLANE_READ_MAX_BYTES", 0)
    run = RunData(open_logdir(str(logdir)).runs[0], use_cache=False)
    assert hbm_capacity.device_capacity(run, run.hosts[0]) == small


TF_DATA_LOGDIRS = [PROFILES / "tf_keras", PROFILES / "tf_loop",
                   *sorted((pathlib.Path(__file__).parent / "fixtures" / "tf_input").iterdir())]


@pytest.mark.parametrize("logdir", TF_DATA_LOGDIRS, ids=lambda p: p.name)
def test_tf_data_from_the_lines_it_reads(logdir):
    """A giant host's tf.data pipelines come from the host plane's lines with tf.data events (and
    tf.data's threads) alone: the same pipelines as from the whole plane, from fewer events."""
    from tputui.analysis import tf_data

    run = RunData(open_logdir(str(logdir)).runs[0], use_cache=False)
    checked = 0
    for host in run.hosts:
        whole = run.frame(host)
        sub = tf_data.tf_data_lines(run, host)
        expected = tf_data._host_pipelines(host, whole)
        got = tf_data._host_pipelines(host, sub)
        assert [p.to_json() for p in got] == [p.to_json() for p in expected]
        for a, b in zip(got, expected):
            assert a.holds == b.holds and a.root_id == b.root_id
            assert a.iterators.equals(b.iterators) and a.runs.equals(b.runs)
        assert len(sub.raw.event_line) < len(whole.raw.event_line)  # fewer lines read
        checked += len(expected)
    assert checked > 0


def _thread_pieces(hf, lines_per_piece: int) -> list:
    from tputui.data import plane_directory, storage

    data = storage.read(hf)
    host = next(p for p in plane_directory.plane_directory(data) or [] if p.name == "/host:CPU")
    n = len(plane_directory.line_sizes(data, host))
    return [host_pieces.Piece("threads", (host.name,), (host.index,), 1, tuple(range(a, min(a + lines_per_piece, n))))
            for a in range(0, n, lines_per_piece)]


@pytest.mark.parametrize("lines_per_piece", [1, 3, 1000])
def test_memory_steps_from_thread_pieces(monkeypatch, lines_per_piece):
    """A giant host's memory events get their steps from pieces of its threads (the grouping's
    extracts keep them too): the memory profile equals the whole host plane's, where its memory
    events carry no group id and the plane can group (tf_keras)."""
    from tputui.analysis import memory_profile as mp

    logdir = PROFILES / "tf_keras"
    whole = export_text(RunData(open_logdir(str(logdir)).runs[0], use_cache=False), "memory_profile")
    run = RunData(open_logdir(str(logdir)).runs[0], use_cache=False)
    hf = run.host_file(None)
    pieces = _thread_pieces(hf, lines_per_piece)
    monkeypatch.setattr(giant_host, "pieces", lambda run, host=None: pieces)
    decoded = []
    monkeypatch.setattr(RunData, "frame", lambda self, *a, **k: decoded.append(a) or pytest.fail("a frame decoded"))
    steps = mp.pieced_group_ids(hf, pieces)
    assert (steps >= 0).any()  # some memory events are in steps
    assert export_text(run, "memory_profile") == whole

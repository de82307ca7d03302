"""The C extensions' entry points refuse absurd arguments (issue #33 item 9) instead of
overflowing an int, allocating without bound or writing past a buffer; and a riegeli file
whose offsets overflow 64-bit picoseconds once merged has that record skipped, with a warning,
instead of negative timestamps."""
from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest

from tputui.analysis import _derive
from tputui.data import _columns
from tputui.data.logdir import open_logdir
from tputui.data.riegeli_writer import write_records
from tputui.data.run_data import RunData
from tputui.proto import xplane_pb2

I32, I64 = np.int32, np.int64


def test_lookup_refuses_a_plane_index_past_the_planes_a_frame_can_have():
    for plane in (2**31 - 1, 1 << 20):
        with pytest.raises(ValueError, match="plane in keys"):
            _columns.lookup(np.array([plane], I32), np.array([1], I64), np.array([0], I32), np.array([1], I64))
    rows = _columns.lookup(np.array([(1 << 20) - 1], I32), np.array([7], I64), np.array([(1 << 20) - 1], I32),
                           np.array([7], I64))
    assert np.frombuffer(rows, I32).tolist() == [0]


def test_group_refuses_more_buckets_than_int32_keys_can_name():
    with pytest.raises(ValueError, match="n must be in"):
        _columns.group(np.array([0, 1], I32), 2**62)
    offsets, order = _columns.group(np.array([1, 0, 1], I32), 2)
    assert np.frombuffer(offsets, I64).tolist() == [0, 1, 3, 3] and np.frombuffer(order, I32).tolist() == [1, 0, 2]


def test_add_to_slices_refuses_a_sum_past_int64():
    col = np.array([5, 2**62, 7], I64)
    with pytest.raises(OverflowError):
        _columns.add_to_slices(col, np.array([0], I64), np.array([3], I64), np.array([2**62], I64))
    col = np.array([-5, -(2**62)], I64)
    with pytest.raises(OverflowError):
        _columns.add_to_slices(col, np.array([0], I64), np.array([2], I64), np.array([-(2**62) - 1], I64))
    col = np.array([1, 2, 3], I64)
    _columns.add_to_slices(col, np.array([1], I64), np.array([2], I64), np.array([10], I64))
    assert col.tolist() == [1, 12, 13]


def test_pair_offload_refuses_labels_past_the_events():
    lab, kind = np.array([0, 2], I64), np.array([1, 2], I64)
    with pytest.raises(ValueError, match="label"):
        _derive.pair_offload(lab, kind, np.array([0, 5], I64), np.array([1, 6], I64), 4)


def test_pair_offload_with_a_huge_max_rows_is_the_same_as_with_enough():
    """max_rows sized a buffer: 2**62 rows wrapped its byte count to 0 (then written past). Run in a
    child process, which a heap overflow would crash."""
    code = ("import numpy as np\nfrom tputui.analysis import _derive\n"
            "a = lambda *v: np.array(v, np.int64)\n"
            "args = (a(0, 0, 0, 0), a(1, 1, 2, 2), a(0, 1, 5, 6), a(10, 11, 15, 16))\n"
            "big = _derive.pair_offload(*args, 2**62)\n"
            "assert big == _derive.pair_offload(*args, 16), (big, _derive.pair_offload(*args, 16))\n"
            "print(np.frombuffer(big, np.int64).tolist())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[0, 2, 0, 1, 3, 1]"


def _record(ts_ns: int, offset_ps: int) -> bytes:
    xs = xplane_pb2.XSpace()
    xs.hostnames.append("h")
    plane = xs.planes.add()
    plane.id, plane.name = 1, "/host:CPU"
    plane.event_metadata[1].id, plane.event_metadata[1].name = 1, "op"
    line = plane.lines.add()
    line.id, line.name, line.timestamp_ns = 1, "main", ts_ns
    ev = line.events.add()
    ev.metadata_id, ev.offset_ps, ev.duration_ps = 1, offset_ps, 10
    return xs.SerializeToString()


@pytest.mark.parametrize("ts_ns, offset_ps", [(9 * 10**15, 5 * 10**17), (2**62, 5)],
                         ids=["offset-past-int64", "shift-past-int64"])
def test_riegeli_record_whose_times_overflow_is_skipped(tmp_path, caplog, monkeypatch, ts_ns, offset_ps):
    monkeypatch.setattr(logging.getLogger("tputui"), "propagate", True)  # a CLI run before turned it off
    run = tmp_path / "plugins" / "profile" / "2026_11_28_00_00_00"
    run.mkdir(parents=True)
    with open(run / "h.xplane.riegeli", "wb") as f:
        write_records(f, [[_record(0, 5)], [_record(ts_ns, offset_ps)]], compression="none")
    with caplog.at_level(logging.WARNING, logger="tputui"):
        frame = RunData(open_logdir(str(tmp_path)).runs[0], use_cache=False).frame()
    assert frame.start_ps.tolist() == [5]
    assert any("skipped record 2" in r.getMessage() and "64-bit picoseconds" in r.getMessage()
               for r in caplog.records)


def test_depths_refuses_a_parent_past_the_array_before_reading_there():
    """The fuzzer's case (scripts/fuzz_c.py): a parent far past the array was read before it was
    checked (a segfault); run in a child process, which that read would crash."""
    code = ("import numpy as np\nfrom tputui.analysis import _nesting\n"
            "for far in (2**62, 5, 1 << 40):\n"
            "    try:\n"
            "        _nesting.depths(np.array([-1, far, 0], np.int64), np.empty(3, np.int64))\n"
            "    except ValueError as e:\n"
            "        print(e)\n"
            "out = np.empty(3, np.int64)\n"
            "_nesting.depths(np.array([-1, 0, 1], np.int64), out)\n"
            "print(out.tolist())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["parent links form a cycle or leave the array"] * 3 + ["[0, 1, 2]"]

"""A big riegeli record merged a group of lines at a time (data/riegeli_parts.py) gives what the
record decoded whole gives: the same event columns, stats and tables, and the same exports."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES

from tputui.data import riegeli_parts, storage
from tputui.data.logdir import open_logdir
from tputui.data.riegeli import RecordReader
from tputui.data.riegeli_xspace import _BufferFile, read_riegeli
from tputui.data.run_data import RunData
from tputui.data.xspace import XSpaceFrame
from tputui.export import export_text

RIEGELI = FIXTURES / "riegeli"
FIXTURE_NAMES = ["tpu_planes_brotli", "tpu_lines_zstd", "tf_loop_none", "tpu_tiled_x3"]
pytestmark = pytest.mark.skipif(riegeli_parts.xspace.wire is None, reason="parts need the C decoder's scan")


def _merged(name: str, folder=None):
    hf = open_logdir(str(RIEGELI / name)).runs[0].hosts[0]
    raw, _ = read_riegeli(storage.read(hf), hf, folder=folder)
    return raw


def _records(name: str) -> int:
    hf = open_logdir(str(RIEGELI / name)).runs[0].hosts[0]
    data = storage.read(hf)
    return sum(1 for _ in RecordReader(_BufferFile(data), hf.path, len(data)).records())


def _texts(frame: XSpaceFrame, owner: str) -> list:
    """(owner row, stat, kind, value) with str / bytes values as their text: the string and blob
    tables may list the same items in another order."""
    cols = getattr(frame.raw, f"{owner}_stats")
    kinds = {4: frame.raw.strings, 5: frame.raw.blobs}  # KIND_STR, KIND_BYTES
    out = []
    for o, s, k, v in zip(cols.owner.tolist(), cols.stat.tolist(), cols.kind.tolist(), cols.value.tolist()):
        out.append((o, s, k, kinds[k][v] if k in kinds else v))
    return out


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_a_record_in_parts_merges_as_the_whole_record(name, monkeypatch, tmp_path):
    whole = _merged(name)
    sizes = []
    real = riegeli_parts.decode_raw
    monkeypatch.setattr(riegeli_parts, "decode_raw", lambda data, *a, **k: sizes.append(len(data)) or real(data, *a, **k))
    monkeypatch.setattr(riegeli_parts, "PART_BYTES", 1)  # every line a part of its own
    monkeypatch.setattr(riegeli_parts, "WHOLE_BYTES", 1)
    pieced = _merged(name, folder=str(tmp_path))
    assert len(sizes) > _records(name)  # decoded in parts, not records
    for field in ("plane_id", "plane_name", "line_plane", "line_id", "line_timestamp_ns", "line_duration_ps",
                  "line_name", "line_first_event", "line_num_events", "event_line", "event_metadata_id",
                  "event_offset_ps", "event_num_occurrences", "event_duration_ps", "em_plane", "em_id", "em_name",
                  "sm_plane", "sm_id", "sm_name", "hostnames"):
        a, b = getattr(whole, field), getattr(pieced, field)
        assert (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b), field
    assert [whole.blobs[i] if i >= 0 else None for i in whole.em_metadata.tolist()] == \
        [pieced.blobs[i] if i >= 0 else None for i in pieced.em_metadata.tolist()]
    fw, fp = XSpaceFrame(whole), XSpaceFrame(pieced)
    for owner in ("event", "metadata", "plane"):
        assert _texts(fw, owner) == _texts(fp, owner), owner


def test_parts_cover_every_line_once_and_keep_every_plane_first():
    hf = open_logdir(str(RIEGELI / "tpu_planes_brotli")).runs[0].hosts[0]
    data = storage.read(hf)
    record = max((bytes(r) for r in RecordReader(_BufferFile(data), hf.path, len(data)).records()), key=len)
    parts = list(riegeli_parts.record_parts(record, part_bytes=len(record) // 4))
    whole = riegeli_parts.decode_raw(record)
    assert len(parts) >= 4 and [p.last for p in parts] == [False] * (len(parts) - 1) + [True]
    assert parts[0].planes.tolist() == list(range(len(whole.plane_name)))
    rows = np.concatenate([p.rows for p in parts])
    assert rows.tolist() == list(range(len(whole.line_id)))  # in record order, each once
    assert sum(p.raw.num_events for p in parts) == whole.num_events
    assert max(p.raw.num_events for p in parts) < whole.num_events


@pytest.mark.parametrize("name", ["tpu_lines_zstd", "tpu_tiled_x3"])
def test_exports_of_a_host_merged_in_parts(name, monkeypatch, tmp_path):
    def outputs(cache: str) -> dict[str, str]:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / cache))
        run = RunData(open_logdir(str(RIEGELI / name)).runs[0], use_cache=True, jobs=1)
        return {tool: export_text(run, tool, "json") for tool in
                ("overview_page", "op_profile", "hlo_stats", "framework_op_stats", "memory_profile")}

    whole = outputs("whole")
    monkeypatch.setattr(riegeli_parts, "PART_BYTES", 4096)
    monkeypatch.setattr(riegeli_parts, "WHOLE_BYTES", 4096)
    assert outputs("parts") == whole


def test_a_piece_lets_go_of_the_mapped_pages_it_copied(monkeypatch, tmp_path):
    """raw_subset.subset releases each mapped column once its rows are copied out: a chip's rows
    of nine columns no longer stay resident beside the piece's own copy."""
    from tputui.data import raw_subset

    raw = _merged("tpu_planes_brotli", folder=str(tmp_path))  # columns mapped from their files
    released = []
    monkeypatch.setattr(raw_subset, "release", lambda *cols: released.extend(id(c) for c in cols))
    piece = raw_subset.subset(raw, [0])
    es = raw.event_stats
    mapped = [raw.event_metadata_id, raw.event_offset_ps, raw.event_num_occurrences, raw.event_duration_ps,
              es.owner, es.stat, es.kind, es.value]
    assert all(isinstance(c, np.memmap) for c in mapped)
    assert {id(c) for c in mapped} <= set(released)
    assert piece.num_events == int(raw.line_num_events[raw.line_plane == 0].sum()) > 0

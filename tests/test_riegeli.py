""".xplane.riegeli runs: the Riegeli records reader, XProf's merge of records, and every tool on them.

Oracles: the format spec's fixed first 64 bytes (HighwayHash with Riegeli's key), and XProf 2.24's
own converter run on the riegeli fixtures (tests/fixtures/riegeli/*/oracle, made by
scripts/make_riegeli_fixtures.py). On the intact fixtures XProf gives exactly its outputs for the
source .xplane.pb, and every export of ours equals our export of the source profile (exact JSON
equality); on the fixture with a corrupt chunk, our figures are compared with XProf's directly
(framework_op_stats rows: counts exact, times 1e-9 relative; trace events to the nanosecond).
"""
from __future__ import annotations

import io
import json
import logging
import os
import struct

import numpy as np
import pytest
from conftest import FIXTURES, PROFILES
from op_tools_helpers import datatable_rows, mismatches

from tputui.cli import main
from tputui.data.highway import hash64, hash64_py
from tputui.data.logdir import open_logdir
from tputui.data.riegeli import RecordReader, RiegeliError
from tputui.data.riegeli_writer import RecordWriter, write_records
from tputui.data.run_data import RunData
from tputui.data.xspace import XSpaceFrame
from tputui.errors import UserError
from tputui.export import export_text
from tputui.tools import tool_names

RIEGELI = FIXTURES / "riegeli"
SOURCES = {"tpu_planes_brotli": "tpu_v6e_inference", "tpu_lines_zstd": "tpu_v6e_inference",
           "tf_loop_none": "tf_loop", "jax_mlp_corrupt": "jax_mlp"}
INTACT = [n for n in SOURCES if "corrupt" not in n]
# The spec: "This makes the first 64 bytes of a Riegeli/records file fixed".
SIGNATURE = bytes.fromhex("83af70d10d884a3f 0000000000000000 4000000000000000 91bac23c9287e1a9"
                          "0000000000000000 e19f13c0e9b1c372 7300000000000000 0000000000000000")


def run_of(root) -> RunData:
    return RunData(open_logdir(str(root)).runs[0])


def read_all(data: bytes, warnings=None) -> list[bytes]:
    reader = RecordReader(io.BytesIO(data), "f.xplane.riegeli", len(data), warn=(warnings if warnings is not None else []).append)
    return [bytes(r) for r in reader.records()]


# --- hashes and the records format ---------------------------------------------------------------

def test_highwayhash_reproduces_the_spec_signature():
    for h in (hash64, hash64_py):
        assert h(SIGNATURE[8:24]) == struct.unpack_from("<Q", SIGNATURE, 0)[0]  # block header
        assert h(SIGNATURE[32:64]) == struct.unpack_from("<Q", SIGNATURE, 24)[0]  # chunk header
        assert h(b"") == struct.unpack_from("<Q", SIGNATURE, 40)[0]  # empty data


def test_c_hash_equals_the_python_reference_at_every_tail_length():
    rng = np.random.default_rng(7)
    for n in list(range(0, 70)) + [1000, 1024, 1056 + 7, 65536 + 13]:  # 1024 on: the AVX2 loop, where there is one
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert hash64(data) == hash64_py(data), n


def test_writer_starts_with_the_spec_signature():
    buf = io.BytesIO()
    RecordWriter(buf, "none")
    assert buf.getvalue() == SIGNATURE


@pytest.mark.parametrize("compression", ["none", "brotli", "zstd"])
def test_records_round_trip_across_block_boundaries(compression):
    rng = np.random.default_rng(1)
    chunks = [[b"", b"abc", rng.bytes(70_000)], [rng.bytes(200_000)], [b"x" * 300_000, b"y"]]
    buf = io.BytesIO()
    write_records(buf, chunks, compression, pad=True)
    assert len(buf.getvalue()) % 65536 == 0
    assert read_all(buf.getvalue()) == [r for c in chunks for r in c]


def _three_chunks() -> tuple[bytes, list[int]]:
    buf = io.BytesIO()
    write_records(buf, [[b"a" * 70_000], [b"b" * 200_000], [b"c" * 10]], "none")
    data = buf.getvalue()
    starts = [c[4] for c in RecordReader(io.BytesIO(data), "f", len(data)).chunks()]
    return data, starts


@pytest.mark.parametrize("where,kept", [("data", [b"a" * 70_000, b"c" * 10]), ("header", [b"a" * 70_000, b"c" * 10]),
                                        ("truncated", [b"a" * 70_000])])
def test_damage_is_skipped_with_a_warning(where, kept):
    data, starts = _three_chunks()  # signature, a, b, c
    damaged = bytearray(data)
    if where == "data":
        damaged[starts[2] + 40 + 1000] ^= 0xFF
    elif where == "header":
        damaged[starts[2] + 3] ^= 0xFF  # readers resync on the next valid block header
    else:
        damaged = damaged[:starts[2] + 5000]
    warnings: list[str] = []
    assert read_all(bytes(damaged), warnings) == kept
    assert len(warnings) == 1 and "skipped a damaged region" in warnings[0]


def test_not_riegeli_and_transposed_are_one_line_errors():
    with pytest.raises(RiegeliError, match="not a Riegeli records file"):
        read_all(b"\x08\x01" * 100)
    buf = io.BytesIO()
    w = RecordWriter(buf, "none")
    w._chunk(b"t", b"\x00" * 10, 1, 1)
    with pytest.raises(RiegeliError, match="transposed Riegeli chunk"):
        read_all(buf.getvalue())


# --- the merge, against the source profile -------------------------------------------------------

def _events_by_line(frame: XSpaceFrame) -> dict:
    ev = frame.events.with_columns(name=frame.metadata_names(frame.events["metadata"].to_numpy()).cast(str))
    lines = frame.lines.join(frame.planes.select("plane", plane_name="name"), on="plane")
    ev = ev.join(lines.select("line", "plane_name", line_id="id"), on="line")
    out = {}
    for key, group in ev.group_by(["plane_name", "line_id"]):
        out[key] = sorted(group.select("start_ps", "duration_ps", "num_occurrences", "name").rows())
    return out


@pytest.mark.parametrize("fixture", INTACT)
def test_merged_records_hold_the_source_events(fixture):
    ours, src = run_of(RIEGELI / fixture).frame(), run_of(PROFILES / SOURCES[fixture]).frame()
    assert sorted(ours.raw.plane_name) == sorted(src.raw.plane_name)
    assert ours.num_events == src.num_events
    assert _events_by_line(ours) == _events_by_line(src)
    for owner in ("event", "plane"):
        a = ours.stat_values(owner, ["group_id", "flops", "step_num", "program_id"])
        b = src.stat_values(owner, ["group_id", "flops", "step_num", "program_id"])
        assert sorted(a.drop("owner", "text_id").rows()) == sorted(b.drop("owner", "text_id").rows())


# --- every tool, against XProf ---------------------------------------------------------------------

def _export(root, tool) -> str:
    try:
        return export_text(run_of(root), tool, "json")
    except UserError as e:
        return f"error: {e}"


@pytest.mark.parametrize("fixture", INTACT)
def test_xprof_reads_the_fixture_as_its_source(fixture):
    """The fixture is faithful: XProf's outputs on it equal its outputs on the .xplane.pb."""
    src = PROFILES / SOURCES[fixture] / "oracle"
    for f in sorted((RIEGELI / fixture / "oracle").glob("*.json")):
        if fixture.startswith("tpu") and f.name == "memory_profile.json":
            continue  # XProf samples TPU memory snapshots differently run to run; the summaries agree
        assert json.loads(f.read_text()) == json.loads((src / f.name).read_text()), f.name
    a = np.load(RIEGELI / fixture / "oracle" / "trace_viewer.digest.npz")
    b = np.load(src / "trace_viewer.digest.npz")
    assert np.array_equal(a["events"], b["events"]) and list(a["names"]) == list(b["names"])


@pytest.mark.parametrize("fixture", INTACT)
def test_every_export_equals_the_source_profiles(fixture):
    for tool in tool_names():
        if tool in ("summary", "memory_profile"):
            continue  # summary lists the files themselves; memory_profile: against XProf below
        ours, source = _export(RIEGELI / fixture, tool), _export(PROFILES / SOURCES[fixture], tool)
        if tool == "trace_viewer":  # the same events; the document lists them plane by plane
            ours, source = _trace_rows(json.loads(ours), meta=True), _trace_rows(json.loads(source), meta=True)
        assert ours == source, tool


@pytest.mark.parametrize("fixture", ["tpu_planes_brotli", "tpu_lines_zstd"])  # tf_loop has no memory events
def test_memory_profile_summary_equals_xprof(fixture):
    """Exact (tolerance 0). XProf's "peak heap usage" is the last event's in the order it visits
    them, and merged lines change that order: on tpu_lines_zstd XProf's own figure differs from
    the one for the source .xplane.pb, and ours follows XProf."""
    ours = json.loads(export_text(run_of(RIEGELI / fixture), "memory_profile", "json"))["allocators"]
    theirs = json.loads((RIEGELI / fixture / "oracle" / "memory_profile.json").read_text())
    theirs = theirs.get("memoryProfilePerAllocator", {})
    assert sorted(ours) == sorted(theirs)
    for mid, a in ours.items():
        s, ps = a["summary"], theirs[mid]["profileSummary"]
        st = ps["peakStats"]
        assert (s["peak_heap_usage_bytes"], s["peak_time_ps"], s["memory_capacity_bytes"], s["peak_bytes_in_use"],
                s["stack_reserved_bytes"], s["heap_allocated_bytes"], s["free_memory_bytes"]) == \
            (int(ps["peakBytesUsageLifetime"]), int(ps["peakStatsTimePs"]), int(ps["memoryCapacity"]),
             int(st["peakBytesInUse"]), int(st["stackReservedBytes"]), int(st["heapAllocatedBytes"]),
             int(st["freeMemoryBytes"])), mid


def _trace_rows(doc, meta: bool = False) -> list:
    """Sorted (pid, tid, ts ns, dur ns, name, complete) of the X / i events (`meta`: every event as JSON)."""
    if meta:
        return sorted(json.dumps(e, sort_keys=True) for e in doc["traceEvents"])
    return sorted((e["pid"], e["tid"], round(e["ts"] * 1000), round(e.get("dur", 0) * 1000), e["name"], e["ph"] == "X")
                  for e in doc["traceEvents"] if e.get("ph") in ("X", "i"))


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_corrupt_chunk_costs_a_warning_and_figures_equal_xprof():
    fixture = RIEGELI / "jax_mlp_corrupt"
    run = run_of(fixture)
    seen = _Collect()
    logging.getLogger("tputui").addHandler(seen)
    try:
        frame = run.frame()
    finally:
        logging.getLogger("tputui").removeHandler(seen)
    assert len(seen.messages) == 1 and "skipped a damaged region" in seen.messages[0]
    assert 0 < frame.num_events < run_of(PROFILES / "jax_mlp").frame().num_events
    ours = json.loads(export_text(run, "framework_op_stats", "json"))
    theirs = json.loads((fixture / "oracle" / "framework_op_stats.json").read_text())
    from test_framework_op_stats import COLUMNS, RENAMES

    from tputui.analysis import framework_op_stats as fos

    res = fos.analyze(run)
    for table, doc in ((res.with_idle, theirs[0]), (res.without_idle, theirs[1])):
        rows, expect = table.to_dicts(), datatable_rows(doc)
        assert len(rows) == len(expect) and not mismatches(rows, expect, COLUMNS, RENAMES)
    assert ours["rows"]
    dg = np.load(fixture / "oracle" / "trace_viewer.digest.npz")
    names = dg["names"]
    theirs_rows = sorted((int(p), int(t), int(ts), int(d), str(names[n]), bool(x))
                         for p, t, ts, d, n, x in dg["events"].tolist())
    assert _trace_rows(json.loads(export_text(run, "trace_viewer", "json"))) == theirs_rows


def test_cli_lists_and_exports_a_riegeli_run(capsys):
    assert main(["export", str(RIEGELI / "tf_loop_none"), "--tool", "framework_op_stats", "--format", "csv"]) in (0, None)
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("rank") or "," in out.splitlines()[0]
    assert main(["export", str(RIEGELI / "tf_loop_none"), "--list"]) in (0, None)
    assert "vm" in capsys.readouterr().out


def test_unreadable_riegeli_file_is_one_line_error(tmp_path, capsys):
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    (run / "h.xplane.riegeli").write_bytes(os.urandom(5000))
    code = main(["export", str(tmp_path), "--tool", "overview_page"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not a Riegeli" in err, err
    # A signature, then damage everywhere: nothing readable is one line too (after the warning).
    (run / "h.xplane.riegeli").write_bytes(SIGNATURE + os.urandom(70_000))
    code = main(["export", str(tmp_path), "--tool", "overview_page", "--no-cache"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and err[-1].startswith("tputui: error: ") and "no readable XSpace record" in err[-1], err


def test_cli_warns_in_one_line_per_damaged_region(capsys):
    code = main(["export", str(RIEGELI / "jax_mlp_corrupt"), "--tool", "framework_op_stats", "--no-cache"])
    err = capsys.readouterr().err.splitlines()
    assert code in (0, None)
    assert len(err) == 1 and err[0].startswith("tputui: warning: ") and "skipped a damaged region" in err[0], err


async def test_app_opens_a_damaged_riegeli_run_with_a_warning():
    from tputui.app import TputuiApp
    from tputui.screens.pickers import PickerScreen

    app = TputuiApp(open_logdir(str(RIEGELI / "jax_mlp_corrupt")), use_cache=False)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        await pilot.pause()
        first = app.screen  # the first tool opened on the run
        assert getattr(first, "error", None) is None and not isinstance(first, PickerScreen)
        warnings = [n for n in app._notifications if n.severity == "warning"]
        assert any("skipped a damaged region" in str(n.message) for n in warnings)
        assert not [n for n in app._notifications if n.severity == "error"]
        await pilot.press("t")  # the run stays usable: the tool picker opens on it
        await pilot.pause()
        assert isinstance(app.screen, PickerScreen)


def _space(hostname: str, plane_stat: int, line_ts: int, events: list[tuple[int, str, int]], md: dict[int, str],
           sm: dict[int, str]) -> bytes:
    """One XSpace record: plane "/host:CPU", line id 7, events (offset_ps, name, step stat value)."""
    from tputui.proto import xplane_pb2

    space = xplane_pb2.XSpace(hostnames=[hostname])
    plane = space.planes.add(id=1, name="/host:CPU")
    for i, name in md.items():
        plane.event_metadata[i].id, plane.event_metadata[i].name = i, name
    for i, name in sm.items():
        plane.stat_metadata[i].id, plane.stat_metadata[i].name = i, name
    by_name = {v: k for k, v in md.items()}
    step = {v: k for k, v in sm.items()}["step_num"]
    plane.stats.add(metadata_id={v: k for k, v in sm.items()}["device_id"], int64_value=plane_stat)
    line = plane.lines.add(id=7, name="thread", timestamp_ns=line_ts)
    for offset, name, value in events:
        ev = line.events.add(metadata_id=by_name[name], offset_ps=offset, duration_ps=10)
        ev.stats.add(metadata_id=step, int64_value=value)
    return space.SerializeToString()


@pytest.mark.parametrize("files", [False, True])
def test_merge_remaps_metadata_by_name_and_aligns_line_times(files, tmp_path):
    first = _space("h", 1, 1000, [(0, "a", 1), (5000, "b", 2)], {1: "a", 2: "b"}, {1: "step_num", 2: "device_id"})
    # The second record numbers the same names differently, adds a name, starts its line earlier,
    # and repeats the plane stat (kept once) and the hostname (kept once).
    second = _space("h", 9, 998, [(0, "b", 3), (1000, "c", 4)], {5: "b", 6: "c"}, {4: "device_id", 3: "step_num"})
    buf = io.BytesIO()
    write_records(buf, [[first], [second]], "zstd")
    from tputui.data.riegeli_xspace import read_stream

    raw, skipped = read_stream(io.BytesIO(buf.getvalue()), buf.getbuffer().nbytes, "t",
                               folder=str(tmp_path) if files else None)
    assert isinstance(raw.event_offset_ps, np.memmap) == files  # the merged columns are files, mapped
    frame = XSpaceFrame(raw)
    assert skipped == [] and raw.hostnames == ["h"] and raw.plane_name == ["/host:CPU"]
    assert raw.line_timestamp_ns.tolist() == [998]  # the earlier start, offsets moved to match
    ev = frame.events
    names = frame.metadata_names(ev["metadata"].to_numpy()).cast(str).to_list()
    steps = frame.stat_values("event", "step_num").sort("owner")["int"].to_list()
    got = list(zip(ev["start_ps"].to_list(), names, steps))
    # Merged lines come out time-sorted: absolute starts 998 ns, 999 ns, 1000 ns, 1005 ns.
    assert got == [(998_000, "b", 3), (999_000, "c", 4), (1_000_000, "a", 1), (1_005_000, "b", 2)]
    assert sorted(zip(raw.em_name, raw.em_id.tolist())) == [("a", 1), ("b", 2), ("c", 3)]  # new name: next id
    assert frame.plane_stat_map(0) == {"device_id": 1}


# --- runs bigger than memory: the merge writes its columns to files ---------------------------------

def _shifted_records(copies: list[int], compression: str = "zstd") -> bytes:
    """A riegeli file of the tpu_v6e_inference profile, one record per copy, copy c with every line
    moved c profile-lengths later (records out of time order when `copies` is not ascending)."""
    from tputui.proto import xplane_pb2

    source = next((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb")).read_bytes()
    span = 10 ** 13  # ns: longer than the profile
    records = []
    for c in copies:
        space = xplane_pb2.XSpace.FromString(source)
        for plane in space.planes:
            for line in plane.lines:
                line.timestamp_ns += c * span
        records.append([space.SerializeToString()])
    buf = io.BytesIO()
    write_records(buf, records, compression)
    return buf.getvalue()


def _same_raw(a, b) -> None:
    from dataclasses import fields

    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name.endswith("_stats"):
            assert all(np.array_equal(getattr(x, p), getattr(y, p)) for p in ("owner", "stat", "kind", "value")), f.name
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("copies", [[0, 1, 2], [2, 0, 1], [0, 0]])
def test_merge_through_files_equals_the_in_memory_merge(copies, tmp_path):
    """In time order, out of it (every merged line re-sorted) and overlapping: the merge through
    files gives exactly the columns of the merge in memory, and leaves only the merged columns."""
    from tputui.data.raw import validate
    from tputui.data.riegeli_xspace import read_stream

    data = _shifted_records(copies)
    mem, _ = read_stream(io.BytesIO(data), len(data), "t")
    on_disk, _ = read_stream(io.BytesIO(data), len(data), "t", folder=str(tmp_path))
    validate(on_disk)
    assert isinstance(on_disk.event_stats.value, np.memmap)
    assert sorted(os.listdir(tmp_path)) == sorted(
        [f"event_{k}.npy" for k in ("line", "metadata_id", "offset_ps", "num_occurrences", "duration_ps")]
        + [f"event_stats.{p}.npy" for p in ("owner", "stat", "kind", "value")])
    _same_raw(mem, on_disk)
    # The copies repeat their metadata: the merged tables hold each string and blob once.
    source = run_of(PROFILES / "tpu_v6e_inference").frame().raw
    assert set(on_disk.blobs) == set(source.blobs) and len(on_disk.blobs) == len(set(source.blobs))
    assert sorted(on_disk.strings) == sorted(set(source.strings))
    # Every copy is there, and merged lines are in XProf's order: by begin, the longer first.
    assert on_disk.num_events == len(copies) * run_of(PROFILES / "tpu_v6e_inference").frame().num_events
    begin = np.where(on_disk.event_num_occurrences > 0, 0, on_disk.event_offset_ps)
    same = on_disk.event_line[1:] == on_disk.event_line[:-1]
    assert not (same & (begin[1:] < begin[:-1])).any()


def test_a_riegeli_frame_is_mapped_from_its_cache_entry():
    """The merged columns are written into the cache entry and mapped from it (memory does not
    follow the file); the warm open reads the same entry; nothing is left beside it."""
    from test_cache_damage import same_frame, wait_for_cache_writes

    from tputui.data.cache import load_frame
    from tputui.data.storage import cache_root

    hf = open_logdir(str(RIEGELI / "tpu_lines_zstd")).runs[0].hosts[0]
    cold = load_frame(hf)
    assert isinstance(cold.raw.event_offset_ps, np.memmap)
    wait_for_cache_writes()
    frames = os.path.join(cache_root(), "frames")
    (entry,) = os.listdir(frames)  # no .tmp- folder, no spill files left over
    assert not [n for n in os.listdir(os.path.join(frames, entry)) if n.startswith("spill")]
    warm = load_frame(hf)
    assert same_frame(warm, cold)
    assert same_frame(load_frame(hf, use_cache=False), cold)
    assert os.listdir(frames) == [entry]


def test_a_damaged_riegeli_run_is_merged_through_files_yet_never_cached():
    from test_cache_damage import wait_for_cache_writes

    from tputui.data.cache import load_frame
    from tputui.data.storage import cache_root

    hf = open_logdir(str(RIEGELI / "jax_mlp_corrupt")).runs[0].hosts[0]
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("tputui").addHandler(handler)
    try:
        frame = load_frame(hf)
    finally:
        logging.getLogger("tputui").removeHandler(handler)
    wait_for_cache_writes()
    assert isinstance(frame.raw.event_offset_ps, np.memmap) and frame.num_events > 0
    assert any("skipped a damaged region" in m for m in seen)
    assert os.listdir(os.path.join(cache_root(), "frames")) == []  # read (and warned about) each time


# --- the two passes: lines counted first, then each record written to its final rows -------------

@pytest.mark.parametrize("planes", [None, ("/device:TPU:0", "/host:CPU")])
def test_counted_lines_are_the_decoded_lines(planes):
    """The C count (nothing decoded) gives each line's id, times, events and event stats exactly
    as a full decode does, on every profile and record fixture, and with a plane selection."""
    from tputui.data.riegeli_layout import count_record, lines_of
    from tputui.data.xspace import decode_raw

    sources = [p.read_bytes() for p in sorted(PROFILES.rglob("*.xplane.pb"))]
    sources += read_all((RIEGELI / "tpu_planes_brotli").rglob("*.riegeli").__next__().read_bytes())
    assert len(sources) > 3
    for data in sources:
        counted, decoded = count_record(data, planes), lines_of(decode_raw(data, planes))
        assert counted.plane_names == decoded.plane_names
        assert np.array_equal(counted.lines, decoded.lines)
    assert any(len(count_record(d, planes).lines) for d in sources)


def test_counting_skips_varints_of_every_length_and_stops_where_the_decoder_does():
    """The count skips varints by finding their last byte in one 8-byte load where 8 bytes are
    left: 1- to 10-byte values (a negative int64 is 10), in the last bytes of a record, and keys
    of more than one byte or other wire types still give the decoded lines; a varint cut off by
    the record's end fails the count as it fails the decode."""
    from tputui.data.riegeli_layout import count_record, lines_of
    from tputui.data.xspace import DecodeError, decode_raw
    from tputui.proto import xplane_pb2

    space = xplane_pb2.XSpace(hostnames=["h"])
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.event_metadata[1].id = 1
    plane.stat_metadata[1].id = 1
    values = [0, 1, 127, 128, 1 << 20, 1 << 35, 1 << 49, 1 << 56, 1 << 62, -1, -(1 << 40)]
    for li, v in enumerate(values):
        line = plane.lines.add(id=li, timestamp_ns=abs(v) % 1000, duration_ps=abs(v))
        for k in range(li + 1):
            ev = line.events.add(metadata_id=1, offset_ps=v, duration_ps=abs(v) >> k, num_occurrences=k % 2)
            for _ in range(k % 3):
                ev.stats.add(metadata_id=1, int64_value=v)
            if k == 2:
                ev.stats.add(metadata_id=1, double_value=0.5)
    last = plane.lines.add(id=99)
    last.events.add(metadata_id=1, offset_ps=-1)  # ends in a 10-byte varint: no last byte in 8
    data = space.SerializeToString()
    assert np.array_equal(count_record(data).lines, lines_of(decode_raw(data)).lines)
    # An unknown field 200 (a two-byte key) and a fixed64 field in every event take the long path.
    wide = xplane_pb2.XEvent(metadata_id=1, offset_ps=5).SerializeToString() + b"\xc0\x0c\x07" + b"\x09" + bytes(8)
    odd = _one_line_space([wide] * 3)
    assert count_record(odd).lines[:, 4].tolist() == [3]
    assert np.array_equal(count_record(odd).lines, lines_of(decode_raw(odd)).lines)
    # A varint cut off by its event's end (9 bytes, none the last): both fail.
    cut = _one_line_space([b"\x08\x01\x10" + b"\xff" * 9])
    for walk in (count_record, decode_raw):
        with pytest.raises(DecodeError):
            walk(cut)


def _one_line_space(events: list[bytes]) -> bytes:
    """An XSpace of one plane (id 2, "p") with one line (id 3) holding these serialized events."""
    def field(number: int, body: bytes) -> bytes:
        assert len(body) < 128
        return bytes([number << 3 | 2, len(body)]) + body
    line = b"\x08\x03" + b"".join(field(4, e) for e in events)
    return field(1, b"\x08\x02" + field(2, b"p") + field(3, line))


@pytest.mark.parametrize("copies", [[1, 0, 2], [0, 1]])
def test_records_are_written_where_the_plain_merge_puts_them(copies, tmp_path):
    """Uncompressed records spanning many blocks (their bytes cut into reused buffers, read
    twice): the merge through files equals merging the decoded records one after the other."""
    from tputui.data.riegeli_xspace import read_stream
    from tputui.data.xspace import decode_raw
    from tputui.data.xspace_merge import merge

    data = _shifted_records(copies, "none")
    records = read_all(data)
    assert len(records) == len(copies) and min(len(r) for r in records) > 4 * (1 << 16)
    direct, skipped = read_stream(io.BytesIO(data), len(data), "t", folder=str(tmp_path))
    assert skipped == [] and isinstance(direct.event_offset_ps, np.memmap)
    plain = merge([decode_raw(r) for r in records])
    _same_raw(plain, direct)
    # A local file: mapped, its chunk data read by the kernel into the reader's buffers (preadv).
    import mmap

    from tputui.data.riegeli_xspace import read_riegeli
    from tputui.data.runs import HostFile

    path = tmp_path / "h.xplane.riegeli"
    path.write_bytes(data)
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    folder = tmp_path / "local"
    folder.mkdir()
    local, skipped = read_riegeli(mapped, HostFile("h", str(path), len(data), 0.0, "riegeli"), folder=str(folder))
    assert skipped == []
    _same_raw(plain, local)


def test_a_record_that_counts_yet_does_not_decode_is_skipped(tmp_path):
    """A record whose lines count but whose content is not a valid XSpace (a stat string that is
    not UTF-8: the count does not look inside stats) is skipped with a warning, and the others
    are merged as if it were not there."""
    from tputui.data.riegeli_layout import count_record
    from tputui.data.riegeli_xspace import read_stream
    from tputui.data.xspace import DecodeError, decode_raw
    from tputui.data.xspace_merge import merge
    from tputui.proto import xplane_pb2

    md, sm = {1: "a", 2: "b"}, {1: "step_num", 2: "device_id"}
    good = [_space("h", 1, 1000, [(0, "a", 1)], md, sm), _space("h", 1, 2000, [(0, "b", 2)], md, sm)]
    space = xplane_pb2.XSpace.FromString(good[0])
    space.planes[0].lines[0].events[0].stats.add(metadata_id=1, str_value="x")
    bad = space.SerializeToString().replace(b"\x2a\x01x", b"\x2a\x01\xff")  # field 5 (str_value) "x" -> 0xff
    assert count_record(bad).lines[0, 4] == 1  # it counts ...
    with pytest.raises(DecodeError):  # ... but does not decode
        decode_raw(bad)
    buf = io.BytesIO()
    write_records(buf, [[good[0]], [bad], [good[1]]], "none")
    raw, skipped = read_stream(io.BytesIO(buf.getvalue()), buf.getbuffer().nbytes, "t", folder=str(tmp_path))
    assert len(skipped) == 1 and "skipped record 2, not an XSpace" in skipped[0]
    _same_raw(merge([decode_raw(r) for r in good]), raw)


def test_without_the_c_decoder_records_are_counted_by_decoding_them(monkeypatch, tmp_path):
    """Where _wire was not built, pass 1 counts a record by decoding it with protobuf: the merged
    lines and events are the same (metadata tables come in protobuf's map order there)."""
    from tputui.data import xspace
    from tputui.data.riegeli_xspace import read_stream

    md, sm = {1: "a", 2: "b"}, {1: "step_num", 2: "device_id"}
    buf = io.BytesIO()
    write_records(buf, [[_space("h", 1, 1000, [(0, "a", 1), (9, "b", 2)], md, sm)],
                        [_space("h", 2, 999, [(0, "b", 3)], md, sm)]], "none")
    data = buf.getvalue()
    with_c, _ = read_stream(io.BytesIO(data), len(data), "t", folder=str(tmp_path))
    monkeypatch.setattr(xspace, "wire", None)
    without, skipped = read_stream(io.BytesIO(data), len(data), "t")
    assert skipped == [] and without.num_events == 3
    for name in ("line_id", "line_timestamp_ns", "line_num_events", "event_line", "event_metadata_id",
                 "event_offset_ps", "event_duration_ps"):
        assert np.array_equal(getattr(with_c, name), getattr(without, name)), name
    assert without.event_offset_ps.tolist() == [0, 1000, 1009]  # the later record starts 1 ns earlier: sorted first
    assert np.array_equal(with_c.event_stats.value, without.event_stats.value)


@pytest.mark.parametrize("c", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_order_facts_equal_a_line_by_line_reading(seed, c, monkeypatch):
    """The merge's order facts (one C pass, or whole-record numpy passes with the pairs across
    lines dropped) equal reading each line alone: sorted by begin then longer first, aggregated
    events beginning at 0."""
    from types import SimpleNamespace

    from tputui.data import xspace_merge
    from tputui.data.xspace_merge import _order_facts

    if not c:
        monkeypatch.setattr(xspace_merge, "_columns", None)
    elif xspace_merge._columns is None:
        pytest.skip("the C extension is not built")

    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, 40)  # empty lines too
    n = int(counts.sum())
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    r = SimpleNamespace(
        event_offset_ps=rng.integers(0, 4, n) * 10, event_duration_ps=rng.integers(0, 3, n),  # ties are common
        event_num_occurrences=np.where(rng.random(n) < 0.1, 2, 0), event_line=np.repeat(np.arange(40), counts),
        line_first_event=first, line_num_events=counts)
    facts = _order_facts(r)
    for li in range(40):
        a, k = int(first[li]), int(counts[li])
        occ, off, dur = (x[a:a + k].tolist() for x in (r.event_num_occurrences, r.event_offset_ps, r.event_duration_ps))
        keys = [(0 if o > 0 else b, -d) for o, b, d in zip(occ, off, dur)]
        want = (keys == sorted(keys), any(o > 0 for o in occ),
                (off[0], dur[0]) if k else (0, 0), (off[-1], dur[-1]) if k else (0, 0))
        assert facts(li) == want, li


@pytest.mark.parametrize("big", [False, True])
def test_remap_changes_the_mapped_ids_only(big):
    """A plane's id mapping, by table (small ids) or by search (an id past the table's limit):
    mapped ids change, every other id (below, between, above the keys, negative) stays."""
    from tputui.data.xspace_merge import _Remap

    top = _Remap.TABLE_MAX + 5 if big else 40
    remap = _Remap({3: 7, 10: 2, top: 1})
    assert (remap.table is None) == big
    ids = np.array([-1, 0, 3, 4, 10, 11, top, top + 1, 3], np.int64)
    assert remap(ids).tolist() == [-1, 0, 7, 4, 2, 11, 1, top + 1, 7]
    assert _Remap({})(ids) is ids


def test_merged_column_files_leave_slices_of_zeros_unwritten(tmp_path):
    """FileColumns skips a slice of zeros (num_occurrences of a profile without aggregated events,
    a repeated 0): the file keeps a hole there, which reads as zeros, and every other row is
    where it was written."""
    from tputui.data.cache_entry import column_paths
    from tputui.data.riegeli_columns import FileColumns

    n = 1 << 20
    out = FileColumns(column_paths(str(tmp_path)))
    out.begin(n, 4)
    offsets = np.arange(n, dtype=np.int64) + 7
    zeros = np.zeros(n, np.int64)
    out.write([("offset_ps", offsets, n, 0), ("num_occurrences", zeros, n, 0), ("line", 0, n // 2, 0),
               ("line", 3, n - n // 2, n // 2), ("metadata_id", zeros[:10], 10, 5), ("es.value", zeros[:4], 4, 0)])
    out.write([("metadata_id", offsets[:5], 5, 0)])
    cols = out.result()
    assert np.array_equal(cols["offset_ps"], offsets)
    assert not cols["num_occurrences"].any() and len(cols["num_occurrences"]) == n
    assert np.array_equal(cols["line"], np.repeat(np.array([0, 3], np.int32), [n // 2, n - n // 2]))
    assert cols["metadata_id"][:5].tolist() == offsets[:5].tolist() and not cols["metadata_id"][5:].any()
    occ = os.stat(column_paths(str(tmp_path))["num_occurrences"])
    assert occ.st_size > 8 * n and occ.st_blocks * 512 < n  # the 8 MB of zeros were never written


@pytest.mark.parametrize("seed", range(3))
def test_record_fixes_in_c_equal_numpy(seed, monkeypatch):
    """The merge's per-record fixes (owners in order?, a shift added to each line's slice, str and
    bytes values through their maps) give the same in C as their numpy fallbacks: empty slices,
    zero shifts, a kind with an empty map (left as it is)."""
    from tputui.data import xspace_merge
    from tputui.data.raw import KIND_BYTES, KIND_STR

    if xspace_merge._columns is None:
        pytest.skip("the C extension is not built")
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 5, 30)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    add = np.where(rng.random(30) < 0.3, 0, rng.integers(-1000, 1000, 30))
    column = rng.integers(0, 1 << 40, int(counts.sum()))
    kind = rng.choice(np.array([0, KIND_STR, KIND_BYTES, 3], np.uint8), 200)
    value = np.where(kind == KIND_STR, rng.integers(0, 6, 200), np.where(kind == KIND_BYTES, rng.integers(0, 4, 200),
                                                                         rng.integers(-9, 9, 200)))
    maps = [(rng.permutation(6) + 10, rng.permutation(4) + 100), (rng.permutation(6) + 10, np.zeros(0, np.int64))]
    owners = [np.sort(rng.integers(0, 50, 100)), rng.integers(0, 50, 100), np.zeros(0, np.int64), np.array([3])]

    def run():
        col = column.copy()
        xspace_merge._add_to_slices(col, first, counts, add)
        shifted = [xspace_merge._shift_values(kind, value, s, b) for s, b in maps]
        return col, shifted, [xspace_merge._nondecreasing(o) for o in owners]

    with_c = run()
    monkeypatch.setattr(xspace_merge, "_columns", None)
    without = run()
    assert np.array_equal(with_c[0], without[0]) and not np.array_equal(with_c[0], column)
    assert all(np.array_equal(a, b) for a, b in zip(with_c[1], without[1]))
    assert with_c[1][1][kind == KIND_BYTES].tolist() == value[kind == KIND_BYTES].tolist()
    assert with_c[2] == without[2] == [True, False, True, True]


@pytest.mark.parametrize("fixture", ["tpu_lines_zstd", "tpu_planes_brotli", "tf_loop_none"])
def test_merges_with_and_without_the_c_fixes_are_the_same(fixture, monkeypatch, tmp_path):
    """A whole riegeli merge (ids remapped, lines shifted, str values moved into the merged table)
    equals the same merge with the record fixes done by numpy."""
    from tputui.data import xspace_merge
    from tputui.data.riegeli_xspace import read_stream

    if xspace_merge._columns is None:
        pytest.skip("the C extension is not built")
    data = next((RIEGELI / fixture).rglob("*.riegeli")).read_bytes()
    assert len(read_all(data)) > 1
    with_c, _ = read_stream(io.BytesIO(data), len(data), "t", folder=str(tmp_path))
    monkeypatch.setattr(xspace_merge, "_columns", None)
    without, _ = read_stream(io.BytesIO(data), len(data), "t")
    _same_raw(with_c, without)


def _big_space(events: int, seed: int) -> bytes:
    """An XSpace of one plane and one line of `events` events (each with an int and a str stat):
    its decoded columns pass 1 MB, where the C decoder maps them (and a merge pools them)."""
    def varint(v: int) -> bytes:
        out = bytearray()
        while True:
            out.append(v & 0x7F | (0x80 if v > 0x7F else 0))
            v >>= 7
            if not v:
                return bytes(out)

    def field(number: int, body: bytes) -> bytes:
        return varint(number << 3 | 2) + varint(len(body)) + body

    rng = np.random.default_rng(seed)
    offsets = np.sort(rng.integers(0, 1 << 40, events)).tolist()
    stat_int = field(4, b"\x08\x01\x20" + varint(seed + 1))  # XStat metadata_id 1, int64_value
    stat_str = field(4, b"\x08\x02" + field(5, b"s%d" % seed))  # metadata_id 2, str_value
    line = b"\x08\x03" + b"".join(field(4, b"\x08\x01\x10" + varint(o) + b"\x18\x05" + stat_int + stat_str)
                                  for o in offsets)
    md = field(4, b"\x08\x01" + field(2, b"\x08\x01\x12\x01e"))  # event_metadata {1: {id 1, name "e"}}
    sm = field(5, b"\x08\x01" + field(2, b"\x08\x01\x12\x01a")) + field(5, b"\x08\x02" + field(2, b"\x08\x02\x12\x01b"))
    return field(1, b"\x08\x02" + field(2, b"p") + field(3, line) + md + sm)


def test_pooled_decoder_columns_decode_like_fresh_ones():
    """While a merge pools the decoder's released columns, a record decoded into mappings that
    held another record's columns gives exactly what a decode into fresh pages gives (nothing
    relies on the kernel's zeroed pages); the pool fills, is drawn from, and empties when off."""
    from tputui.data import xspace

    if xspace.wire is None:
        pytest.skip("the C extension is not built")
    from tputui.data import _wire
    from tputui.data.xspace import decode_raw

    first, second = _big_space(300_000, 1), _big_space(200_000, 2)
    def columns(raw) -> dict[str, np.ndarray]:  # copies, owning their memory
        out = {k: np.array(v) for k, v in vars(raw).items() if isinstance(v, np.ndarray)}
        for owner in ("event", "metadata", "plane"):
            stats = getattr(raw, f"{owner}_stats")
            out.update({f"{owner}.{part}": np.array(getattr(stats, part)) for part in ("owner", "stat", "kind", "value")})
        return out

    want = columns(decode_raw(second))
    assert len(want["event_offset_ps"]) == 200_000 and len(want["event.value"]) == 400_000
    assert _wire.memory_pool(768 << 20) == 0
    try:
        r = decode_raw(first)
        assert len(r.event_offset_ps) == 300_000
        del r
        pooled = _wire.memory_pool(768 << 20)
        assert pooled > 8 << 20
        again = decode_raw(second)
        assert _wire.memory_pool(768 << 20) < pooled  # drawn from the pool
        got = columns(again)
        del again
        assert got.keys() == want.keys()
        for k, v in want.items():
            assert np.array_equal(got[k], v), k
    finally:
        _wire.memory_pool(0)
    assert _wire.memory_pool(0) == 0

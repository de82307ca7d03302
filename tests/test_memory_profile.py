"""Memory profile against XProf 2.24's own output (`oracle/memory_profile.json`).

tf_keras has TensorFlow's `mklcpu` allocator with steps from XProf's grouping; the TPU profile
has four HBM allocators (by device ordinal) with a stack reservation. All integers (bytes,
picoseconds, counts, step ids) and the fragmentation doubles are compared exactly
(tolerance 0): they are the recorded stats, not recomputed values.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import polars as pl
import pytest
from conftest import PROFILES, oracle_dir

from tputui.analysis import memory_profile as mp
from tputui.analysis.result import NoDataError
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text
from tputui.proto import xplane_pb2


def run_of(path) -> RunData:
    return RunData(open_logdir(str(path)).runs[0], use_cache=False)


@pytest.fixture(scope="module")
def results():
    return {p: mp.analyze(run_of(PROFILES / p)) for p in ("tf_keras", "tpu_v6e_inference")}


def _oracle(profile: str) -> dict:
    return json.loads((oracle_dir(profile) / "memory_profile.json").read_text())


def _snapshot_row(s: dict) -> tuple:
    ag, md = s["aggregationStats"], s["activityMetadata"]
    return (int(s["timeOffsetPs"]), int(ag["stackReservedBytes"]), int(ag["heapAllocatedBytes"]),
            int(ag["freeMemoryBytes"]), ag["fragmentation"], int(ag["peakBytesInUse"]),
            md["memoryActivity"], int(md["requestedBytes"]), int(md["allocationBytes"]), int(md["address"]),
            md["tfOpName"], int(md["stepId"]), md["regionType"], md["dataType"], md["tensorShape"])


def _our_row(x: dict) -> tuple:
    return (x["time_ps"], x["stack_bytes"], x["heap_bytes"], x["free_bytes"], x["fragmentation"],
            x["peak_bytes_in_use"], x["activity"], x["requested_bytes"], x["allocation_bytes"], x["address"],
            x["tf_op"], x["step_id"], x["region_type"], x["data_type"], x["shape"])


def _oracle_breakdown(oa: dict) -> list[tuple]:
    """XProf's breakdown rows: active allocations resolved to snapshot or special metadata."""
    out = []
    for a in oa["activeAllocations"]:
        i = int(a["snapshotIndex"])
        md = oa["memoryProfileSnapshots"][i]["activityMetadata"] if i >= 0 else oa["specialAllocations"][int(a["specialIndex"])]
        out.append((md["tfOpName"], int(md["allocationBytes"]), int(md["requestedBytes"]), int(a["numOccurrences"]),
                    md["regionType"], md["dataType"], md["tensorShape"], int(md["stepId"])))
    return out


@pytest.mark.parametrize("profile", ["tf_keras", "tpu_v6e_inference"])
def test_matches_oracle(results, profile):
    o = _oracle(profile)
    r = results[profile]
    assert r.memory_ids == o["memoryIds"]
    for mid, a in r.allocators.items():
        oa = o["memoryProfilePerAllocator"][mid]
        ps, st = oa["profileSummary"], oa["profileSummary"]["peakStats"]
        timeline = oa["sampledTimelineSnapshots"]
        s = a.summary()
        assert s["peak_heap_usage_bytes"] == int(ps["peakBytesUsageLifetime"])
        assert s["peak_time_ps"] == int(ps["peakStatsTimePs"])
        assert s["memory_capacity_bytes"] == int(ps["memoryCapacity"])
        assert s["peak_bytes_in_use"] == int(st["peakBytesInUse"])
        assert s["stack_reserved_bytes"] == int(st["stackReservedBytes"])
        assert s["heap_allocated_bytes"] == int(st["heapAllocatedBytes"])
        assert s["free_memory_bytes"] == int(st["freeMemoryBytes"])
        assert s["fragmentation"] == st["fragmentation"]
        # XProf's summary card counts the activities of the timeline it draws.
        assert s["num_allocations"] == sum(x["activityMetadata"]["memoryActivity"] == "ALLOCATION" for x in timeline)
        assert s["num_deallocations"] == sum(x["activityMetadata"]["memoryActivity"] == "DEALLOCATION" for x in timeline)
        assert [_our_row(x) for x in a.timeline.to_dicts()] == [_snapshot_row(x) for x in timeline]
        assert [tuple(x.values()) for x in a.breakdown.to_dicts()] == _oracle_breakdown(oa)


def test_tf_keras_figures(results):
    """The headline numbers a user sees for tf_keras (also pinned by the oracle above)."""
    a = results["tf_keras"].allocators["mklcpu"]
    assert (a.num_allocations, a.num_deallocations) == (110, 110)
    assert a.peak_in_use_bytes == 28954624 and a.peak_time_ps == 280006130000 and a.peak_step == 7
    top = a.breakdown.row(0, named=True)
    assert top["tf_op"] == "unused preallocated device memory" and top["allocation_bytes"] == 19750912


def test_export_schema(results):
    run = run_of(PROFILES / "tf_keras")
    doc = json.loads(export_text(run, "memory_profile"))
    summary = doc["allocators"]["mklcpu"]["summary"]
    for key in ("num_allocations", "num_deallocations", "memory_capacity_bytes", "peak_heap_usage_bytes",
                "peak_bytes_in_use", "peak_time_ps", "stack_reserved_bytes", "heap_allocated_bytes",
                "free_memory_bytes", "fragmentation"):
        assert key in summary
    assert summary["peak_bytes_in_use"] == 28954624
    assert len(doc["allocators"]["mklcpu"]["timeline"]) == 220
    assert doc["allocators"]["mklcpu"]["breakdown_at_peak"][1]["tf_op"].endswith("MaxPoolGrad")
    csv = export_text(run, "memory_profile", fmt="csv")
    assert csv.splitlines()[0].startswith("memory_id,tf_op,allocation_bytes,requested_bytes,occurrences")
    assert len(csv.strip().splitlines()) == 1 + 7


def test_no_memory_events():
    with pytest.raises(NoDataError, match="no memory events"):
        mp.analyze(run_of(PROFILES / "jax_mlp"))
    assert not mp.has_data(run_of(PROFILES / "jax_mlp"))
    assert mp.has_data(run_of(PROFILES / "tf_keras"))


# --- synthetic profiles: the rules the real ones do not exercise -------------------------------
def _write_xspace(tmp_path: pathlib.Path, lines: list[list[tuple[str, int, dict]]]) -> pathlib.Path:
    """A host plane with one line per list of (event name, offset_ps, {stat: value}) events."""
    space = xplane_pb2.XSpace(hostnames=["h"])
    plane = space.planes.add(id=0, name="/host:CPU")
    stat_ids: dict[str, int] = {}
    md_ids: dict[str, int] = {}

    def sid(name: str) -> int:
        if name not in stat_ids:
            stat_ids[name] = len(stat_ids) + 1
            plane.stat_metadata[stat_ids[name]].id = stat_ids[name]
            plane.stat_metadata[stat_ids[name]].name = name
        return stat_ids[name]

    for li, events in enumerate(lines):
        line = plane.lines.add(id=li, name=f"t{li}", timestamp_ns=1000 * (li + 1))
        for name, offset, stats in events:
            if name not in md_ids:
                md_ids[name] = len(md_ids) + 1
                plane.event_metadata[md_ids[name]].id = md_ids[name]
                plane.event_metadata[md_ids[name]].name = name
            ev = line.events.add(metadata_id=md_ids[name], offset_ps=offset, duration_ps=0)
            for k, v in stats.items():
                st = ev.stats.add(metadata_id=sid(k))
                if isinstance(v, float):
                    st.double_value = v
                elif isinstance(v, str):
                    st.str_value = v
                else:
                    st.int64_value = v
    run = tmp_path / "logdir" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "h.xplane.pb").write_bytes(space.SerializeToString())
    return tmp_path / "logdir"


def _ev(kind: str, t: int, heap: int, addr: int, size: int, step: int | None = None, **extra):
    stats = {"allocator_name": extra.pop("allocator", "gpu"), "bytes_allocated": heap, "bytes_reserved": 0,
             "bytes_available": 1000 - heap, "peak_bytes_in_use": extra.pop("peak", heap), "addr": addr,
             "allocation_bytes": size, "requested_bytes": size, **extra}
    if step is not None:
        stats["group_id"] = step
    return ("MemoryAllocation" if kind == "a" else "MemoryDeallocation", t, stats)


def test_peak_ties_steps_and_deallocation_metadata(tmp_path):
    logdir = _write_xspace(tmp_path, [
        [_ev("a", 10, 100, 1, 100, 3, tf_op="A", shape="[5]", data_type=1, region_type="output"),
         _ev("a", 20, 300, 2, 200, 3, tf_op="B"),  # first time at the peak (300)
         _ev("d", 30, 200, 1, 100),  # no step: previous + 1; takes A's metadata
         _ev("a", 40, 300, 3, 100, 5, tf_op="C")],  # same peak, later in file order: this one wins
        [_ev("d", 5, 0, 9, 50, allocator="cpu")],  # another allocator, unmatched deallocation
    ])
    r = mp.analyze(run_of(logdir))
    assert r.memory_ids == ["cpu", "gpu"]
    gpu = r.allocators["gpu"]
    assert gpu.peak_time_ps == 40 and gpu.peak_in_use_bytes == 300 and gpu.peak_step == 5
    snaps = gpu.snapshots.to_dicts()
    assert [s["step_id"] for s in snaps] == [3, 3, 4, 5]
    assert (snaps[2]["tf_op"], snaps[2]["shape"], snaps[2]["data_type"], snaps[2]["region_type"]) == \
        ("A", "[5]", "float", "output")
    # Breakdown in the peak's step (5): C live; 200 heap bytes no event of step 5 explains.
    rows = gpu.breakdown.to_dicts()
    assert [(x["tf_op"], x["allocation_bytes"]) for x in rows] == [
        ("unused preallocated device memory", 200), ("C", 100)]
    assert r.allocators["cpu"].summary()["num_deallocations"] == 1


def _reference_box_filter(in_use: list[int], limit: int) -> list[int]:
    """XProf's SampleMemoryProfileTimeline written out plainly."""
    n = len(in_use)
    width = n // limit
    count1 = limit * (width + 1) - n
    picks = []
    for w, cnt, start in ((width, count1, 0), (width + 1, limit - count1, width * count1)):
        for i in range(cnt):
            best = start + w * i
            for j in range(start + w * i + 1, start + w * (i + 1)):
                if in_use[j] > in_use[best]:
                    best = j
            picks.append(best)
    return picks


def test_timeline_sampling_is_xprofs_max_box_filter(tmp_path):
    rng = np.random.default_rng(7)
    heaps = rng.integers(0, 1000, 2345).tolist()
    logdir = _write_xspace(tmp_path, [[_ev("a", 10 * i, h, i, 1) for i, h in enumerate(heaps)]])
    a = mp.analyze(run_of(logdir), max_snapshots=100).allocators["gpu"]
    assert len(a.timeline) == 100
    expected = _reference_box_filter(heaps, 100)
    assert a.timeline["time_ps"].to_list() == [10 * i for i in expected]
    assert len(mp.analyze(run_of(logdir)).allocators["gpu"].timeline) == 1000


def test_data_type_names():
    assert mp.data_type_name(1) == "float" and mp.data_type_name(14) == "bfloat16"
    assert mp.data_type_name(101) == "float_ref" and mp.data_type_name(0) == "INVALID"


def test_tables_are_polars(results):
    t = results["tpu_v6e_inference"].tables()
    assert list(t) == ["breakdown_at_peak", "summary", "timeline"]
    assert t["summary"]["memory_id"].to_list() == ["0", "1", "2", "3"]
    assert isinstance(t["timeline"], pl.DataFrame) and len(t["timeline"]) == 234 + 224 * 3


@pytest.mark.parametrize("profile", ["jax_live_capture", "jax_mlp", "tf_loop", "tpu_v6e_inference", "tf_keras"])
def test_memory_ids_agree_on_every_profile(profile):
    """Profiles without memory events are empty for XProf too; the others list the same ids."""
    expected = _oracle(profile)["memoryIds"]
    run = run_of(PROFILES / profile)
    assert mp.has_data(run) == bool(expected)
    if expected:
        assert mp.analyze(run).memory_ids == expected


def test_memory_event_row_finds_the_snapshot_event():
    """The trace jump's matcher (analysis side): a timeline snapshot leads back to its event."""
    from tputui.analysis.memory_profile import memory_event_row

    run = RunData(open_logdir(str(PROFILES / "tf_keras")).run(None), use_cache=False)
    result = mp.analyze(run)
    memory_id, allocator = next(iter(result.allocators.items()))
    snap = allocator.timeline.row(allocator.peak_index, named=True)
    frame = run.frame(result.host)
    row = memory_event_row(frame, snap["time_ps"], snap["activity"], memory_id)
    event = mp.memory_events(frame).filter(pl.col("row") == row)
    assert event["time_ps"].to_list() == [snap["time_ps"]] and event["activity"].to_list() == [snap["activity"]]
    assert memory_event_row(frame, snap["time_ps"], snap["activity"], "no such allocator") is None


def test_a_tpu_host_decodes_only_its_memory_events(tmp_path, monkeypatch):
    """Issue #28: the host plane's allocator events alone (906 of its 19,270 events), no
    whole-plane frame kept or cached, when no event of the plane can start a step group."""
    from tputui.data import event_subset

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    decoded = []
    real = event_subset.decode_raw

    def counting(*args, **kwargs):
        raw = real(*args, **kwargs)
        decoded.append(raw.num_events)
        return raw

    monkeypatch.setattr(event_subset, "decode_raw", counting)
    run = RunData(open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0])  # the cache on
    assert mp.has_data(run) and decoded == [0]  # the plane's metadata alone
    result = mp.analyze(run)
    assert decoded == [0, 0, 906]
    assert not run._frames and not list(tmp_path.rglob("*.npy"))
    assert sum(a.summary()["num_events"] for a in result.allocators.values()) == 906


def test_a_host_whose_steps_need_grouping_reads_its_whole_plane(tmp_path):
    """tf_keras: memory events without group ids on a plane with step roots: XProf's grouping
    needs every event of the plane (steps checked against XProf above)."""
    run = run_of(PROFILES / "tf_keras")
    mp.analyze(run)
    assert list(run._frames) == [("vm", (mp.schema.HOST_PLANE,))]


def _reference_stat_columns(frame, rows: np.ndarray) -> pl.DataFrame:
    """The stat columns as the Polars long-form tables give them (the formulation the numpy one
    replaced): metadata stats, then event stats, the last of each row's stats wins; a text column
    holds "" where the last stat is not text, an int column null where it is not an int."""
    md_of = pl.DataFrame({"row": rows, "metadata": frame.events["metadata"].to_numpy()[rows]})
    texts = pl.Series("text", frame.texts + [""], dtype=pl.String)
    out = pl.DataFrame({"row": rows})
    wanted = np.zeros(frame.num_events, bool)
    wanted[rows] = True
    for name in mp._INT_STATS + mp._TEXT_STATS + mp._FLOAT_STATS:
        ev = frame.stat_values("event", name)
        ev = ev.filter(pl.Series(wanted[ev["owner"].to_numpy()])) if len(ev) else ev
        mds = frame.stat_values("metadata", name)
        parts = [ev.with_columns(pl.lit(2).alias("_meta"))]
        if len(mds):
            parts.insert(0, md_of.join(mds.rename({"owner": "metadata"}), on="metadata", maintain_order="left")
                         .drop("metadata").rename({"row": "owner"}).with_columns(pl.lit(1).alias("_meta")))
        s = pl.concat(parts, how="diagonal_relaxed").sort("owner", "_meta", maintain_order=True) \
            .group_by("owner", maintain_order=True).last()
        if name in mp._TEXT_STATS:
            ids = s["text_id"].to_numpy() if len(s) else np.zeros(0, np.int64)
            col = s.select(pl.col("owner").alias("row")).with_columns(
                texts.gather(pl.Series(np.where(ids >= 0, ids, len(frame.texts)))).alias(name))
        elif name in mp._FLOAT_STATS:
            col = s.select(pl.col("owner").alias("row"), pl.col("float").fill_null(0.0).alias(name))
        else:
            col = s.select(pl.col("owner").alias("row"), pl.col("int").alias(name))
        out = out.join(col, on="row", how="left", maintain_order="left")
    return out


def test_stat_columns_follow_xprofs_visit_order(tmp_path):
    """Event stats over metadata stats, the last of repeated ones, kinds that do not fit their
    column (a text tf_op stored as an int, an int addr stored as text), on a synthetic host plane;
    and the same columns as the long-form tables give on every fixture with memory events."""
    space = xplane_pb2.XSpace(hostnames=["h"])
    plane = space.planes.add(id=0, name="/host:CPU")
    names = ["allocator_name", "bytes_allocated", "addr", "tf_op", "shape", "group_id", "fragmentation"]
    for i, n in enumerate(names, 1):
        plane.stat_metadata[i].id, plane.stat_metadata[i].name = i, n
    sid = {n: i for i, n in enumerate(names, 1)}
    for i, n in ((1, "MemoryAllocation"), (2, "MemoryDeallocation"), (3, "Other")):
        plane.event_metadata[i].id, plane.event_metadata[i].name = i, n
    plane.event_metadata[1].stats.add(metadata_id=sid["tf_op"], str_value="from metadata")
    plane.event_metadata[1].stats.add(metadata_id=sid["shape"], str_value="[meta]")
    line = plane.lines.add(id=0, name="t", timestamp_ns=1)
    e = line.events.add(metadata_id=1, offset_ps=10)
    e.stats.add(metadata_id=sid["allocator_name"], str_value="gpu")
    e.stats.add(metadata_id=sid["bytes_allocated"], int64_value=5)
    e.stats.add(metadata_id=sid["bytes_allocated"], int64_value=7)  # repeated: this one
    e.stats.add(metadata_id=sid["tf_op"], str_value="own op")  # over the metadata's
    e.stats.add(metadata_id=sid["fragmentation"], double_value=0.25)
    line.events.add(metadata_id=3, offset_ps=15).stats.add(metadata_id=sid["addr"], int64_value=99)
    e = line.events.add(metadata_id=2, offset_ps=20)
    e.stats.add(metadata_id=sid["allocator_name"], str_value="gpu")
    e.stats.add(metadata_id=sid["addr"], str_value="0x10")  # not an int: null
    e.stats.add(metadata_id=sid["tf_op"], int64_value=3)  # not text: ""
    e.stats.add(metadata_id=sid["group_id"], uint64_value=2**63 + 1)  # uint64 bits
    e.stats.add(metadata_id=sid["fragmentation"], int64_value=1)  # not a double: 0.0
    e = line.events.add(metadata_id=1, offset_ps=30)
    e.stats.add(metadata_id=sid["bytes_allocated"], str_value="x")
    e.stats.add(metadata_id=sid["bytes_allocated"], int64_value=9)
    run = tmp_path / "logdir" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "h.xplane.pb").write_bytes(space.SerializeToString())
    frame = run_of(tmp_path / "logdir").frame("h")
    ev = mp.memory_events(frame)
    got = ev.select("allocator_name", "bytes_allocated", "addr", "tf_op", "shape", "group_id", "fragmentation").rows()
    assert got == [("gpu", 7, None, "own op", "[meta]", None, 0.25),
                   ("gpu", None, None, "", None, -(2**63) + 1, 0.0),
                   (None, 9, None, "from metadata", "[meta]", None, None)]
    rows = ev["row"].to_numpy()
    assert mp._stat_columns(frame, rows).equals(_reference_stat_columns(frame, rows))
    for profile in ("tf_keras", "tpu_v6e_inference"):
        f = run_of(PROFILES / profile).frame(None, planes=[mp.schema.HOST_PLANE])
        rows = mp.memory_events(f)["row"].to_numpy()
        assert len(rows) and mp._stat_columns(f, rows).equals(_reference_stat_columns(f, rows)), profile

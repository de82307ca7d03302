"""Flow links between trace viewer events (host launch -> device op, producer -> consumer, GPU
correlation ids, XFlow stats), checked against XProf.

Oracle: XProf 2.24.2's own trace_viewer output of each fixture reduced to its links
(tests/fixtures/flows/oracle/*.flows.json, scripts/make_flow_fixtures.py). XProf keeps one `flow`
per event (the last one it adds), so an event that both consumes and produces shows only one of
its links there: every XProf link must be ours, and each link of ours XProf lacks must touch an
event carrying two flow stats. The stats themselves are read back from the frame for the
producer / consumer checks.
"""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis.trace_cache import cached_events, finish_index, open_index
from tputui.analysis.trace_events import HOST_PID, trace_events
from tputui.analysis.trace_flows import FLOW_GPU_LAUNCH, FLOW_PRODUCER, FLOW_XFLOW, _groups, _link, flow_table
from tputui.analysis.trace_kinds import KIND_RAW
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

FLOWS = FIXTURES / "flows"
CASES = {  # oracle name -> logdir
    "gpu_launch": FLOWS / "gpu_launch",
    "pod_v5e_single": FIXTURES / "pod" / "pod_v5e_single",
    "tpu_v6e_inference": PROFILES / "tpu_v6e_inference",
    "jax_mlp": PROFILES / "jax_mlp",
}


def events(root):
    run = RunData(open_logdir(str(root)).runs[0])
    return run, trace_events(run.frame())


def key(ev, i: int, with_tid: bool = True) -> tuple:
    """An event as XProf's JSON names it; device stream tids are renumbered by XProf (not by us)."""
    tid = int(ev.tid[i]) if with_tid else None
    return (int(ev.pid[i]), tid, int(round(ev.start_ps[i] / 1000)), ev.name_of(i))


def flow_stat_count(frame, row: int) -> int:
    """How many flows XProf would put on the event of frame row `row`."""
    st = frame.stat_map("event", row)
    md = frame.metadata_stat_map(int(frame.events["metadata"][row]))
    stats = {**md, **st}
    return sum(("_p" in stats, "_c" in stats, "correlation_id" in stats, "flow" in stats))


@pytest.mark.parametrize("name", list(CASES))
def test_every_xprof_link_is_found_and_the_extras_are_events_with_two_flows(name):
    run, ev = events(CASES[name])
    oracle = json.loads((FLOWS / "oracle" / f"{name}.flows.json").read_text())
    with_tid = name != "gpu_launch"  # XProf renumbers GPU stream threads (trace_events' docstring)
    fl = ev.flows
    ours = {(key(ev, a, with_tid), key(ev, b, with_tid)): (a, b) for a, b in zip(fl.src.tolist(), fl.dst.tolist())}
    theirs = {tuple(tuple(x if with_tid or k != 1 else None for k, x in enumerate(side)) for side in link)
              for link in oracle["links"]}
    assert theirs, "the oracle has links"
    assert theirs <= set(ours), sorted(theirs - set(ours))[:5]
    frame = run.frame()
    for link in set(ours) - theirs:
        a, b = ours[link]
        assert max(flow_stat_count(frame, int(ev.source[a])), flow_stat_count(frame, int(ev.source[b]))) >= 2, link


def test_host_launches_link_to_the_device_module_they_start():
    """TPU: DoEnqueueProgram (host, `_p`) -> the XLA Modules event (device, `_c` of the same id
    and type), which starts after it."""
    run, ev = events(PROFILES / "tpu_v6e_inference")
    frame, fl = run.frame(), ev.flows
    to_device = np.flatnonzero((ev.pid[fl.src] == HOST_PID) & (ev.pid[fl.dst] != HOST_PID))
    assert len(to_device)
    for k in to_device.tolist():
        a, b = int(fl.src[k]), int(fl.dst[k])
        pa, cb = frame.stat_map("event", int(ev.source[a])), frame.stat_map("event", int(ev.source[b]))
        assert (pa["_p"], pa["_pt"]) == (cb["_c"], cb["_ct"]) and fl.kind[k] == FLOW_PRODUCER
        assert ev.name_of(a) == "DoEnqueueProgram" and ev.start_ps[b] >= ev.start_ps[a]
        assert ev.threads.filter(ev.threads["pid"] == int(ev.pid[b]))["name"].to_list()  # a shown device line


def test_gpu_launch_and_xflow_kinds():
    run, ev = events(FLOWS / "gpu_launch")
    fl, frame = ev.flows, run.frame()
    launch = np.flatnonzero(fl.kind == FLOW_GPU_LAUNCH)
    assert len(launch) == len(frame.stat_values("event", "correlation_id")) // 2  # one launch per kernel
    for k in launch.tolist():
        a, b = int(fl.src[k]), int(fl.dst[k])
        assert ev.pid[a] == HOST_PID and ev.pid[b] != HOST_PID
        assert frame.stat_map("event", int(ev.source[a]))["correlation_id"] == \
            frame.stat_map("event", int(ev.source[b]))["correlation_id"]
    x = np.flatnonzero(fl.kind == FLOW_XFLOW)
    assert [ev.name_of(int(fl.src[k])) for k in x] == ["EnqueueBatch"]
    assert ev.name_of(int(fl.dst[x[0]])).startswith("ProcessBatch")


def test_partners_go_both_ways():
    _, ev = events(FIXTURES / "pod" / "pod_v5e_single")
    fl = ev.flows
    producer = int(fl.src[0])
    partners, rows, outgoing = fl.partners(producer)
    assert outgoing.all() and set(partners.tolist()) == set(fl.dst[fl.src == producer].tolist())
    consumer = int(partners[0])
    back, _, out = fl.partners(consumer)
    assert producer in back[~out].tolist()
    assert len(fl.partners(producer, limit=2)[0]) == min(2, len(partners))


def test_only_events_shown_from_the_file_take_part():
    """Derived events (kind != raw) point at an op through `source`: they must not borrow its links."""
    run, ev = events(PROFILES / "tpu_v6e_inference")
    fl = ev.flows
    assert (ev.kind[fl.src] == KIND_RAW).all() and (ev.kind[fl.dst] == KIND_RAW).all()
    assert (fl.src != fl.dst).all()
    assert np.array_equal(np.lexsort((fl.dst, fl.src)), np.arange(len(fl)))  # sorted by (src, dst)
    # The same table from the arrays alone.
    again = flow_table(run.frame(), ev.source, ev.kind)
    assert np.array_equal(again.src, fl.src) and np.array_equal(again.dst, fl.dst)


def test_the_index_and_its_saved_copy_keep_the_links(tmp_path):
    import shutil

    dst = tmp_path / "logdir"
    shutil.copytree(PROFILES / "tpu_v6e_inference", dst, ignore=shutil.ignore_patterns("oracle"))
    run = RunData(open_logdir(str(dst)).runs[0])
    ev = trace_events(run.frame())
    built = finish_index(run, None, open_index(run, None))
    loaded = open_index(RunData(run.run), None)
    assert loaded.complete and len(loaded.flows) == len(ev.flows)

    def as_keys(ix):
        start, name = np.asarray(ix.start), np.asarray(ix.name)
        return {(int(start[a]), ix.names[int(name[a])], int(start[b]), ix.names[int(name[b])])
                for a, b in zip(ix.flows.src.tolist(), ix.flows.dst.tolist())}

    expect = {(int(ev.start_ps[a]), ev.name_of(a), int(ev.start_ps[b]), ev.name_of(b))
              for a, b in zip(ev.flows.src.tolist(), ev.flows.dst.tolist())}
    assert as_keys(built) == expect and as_keys(loaded) == expect
    back = cached_events(RunData(run.run), None)  # the export's events from the saved index
    assert {(int(back.start_ps[a]), back.name_of(a), int(back.start_ps[b]), back.name_of(b))
            for a, b in zip(back.flows.src.tolist(), back.flows.dst.tolist())} == expect


def _join_asof_links(prod: pl.DataFrame, cons: pl.DataFrame) -> list[tuple[int, int]]:
    """The link rule with Polars' join_asof (the reference for trace_flows._link): each consumer
    (by time) from the latest producer of its key at or before it, else strictly before (not
    itself), else the first after; (consumer row, producer row) in that pass order."""
    p = prod.with_row_index("p").sort("t")
    todo = cons.with_row_index("c").sort("t")
    out: list[tuple[int, int]] = []
    for strategy, exact in (("backward", True), ("backward", False), ("forward", False)):
        j = todo.join_asof(p, on="t", by="key", strategy=strategy, allow_exact_matches=exact, check_sortedness=False)
        ok = pl.col("p").is_not_null() & (pl.col("pos") != pl.col("pos_right"))
        out += list(zip(*(j.filter(ok)[c].to_list() for c in ("c", "p"))))
        todo = j.filter(~ok.fill_null(False)).select(cons.columns + ["c"])
    return out


@pytest.mark.parametrize("seed", range(6))
def test_link_rule_matches_join_asof_with_ties(seed):
    """Many producers and consumers per key at the same times (ties), events that are both
    (in-out flows), consumers before every producer and keys no producer has."""
    rng = np.random.default_rng(seed)
    n_p, n_c = int(rng.integers(1, 300)), int(rng.integers(1, 300))
    pos = rng.permutation(400)
    prod = pl.DataFrame({"key": rng.integers(0, 12, n_p), "t": rng.integers(0, 25, n_p), "pos": pos[:n_p]})
    cons = pl.DataFrame({"key": rng.integers(0, 14, n_c), "t": rng.integers(-3, 28, n_c),
                         "pos": np.where(rng.random(n_c) < 0.3, rng.choice(pos[:n_p], n_c), pos[-n_c:])})
    p_group, c_group = _groups((prod["key"].to_numpy(), cons["key"].to_numpy()))
    ids = prod["key"].to_numpy()
    got = _link((prod["pos"].to_numpy(), prod["t"].to_numpy(), p_group, np.zeros(n_p, np.uint8), ids),
                (cons["pos"].to_numpy(), cons["t"].to_numpy(), c_group), FLOW_XFLOW)
    want = _join_asof_links(prod, cons)
    assert want, "the case links something"
    assert got is not None
    src, dst = got[0], got[1]
    assert list(zip(dst.tolist(), src.tolist())) == [(int(cons["pos"][c]), int(prod["pos"][p])) for c, p in want]


@pytest.mark.parametrize("host", ["typed", "untyped"])
def test_unmatched_flow_ends_are_left_unlinked(host, tmp_path):
    """Issue #33: `_p` / `_c` ids that never meet (with and without their type stats), an XFlow out
    with no in, a launch with no kernel: what matches is linked, the rest shown without a link."""
    from tputui.cli import main

    run = RunData(open_logdir(str(FLOWS / "unmatched")).runs[0])
    ev = trace_events(run.frame(host))
    fl = ev.flows
    links = [(ev.name_of(a), ev.name_of(b), int(k)) for a, b, k in zip(fl.src.tolist(), fl.dst.tolist(), fl.kind)]
    assert links == ([("Send", "Receive", FLOW_XFLOW)] if host == "typed" else [])
    out = tmp_path / "trace.json"
    assert main(["export", str(FLOWS / "unmatched"), "--tool", "trace_viewer", "--host", host,
                 "--no-cache", "-o", str(out)]) == 0
    names = {e.get("name") for e in json.loads(out.read_text())["traceEvents"]}
    assert {"Produce", "Consume"} <= names

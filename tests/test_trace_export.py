"""`tputui export --tool trace_viewer --format json`: a Chrome Trace Event document equal to XProf's.

Compared with XProf 2.24's trace_viewer output (oracle digest + summary) on every fixture run:
the X-event count, and per event pid, tid, name, phase, ts and dur to the nanosecond
(tolerance: none beyond the float rounding XProf's own JSON has; our decimals are exact).
"""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from conftest import PROFILES

from tputui.analysis.trace_export import analyze, document_events
from tputui.cli import main
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text


def _has_trace_oracle(profile: str, run: str) -> bool:
    d = PROFILES / profile / "oracle"
    return (d / "trace_viewer.digest.npz").exists() or (d / run / "trace_viewer.digest.npz").exists()


# Every fixture run that has XProf's trace_viewer output.
RUNS = sorted(r for r in {(f.relative_to(PROFILES).parts[0], f.parent.name) for f in PROFILES.rglob("*.xplane.pb")}
              if _has_trace_oracle(*r))


def run_data(profile: str, run: str) -> RunData:
    ld = open_logdir(str(PROFILES / profile))
    return RunData(next(r for r in ld.runs if r.name.endswith(run)))


def oracle(profile: str, run: str, name: str):
    d = PROFILES / profile / "oracle"
    return d / name if (d / name).exists() else d / run / name


@pytest.fixture(scope="module", params=RUNS, ids=["/".join(r) for r in RUNS])
def exported(request):
    profile, run = request.param
    text = export_text(run_data(profile, run), "trace_viewer", "json")
    return profile, run, text, json.loads(text)


def test_document_shape(exported):
    _, _, text, doc = exported
    assert doc["displayTimeUnit"] == "ns"
    assert text.startswith('{"displayTimeUnit":"ns"')
    phases = {e.get("ph") for e in doc["traceEvents"]}
    assert phases <= {"M", "X", "i", "s", "f", "C", None}  # None: the closing {} XProf also writes
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            assert e["dur"] > 0 and isinstance(e["name"], str)
        elif e.get("ph") == "i":
            assert e["s"] == "t" and "dur" not in e


def test_events_equal_xprof(exported):
    profile, run, _, doc = exported
    dg = np.load(oracle(profile, run, "trace_viewer.digest.npz"))
    rows, names = dg["events"], dg["names"]
    ours = sorted((e["pid"], e["tid"], round(e["ts"] * 1000), round(e.get("dur", 0) * 1000), e["name"], e["ph"] == "X")
                  for e in doc["traceEvents"] if e.get("ph") in ("X", "i"))
    theirs = sorted((int(p), int(t), int(ts), int(d), str(names[n]), bool(x)) for p, t, ts, d, n, x in rows.tolist())
    assert ours == theirs


def test_complete_events_and_metadata_match_summary(exported):
    profile, run, _, doc = exported
    summary = json.loads(oracle(profile, run, "trace_viewer.summary.json").read_text())
    ev = document_events(doc)
    assert int(ev[:, 4].sum()) == summary["complete_events"]
    meta = [e for e in doc["traceEvents"] if e.get("ph") == "M"]
    assert len(meta) == summary["events_by_phase"]["M"]
    procs = {str(e["pid"]): e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert procs == {p: v["name"] for p, v in summary["processes"].items()}


def test_timestamps_are_exact_picosecond_decimals():
    text = export_text(run_data("tpu_v6e_inference", "2025_12_10_run"), "trace_viewer", "json")
    # XLA Modules' first event on TPU:0 starts at 5353251593250 ps and lasts 961328 ps.
    line = next(x for x in text.splitlines() if '"name":"jit_convert_element_type(' in x and '"pid":3,' in x)
    assert json.loads(line.rstrip(",")) == {"pid": 3, "tid": 2, "ts": 5353251.59325, "dur": 0.961328, "ph": "X",
                                            "name": json.loads(line.rstrip(","))["name"]}
    assert '"ts":5353251.59325,"dur":0.961328,' in line  # the shortest exact decimals


def test_args_option_adds_stats():
    rd = run_data("jax_mlp", "2026_11_22_12_58_33")
    doc = json.loads(export_text(rd, "trace_viewer", "json", args="1"))
    train0 = next(e for e in doc["traceEvents"] if e.get("name") == "train 0")
    assert train0["args"]["step_num"] == "0"
    op = next(e for e in doc["traceEvents"] if e.get("name") == "dot.1" and e.get("ph") == "X")
    assert op["args"]["hlo_module"] == "jit_train_step"
    assert "_r" not in train0["args"] and "_p" not in op["args"]  # XProf's internal stats stay out


def test_csv_table():
    rd = run_data("jax_mlp", "2026_11_22_12_58_33")
    csv = export_text(rd, "trace_viewer", "csv").splitlines()
    assert csv[0] == "pid,process,tid,thread,ts_us,dur_us,ph,name"
    assert len(csv) - 1 == 2958
    assert any(",python,181.52,4042.183,X,train 0" in line for line in csv)


def test_fixed_decimals_beyond_float_precision():
    """Each time by its own size: six fixed decimals from 1000 s on, the shortest float text below."""
    import polars as pl

    from tputui.analysis.trace_export import event_lines, micros

    df = pl.DataFrame({"pid": [1, 1], "tid": [2, 2], "start_ps": [2 * 10**15 + 1, 10**16 + 123456789],
                       "duration_ps": [5, 10**6], "name": [0, 0]})
    lines = event_lines(df, pl.Series(['"n"'])).to_list()
    assert lines[0] == '{"pid":1,"tid":2,"ts":2000000000.000001,"dur":5e-06,"ph":"X","name":"n"},\n'
    assert lines[1].startswith('{"pid":1,"tid":2,"ts":10000000123.456789,"dur":1.0,')
    assert pl.DataFrame({"x": [-1_500_000]}).select(micros("x", signed=True)).item() == "-1.500000"


def test_cli_writes_the_document(tmp_path, capsys):
    out = tmp_path / "trace.json"
    code = main(["export", str(PROFILES / "jax_mlp"), "--tool", "trace_viewer", "--format", "json", "-o", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert int(document_events(doc)[:, 4].sum()) == 2148
    # to stdout too (the binary fast path writes through sys.stdout's buffer)
    buf = io.StringIO()
    analyze(run_data("jax_mlp", "2026_11_22_12_58_33")).write_json(buf)
    assert json.loads(buf.getvalue()) == doc


FLOW_ROOTS = [PROFILES / "tpu_v6e_inference", PROFILES.parent / "flows" / "gpu_launch",
              PROFILES.parent / "pod" / "pod_v5e_single"]


@pytest.mark.parametrize("root", FLOW_ROOTS, ids=[r.name for r in FLOW_ROOTS])
def test_flows_are_exported_as_paired_s_f_events(root):
    """One `"ph":"s"` and one `"ph":"f"` per link, same id / bind_id, each at the start of an
    exported slice on its own track: the s on the link's source, the f on its destination."""
    run = RunData(open_logdir(str(root)).runs[0])
    result = analyze(run)
    doc = result.to_json()
    ev = result.events
    starts = [e for e in doc["traceEvents"] if e.get("ph") == "s"]
    ends = {e["id"]: e for e in doc["traceEvents"] if e.get("ph") == "f"}
    assert len(starts) == len(ends) == len(ev.flows) > 0
    slices = {(e["pid"], e.get("tid"), round(float(e["ts"]) * 1e6)) for e in doc["traceEvents"] if e.get("ph") in ("X", "i")}
    def at(e) -> tuple:
        return e["pid"], e["tid"], round(float(e["ts"]) * 1e6)

    def of(row: int) -> tuple:
        return int(ev.pid[row]), int(ev.tid[row]), int(ev.start_ps[row])

    pairs = []
    for s in starts:
        f = ends[s["id"]]
        assert s["bind_id"] == f["bind_id"] == s["id"] and f["bp"] == "e" and s["cat"] == f["cat"]
        assert at(s) in slices and at(f) in slices
        pairs.append((at(s), at(f)))
    # Every link once, s on its source and f on its destination (numbered in time order).
    want = sorted((of(int(a)), of(int(b))) for a, b in zip(ev.flows.src, ev.flows.dst))
    assert sorted(pairs) == want
    assert [at(s)[2] for s in starts] == sorted(at(s)[2] for s in starts)  # ids follow the sources' times
    assert "flows" in result.tables() and result.tables()["flows"].height == len(ev.flows)


def test_counters_are_exported_as_c_events():
    root = PROFILES.parent / "flows" / "gpu_launch"
    result = analyze(RunData(open_logdir(str(root)).runs[0]))
    doc = result.to_json()
    c = result.events.counters
    got = sorted((e["pid"], e["name"], round(float(e["ts"]) * 1e6), e["args"]["value"])
                 for e in doc["traceEvents"] if e.get("ph") == "C")
    expect = sorted((int(c.pid[k]), c.names[k], int(t), v) for k, t, v in
                    zip(c.series.tolist(), c.t_ps.tolist(), c.value.tolist()))
    assert got == expect and len(got) == len(c.t_ps) > 0
    assert result.tables()["counters"].height == len(got)


def test_export_from_the_saved_index_keeps_flows_and_counters(tmp_path):
    import shutil

    from tputui.analysis.trace_cache import finish_index, open_index

    dst = tmp_path / "logdir"
    shutil.copytree(PROFILES.parent / "flows" / "gpu_launch", dst)
    run = RunData(open_logdir(str(dst)).runs[0])
    fresh = analyze(run).to_json()
    finish_index(run, None, open_index(run, None))
    again = RunData(run.run)
    saved = analyze(again)
    assert not again._frames  # read from the saved index, nothing decoded
    pick = lambda d: sorted(json.dumps(e, sort_keys=True) for e in d["traceEvents"] if e.get("ph") in ("s", "f", "C"))  # noqa: E731
    assert pick(saved.to_json()) == pick(fresh) and pick(fresh)

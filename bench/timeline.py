"""Trace viewer bench: open-to-first-frame, pan/zoom redraws, memory, and XProf's trace_viewer@ converter.

usage: python bench/timeline.py [LOGDIR] [--repeat N] [--keys N] [--no-write]

LOGDIR defaults to bench/_work/big (made with /work/shared/tools/gen/big_trace.py when missing:
~2M events). In one run on the same file, each step in a fresh process (2 shared cores):

- open: `tputui LOGDIR --tool trace_viewer` headless at 200x60, cold (no cache), from process start
  to the first drawn timeline frame (target <= 1.5 s), then until the level-of-detail pyramid is built;
- pan / zoom: a, d, w, s keypresses at 200x60 on the 2M-event profile and on a synthetic 10M-event
  trace; per key, the widget's redraw (the frame computation every key triggers, target <= 30 ms)
  and the whole keypress round trip through Textual's headless pilot (compositor and harness included);
- memory: bytes of the trace viewer's index + pyramid against the decoded frame's (target <= 2x),
  and peak RSS;
- XProf: its trace_viewer@ converter on a fresh copy of the run (/work/shared/tools/xprof_time.py),
  and our `tputui export --tool trace_viewer` whole process; ratios printed.

Best of N runs per step (the machine is shared). Writes the "trace viewer" section of bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEV_PY = sys.executable  # this project's interpreter
ORACLE_PY = os.environ.get("XPROF_PYTHON", "/opt/venvs/oracle/bin/python")  # a python with xprof
TOOLS = ROOT.parent / "shared" / "tools"
RESULTS = ROOT / "bench" / "RESULTS.md"
SIZE = (200, 60)

# Child: the real app, cold, headless; reports times since its own start.
OPEN_CHILD = r"""
import time
T0 = time.perf_counter()
import asyncio, json, resource, statistics, sys
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.widgets.timeline import Timeline

SIZE = tuple(json.loads(sys.argv[2]))
NKEYS = int(sys.argv[3])
marks = {}
orig = Timeline.compute_frame
frame_times = []
def timed(self):
    t = time.perf_counter()
    out = orig(self)
    frame_times.append(time.perf_counter() - t)
    if "first_frame" not in marks:
        marks["first_frame"] = time.perf_counter() - T0
    return out
Timeline.compute_frame = timed

async def main():
    app = TputuiApp(open_logdir(sys.argv[1]), tool="trace_viewer", use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        marks["app_started"] = time.perf_counter() - T0
        while "first_frame" not in marks:
            await asyncio.sleep(0.002)
        await pilot.pause()
        marks["first_paint"] = time.perf_counter() - T0
        while not (app.screen.index.pyramid_ready and app.screen.index.exact):
            await asyncio.sleep(0.005)
        ix = app.screen.index
        marks["pyramid"] = time.perf_counter() - T0
        await pilot.pause()
        frame = app.run_data.frame()
        await keys(pilot, marks)
        marks["index_mb"] = index_bytes(ix) / 1e6
        marks["frame_mb"] = frame_bytes(frame) / 1e6
        marks["events"] = ix.num_events
        marks["levels"] = [len(lv.start) for lv in ix.levels]
    marks["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(marks))

async def keys(pilot, out):
    seq = ["d", "a", "w", "s"] * (NKEYS // 4)
    redraw, roundtrip, cpu = [], [], []
    for k in seq:
        n = len(frame_times)
        t, c = time.perf_counter(), time.process_time()
        await pilot.press(k)
        await pilot.pause()
        roundtrip.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        redraw.extend(frame_times[n:])
    out["cpu_ms"] = [1000 * statistics.median(cpu), 1000 * sorted(cpu)[int(0.95 * (len(cpu) - 1))]]
    out["redraw_ms"] = [1000 * statistics.median(redraw), 1000 * sorted(redraw)[int(0.95 * (len(redraw) - 1))]]
    out["roundtrip_ms"] = [1000 * statistics.median(roundtrip), 1000 * sorted(roundtrip)[int(0.95 * (len(roundtrip) - 1))]]

def nbytes(obj):
    import numpy as np
    return sum(v.nbytes for v in vars(obj).values() if isinstance(v, np.ndarray))

def index_bytes(ix):
    seen, total = set(), 0
    for arrs in [vars(ix).values()] + [vars(lv).values() for lv in ix.levels]:
        for v in arrs:
            if hasattr(v, "nbytes") and id(v) not in seen:
                seen.add(id(v)); total += v.nbytes
    return total

def frame_bytes(frame):
    raw = frame.raw
    total = nbytes(raw)
    for owner in ("event_stats", "metadata_stats", "plane_stats"):
        total += nbytes(getattr(raw, owner))
    return total

asyncio.run(main())
"""

# Child: a synthetic 10M-event trace drawn by the Timeline widget alone (no decode).
SYNTH_CHILD = r"""
import asyncio, json, resource, statistics, sys, time
import numpy as np
import polars as pl
from textual.app import App
from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_events import TraceEvents
from tputui.widgets.timeline import Timeline

SIZE = tuple(json.loads(sys.argv[1]))
NKEYS = int(sys.argv[2])

def synthetic(tracks=8, steps=500, modules=10, ops=249):
    # Per track: steps (depth 0) > modules (depth 1) > ops (depth 2), like a device trace.
    step_ps, gap = 2_000_000_000, 50_000_000  # 2 ms steps, 50 us between
    mod_ps = (step_ps - gap) // modules
    op_ps = (mod_ps - 1000) // ops  # ops fit inside their module
    s0 = np.arange(steps, dtype=np.int64) * (step_ps + gap)
    m0 = (s0[:, None] + np.arange(modules) * mod_ps).ravel()
    o0 = (m0[:, None] + np.arange(ops) * op_ps).ravel()
    per = [(s0, np.full(len(s0), step_ps - gap), 0), (m0, np.full(len(m0), mod_ps - 1000), 1),
           (o0, np.full(len(o0), op_ps - 500), 2)]
    names = [f"step {i}" for i in range(steps)] + [f"module_{j}" for j in range(modules)] + [f"op_{k}" for k in range(ops)]
    name_s = np.arange(steps); name_m = steps + np.tile(np.arange(modules), steps)
    name_o = steps + modules + np.tile(np.arange(ops), steps * modules)
    start = np.concatenate([p[0] for p in per]); dur = np.concatenate([p[1] for p in per])
    name = np.concatenate([name_s, name_m, name_o]).astype(np.int32)
    n1 = len(start)
    T = np.repeat(np.arange(tracks, dtype=np.uint32), n1)
    start = np.tile(start, tracks) + T.astype(np.int64) * 7_000_000  # tracks slightly skewed
    ev = TraceEvents(pid=np.full(n1 * tracks, 701, np.uint32), tid=T, start_ps=start,
                     duration_ps=np.tile(dur, tracks), name=np.tile(name, tracks),
                     source=np.full(n1 * tracks, -1, np.int64), kind=np.zeros(n1 * tracks, np.uint8),
                     names=names, processes=pl.DataFrame({"pid": [701], "name": ["/host:CPU"]},
                                                         schema={"pid": pl.UInt32, "name": pl.String}),
                     threads=pl.DataFrame({"pid": [701] * tracks, "tid": list(range(tracks)),
                                           "name": [f"worker {t}" for t in range(tracks)]},
                                          schema={"pid": pl.UInt32, "tid": pl.UInt32, "name": pl.String}))
    return ev

t = time.perf_counter()
ev = synthetic()
marks = {"events": len(ev), "make_s": time.perf_counter() - t}
t = time.perf_counter(); ix = TraceIndex(ev); marks["index_s"] = time.perf_counter() - t
del ev
t = time.perf_counter(); ix.build_pyramid(); marks["pyramid_s"] = time.perf_counter() - t
marks["levels"] = [len(lv.start) for lv in ix.levels]

frame_times = []
orig = Timeline.compute_frame
def timed(self):
    t = time.perf_counter(); out = orig(self); frame_times.append(time.perf_counter() - t); return out
Timeline.compute_frame = timed

class Bench(App):
    def compose(self):
        yield Timeline(ix, id="timeline")

async def main():
    app = Bench()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tl = app.query_one(Timeline)
        tl.focus()
        # Start zoomed into the middle (a few steps in view), then pan and zoom.
        c = (ix.t_min + ix.t_max) / 2
        tl.set_window(c - 5e9, c + 5e9)
        await pilot.pause()
        acts = {"d": lambda: tl.pan(0.25), "a": lambda: tl.pan(-0.25), "w": lambda: tl.zoom(0.5), "s": lambda: tl.zoom(2.0)}
        redraw, roundtrip, cpu = [], [], []
        for name in ["d", "a", "w", "s"] * (NKEYS // 4):
            n = len(frame_times)
            t, c = time.perf_counter(), time.process_time()
            acts[name]()
            await pilot.pause()
            roundtrip.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            redraw.extend(frame_times[n:])
        # And the whole trace in view (the coarsest level).
        tl.set_window(ix.t_min, ix.t_max); await pilot.pause()
        marks["full_view_ms"] = 1000 * frame_times[-1]
    q = lambda xs: [1000 * statistics.median(xs), 1000 * sorted(xs)[int(0.95 * (len(xs) - 1))]]
    marks["redraw_ms"], marks["roundtrip_ms"], marks["cpu_ms"] = q(redraw), q(roundtrip), q(cpu)
    marks["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(marks))

asyncio.run(main())
"""


def ensure_profile(logdir: pathlib.Path) -> None:
    if list(logdir.rglob("*.xplane.pb")):
        return
    print(f"making the big profile in {logdir} ...", flush=True)
    subprocess.run([ORACLE_PY, "big_trace.py", str(logdir)], cwd=TOOLS / "gen", check=True)


def child(code: str, *args: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        t = time.perf_counter()
        out = subprocess.run([DEV_PY, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=900)
        wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"bench child failed:\n{out.stderr[-3000:]}")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    got["wall_s"] = wall
    return got


def xprof(run_dir: pathlib.Path) -> float:
    out = subprocess.run([ORACLE_PY, str(TOOLS / "xprof_time.py"), str(run_dir), "trace_viewer@"],
                         check=True, capture_output=True, text=True)
    m = re.search(r"trace_viewer@\t([\d.]+)s", out.stdout)
    if not m:
        raise SystemExit(f"could not read XProf's time from: {out.stdout!r}")
    return float(m.group(1))


def our_export(logdir: pathlib.Path) -> float:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        t = time.perf_counter()
        subprocess.run([str(pathlib.Path(DEV_PY).parent / "tputui"), "export", str(logdir), "--tool", "trace_viewer",
                        "--format", "json", "--no-cache", "-o", os.devnull], cwd=ROOT, env=env, check=True,
                       capture_output=True)
        return time.perf_counter() - t


def best(runs: list[dict], key: str) -> dict:
    return min(runs, key=lambda r: r[key])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("logdir", nargs="?", default=str(ROOT / "bench" / "_work" / "big"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keys", type=int, default=40, help="pan/zoom keypresses per run (multiple of 4)")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    a = ap.parse_args()
    logdir = pathlib.Path(a.logdir)
    ensure_profile(logdir)
    xp = next(logdir.rglob("*.xplane.pb"))
    run_dir = xp.parent
    opens, synths, xprofs, exports = [], [], [], []
    for i in range(a.repeat):  # alternate the sides: the machine is shared
        opens.append(child(OPEN_CHILD, str(logdir), json.dumps(SIZE), str(a.keys)))
        xprofs.append(xprof(run_dir))
        exports.append(our_export(logdir))
        synths.append(child(SYNTH_CHILD, json.dumps(SIZE), str(a.keys)))
        print(f"run {i + 1}: first frame {opens[-1]['first_frame']:.2f} s, redraw {opens[-1]['redraw_ms'][0]:.1f} ms "
              f"(10M: {synths[-1]['redraw_ms'][0]:.1f} ms), XProf {xprofs[-1]:.2f} s, export {exports[-1]:.2f} s",
              flush=True)
    o = best(opens, "first_frame")
    o_keys = min(opens, key=lambda r: r["redraw_ms"][0])
    s = min(synths, key=lambda r: r["redraw_ms"][0])
    xp_s, ex_s = min(xprofs), min(exports)
    load = os.getloadavg()[0]
    rows = [
        ("open to first drawn frame, cold (process start, 200x60)", f"{o['first_frame']:.2f} s", "<= 1.5 s",
         f"{o['first_frame'] / xp_s:.2f}x"),
        ("... exact nesting and level-of-detail pyramid built (a worker, after the first frame)",
         f"{o['pyramid']:.2f} s", "", ""),
        ("pan/zoom redraw, 2M events (median / p95)", f"{o_keys['redraw_ms'][0]:.1f} / {o_keys['redraw_ms'][1]:.1f} ms",
         "<= 30 ms", ""),
        ("pan/zoom keypress, all CPU of the app (ours + Textual's compositor), 2M (median / p95)",
         f"{o_keys['cpu_ms'][0]:.1f} / {o_keys['cpu_ms'][1]:.1f} ms", "<= 30 ms", ""),
        ("pan/zoom keypress round trip via the pilot, 2M (median / p95)",
         f"{o_keys['roundtrip_ms'][0]:.1f} / {o_keys['roundtrip_ms'][1]:.1f} ms", "", ""),
        (f"pan/zoom redraw, synthetic {s['events'] / 1e6:.0f}M events (median / p95)",
         f"{s['redraw_ms'][0]:.1f} / {s['redraw_ms'][1]:.1f} ms", "<= 30 ms", ""),
        (f"pan/zoom keypress, all CPU (widget alone in an app), {s['events'] / 1e6:.0f}M (median / p95)",
         f"{s['cpu_ms'][0]:.1f} / {s['cpu_ms'][1]:.1f} ms", "<= 30 ms", ""),
        (f"pan/zoom keypress round trip via the pilot, {s['events'] / 1e6:.0f}M (median / p95)",
         f"{s['roundtrip_ms'][0]:.1f} / {s['roundtrip_ms'][1]:.1f} ms", "", ""),
        (f"whole {s['events'] / 1e6:.0f}M trace in view (coarsest level)", f"{s['full_view_ms']:.1f} ms", "", ""),
        (f"{s['events'] / 1e6:.0f}M: index / pyramid build", f"{s['index_s']:.2f} / {s['pyramid_s']:.2f} s", "", ""),
        ("index + pyramid vs decoded frame (2M)", f"{o['index_mb']:.0f} MB vs {o['frame_mb']:.0f} MB "
         f"({o['index_mb'] / o['frame_mb']:.2f}x)", "<= 2x", ""),
        ("peak RSS: app with 2M-event trace open / synthetic 10M", f"{o['rss_mb']:.0f} / {s['rss_mb']:.0f} MB", "", ""),
        ("XProf trace_viewer@ converter (conversion alone)", f"{xp_s:.2f} s", "", "1.00x"),
        ("`tputui export --tool trace_viewer` whole process", f"{ex_s:.2f} s", "<= 0.5x XProf", f"{ex_s / xp_s:.2f}x"),
    ]
    print(f"\nprofile: {run_dir} ({xp.stat().st_size / 1e6:.1f} MB, {o['events']:,} events); load average {load:.1f}")
    for name, val, target, ratio in rows:
        print(f"  {name}: {val}" + (f"  (target {target})" if target else "") + (f"  ratio {ratio}" if ratio else ""))
    if not a.no_write:
        write_results(xp, o, rows, a.repeat, load)


def write_results(xp: pathlib.Path, o: dict, rows, repeat: int, load: float) -> None:
    lines = [f"## trace viewer (bench/timeline.py, {time.strftime('%Y-%m-%d')}, issue #5)", "",
             f"Profile: big_trace.py ({xp.stat().st_size / 1e6:.1f} MB, {o['events']:,} events) and a synthetic "
             f"10M-event trace; {SIZE[0]}x{SIZE[1]} headless, 2 shared cores (load average {load:.1f} at the end), "
             f"best of {repeat} alternating runs. Redraw = the widget's frame computation each key triggers; "
             "all CPU = process CPU time per key (our redraw, Textual's compositor, the pilot); round trip = "
             "key press to settled screen through Textual's pilot, which mostly waits on its timers.", "",
             "| | measured | target | ratio to XProf trace_viewer@ |", "|---|---:|---|---:|"]
    lines += [f"| {n} | {v} | {t} | {r} |" for n, v, t, r in rows]
    section = "\n".join(lines) + "\n"
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\nWritten by the scripts in bench/.\n"
    pattern = re.compile(r"## trace viewer \(bench/timeline\.py.*?(?=\n## |\Z)", re.S)
    text = pattern.sub(section.rstrip("\n"), text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text if text.endswith("\n") else text + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())

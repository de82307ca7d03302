"""Scale bench (issue 12): real-size TPU profiles, every tool, cold and warm, against XProf.

usage: python bench/scale.py [--quick] [--repeat N] [--work DIR] [--resume] [--profiles x100,x400,hosts16]
                             [--tools a,b] [--xprof-tools a,b] [--no-xprof] [--no-memory] [--no-write]

Builds in a temp dir (or --work DIR, reused when the files are there; never committed), from the
shared real TPU v6e profile tiled with ../shared/tools/gen/tpu_scaled.py:
  x100     one host, the profile x100 (80.6 MB, 2.67M events)
  x400     one host, x400 (322 MB, 10.7M events)
  hosts16  16 hosts: copies of a x25 file under different host names
and times in one run, each step a fresh process on this machine (2 shared cores):
  - every tool with data: `tputui export --tool T --format json -o /dev/null`, whole process,
    cold (empty cache dir) then warm (the same cache dir, a second process); peak RSS per process;
  - the trace viewer's first frame (app headless at 200x60, from process spawn to the first
    drawn timeline frame), cold (and when the final index is ready and saved) and warm;
  - on hosts16, overview_page with `--jobs 1` against the default (when `tputui export` has
    --jobs), cold, and whether the two outputs are identical;
  - XProf 2.24's converter on the same files (../shared/tools/xprof_time.py: conversion alone,
    without its process start), its peak RSS (the whole process, imports included);
  - where the bytes go on one host (decoded frame columns, trace events, trace index).
Min and median of the repeats (default 3, --quick 1). Writes the "scale" section of
bench/RESULTS.md. With --work, each profile's figures are also kept in DIR/scale_results.json as
soon as they are measured, and --resume takes the profiles found there instead of measuring them
again (a long run can be stopped and continued). Steps expected over 2 GB (x400, hosts16 and every XProf run) take
/tmp/bigjob.lock (flock) one at a time: do not run this script itself under that lock.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PY = sys.executable  # this project's interpreter
ORACLE_PY = os.environ.get("XPROF_PYTHON", "/work/xvenv/bin/python")  # a python with xprof (and TF for gen)
SHARED = ROOT.parent / "shared" if (ROOT.parent / "shared").is_dir() else pathlib.Path("/work/shared")
SOURCE = SHARED / "profiles" / "tpu_v6e_inference" / "plugins" / "profile" / "2025_12_10_run" / "t1v-tpu-host.xplane.pb"
RESULTS = ROOT / "bench" / "RESULTS.md"
LOCK = "/tmp/bigjob.lock"
RUN = "2025_12_10_run"
PROFILES = {"x100": (100, 1), "x400": (400, 1), "hosts16": (25, 16)}
BIG = {"x400", "hosts16"}
# Our tool -> XProf's converter (None: XProf has no such tool, or it needs per-module options).
XPROF_TOOL = {"trace_viewer": "trace_viewer@", "summary": None, "memory_viewer": None, "graph_viewer": None}
SIZE = (200, 60)

# Child: the app headless, the trace viewer on the run's first host, cold or warm cache.
FIRST_FRAME_CHILD = r"""
import time
import asyncio, json, resource, sys
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.widgets.timeline import Timeline

spawned = float(sys.argv[2])
marks = {}
orig = Timeline.compute_frame
def timed(self):
    out = orig(self)
    if "first_frame" not in marks:
        marks["first_frame"] = time.time() - spawned
        marks["first_frame_cpu"] = time.process_time()  # this process's CPU (every thread) so far
    return out
Timeline.compute_frame = timed

async def main():
    app = TputuiApp(open_logdir(sys.argv[1]), tool="trace_viewer")
    async with app.run_test(size=(200, 60)) as pilot:
        while "first_frame" not in marks:
            await asyncio.sleep(0.002)
        marks["warm_index"] = bool(app.screen.index.complete)
        while not app.screen.index.complete:  # the final index, saved for the next open
            await asyncio.sleep(0.01)
        marks["complete"] = time.time() - spawned
        marks["events"] = int(app.screen.index.num_events)
    marks["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(marks))

asyncio.run(main())
"""


# Child: where the bytes go for one host (decoded frame, trace events, trace index + pyramid),
# and the process's peak RSS after each step.
MEMORY_CHILD = r"""
import json, resource, sys
import numpy as np
from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_events import trace_events
from tputui.data.cache import load_frame
from tputui.data.logdir import open_logdir

def mb(x):
    return round(x / 1e6, 1)
def rss():
    return mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
def arrays(obj):
    return {k: v.nbytes for k, v in vars(obj).items() if isinstance(v, np.ndarray)}

out = {}
hf = open_logdir(sys.argv[1]).runs[0].hosts[0]
frame = load_frame(hf, use_cache=False)
raw = frame.raw
cols = arrays(raw)
for owner in ("event_stats", "metadata_stats", "plane_stats"):
    for k, v in arrays(getattr(raw, owner)).items():
        cols[f"{owner}.{k}"] = v
out["events"] = int(frame.num_events)
out["event_stats"] = int(len(raw.event_stats.owner))
out["frame_mb"] = mb(sum(cols.values()))
out["frame_top"] = {k: mb(v) for k, v in sorted(cols.items(), key=lambda kv: -kv[1])[:8]}
out["rss_after_decode"] = rss()
ev = trace_events(frame)
out["trace_events_mb"] = mb(sum(arrays(ev).values()))
out["rss_after_events"] = rss()
ix = TraceIndex(ev)
del ev
ix.build_pyramid()
seen, total = set(), 0
for arrs in [vars(ix).values()] + [vars(lv).values() for lv in ix.levels]:
    for v in arrs:
        if isinstance(v, np.ndarray) and id(v) not in seen:
            seen.add(id(v)); total += v.nbytes
out["trace_index_mb"] = mb(total)
out["levels"] = [len(lv.start) for lv in ix.levels]
out["rss_after_index"] = rss()
print(json.dumps(out))
"""


# --- helpers ---------------------------------------------------------------------------------
@contextlib.contextmanager
def big_lock(needed: bool):
    """One job over 2 GB on the machine at a time (the shared /tmp/bigjob.lock)."""
    if not needed:
        yield
        return
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_child(cmd: list[str], env: dict | None = None, timeout: float = 1800) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS MB, stdout, CPU seconds) of one child process; raises on failure.

    CPU seconds (user + system, every thread) say how much work the step did: on a loaded
    machine they move far less than the wall time."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err, text=True)
        deadline = time.monotonic() + timeout
        try:
            while True:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"timed out: {' '.join(cmd)}")
                time.sleep(0.005)
        except BaseException:  # timed out, interrupted or terminated: leave no child behind
            p.kill()
            p.wait()
            raise
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{stderr[-3000:]}")
    return wall, usage.ru_maxrss / 1024, stdout, usage.ru_utime + usage.ru_stime


def env_with_cache(cache: str) -> dict:
    return dict(os.environ, XDG_CACHE_HOME=cache, PYTHONPATH=str(ROOT))


def stats(xs: list[float]) -> tuple[float, float]:
    return min(xs), statistics.median(xs)


def fmt_pair(xs: list[float] | None, unit: str = "") -> str:
    if not xs:
        return "-"
    lo, med = stats(xs)
    return f"{lo:.2f} / {med:.2f}{unit}" if len(xs) > 1 else f"{lo:.2f}{unit}"


# --- building the profiles ---------------------------------------------------------------------
def build(work: pathlib.Path, name: str) -> pathlib.Path:
    """The logdir of one profile (made once per work dir)."""
    k, hosts = PROFILES[name]
    logdir = work / name
    run_dir = logdir / "plugins" / "profile" / RUN
    files = [run_dir / (f"host{h:02d}.xplane.pb" if hosts > 1 else "t1v-tpu-host.xplane.pb") for h in range(hosts)]
    if all(f.exists() for f in files):
        return logdir
    tiled = work / f"_x{k}.xplane.pb"
    if not tiled.exists():
        print(f"building x{k} from {SOURCE.name} ...", flush=True)
        with big_lock(k >= 400):
            subprocess.run([ORACLE_PY, str(SHARED / "tools" / "gen" / "tpu_scaled.py"), str(SOURCE), str(tiled), str(k)],
                           check=True, capture_output=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    for f in files:
        if not f.exists():
            try:
                os.link(tiled, f)  # the same bytes under another host name: no copy needed
            except OSError:
                shutil.copyfile(tiled, f)
    return logdir


def profile_facts(logdir: pathlib.Path) -> str:
    files = sorted(logdir.rglob("*.xplane.pb"))
    size = sum(f.stat().st_size for f in files)
    return f"{len(files)} host(s), {size / 1e6:.1f} MB" + (f" ({files[0].stat().st_size / 1e6:.1f} MB each)"
                                                             if len(files) > 1 else "")


# --- the measurements ------------------------------------------------------------------------
def tools_with_data(logdir: pathlib.Path, cache: str) -> list[str]:
    out = run_child([PY, "-m", "tputui.cli", "export", str(logdir), "--list"], env_with_cache(cache))[2]
    return json.loads(out)["runs"][0]["tools"]


def export_cmd(logdir: pathlib.Path, tool: str, *extra: str) -> list[str]:
    return [PY, "-m", "tputui.cli", "export", str(logdir), "--tool", tool, "--format", "json", "-o", os.devnull, *extra]


def time_export(logdir: pathlib.Path, tool: str, big: bool) -> dict:
    """Cold (empty cache) then warm (same cache, new process): seconds and peak RSS each."""
    with tempfile.TemporaryDirectory() as cache, big_lock(big):
        cold, cold_rss, _, cold_cpu = run_child(export_cmd(logdir, tool), env_with_cache(cache))
        warm, warm_rss, _, warm_cpu = run_child(export_cmd(logdir, tool), env_with_cache(cache))
    return {"cold": cold, "warm": warm, "cold_rss": cold_rss, "warm_rss": warm_rss, "cold_cpu": cold_cpu,
            "warm_cpu": warm_cpu}


def time_first_frame(logdir: pathlib.Path, big: bool) -> dict:
    """The trace viewer opened cold, then warm (a second process on the same cache)."""
    out = {}
    with tempfile.TemporaryDirectory() as cache, big_lock(big):
        for kind in ("cold", "warm"):
            _, rss, stdout, _ = run_child([PY, "-c", FIRST_FRAME_CHILD, str(logdir), repr(time.time())],
                                          env_with_cache(cache))
            got = json.loads(stdout.strip().splitlines()[-1])
            out[kind], out[f"{kind}_rss"], out[f"{kind}_complete"] = got["first_frame"], rss, got["complete"]
            out[f"{kind}_from_saved"] = got["warm_index"]
            out[f"{kind}_cpu"] = got["first_frame_cpu"]
            out["events"] = got["events"]
    return out


def measure_memory(logdir: pathlib.Path, big: bool) -> dict:
    with tempfile.TemporaryDirectory() as cache, big_lock(big):
        _, rss, out, _ = run_child([PY, "-c", MEMORY_CHILD, str(logdir)], env_with_cache(cache))
    got = json.loads(out.strip().splitlines()[-1])
    got["rss_mb"] = rss
    return got


def has_jobs_option() -> bool:
    out = run_child([PY, "-m", "tputui.cli", "export", "--help"], env_with_cache(tempfile.gettempdir()))[2]
    return "--jobs" in out


def time_jobs(logdir: pathlib.Path, tool: str) -> dict:
    """Cold runs with --jobs 1 and with the default; are their outputs identical?"""
    res = {}
    texts = {}
    for label, extra in (("jobs1", ["--jobs", "1"]), ("default", [])):
        with tempfile.TemporaryDirectory() as cache, big_lock(True):
            out_file = os.path.join(cache, "out.json")
            cmd = [PY, "-m", "tputui.cli", "export", str(logdir), "--tool", tool, "--format", "json", "-o", out_file,
                   *extra]
            res[label], res[f"{label}_rss"], _, res[f"{label}_cpu"] = run_child(cmd, env_with_cache(cache))
            texts[label] = pathlib.Path(out_file).read_bytes()
    res["identical"] = texts["jobs1"] == texts["default"]
    return res


def time_xprof(logdir: pathlib.Path, tool: str) -> dict | None:
    xtool = XPROF_TOOL.get(tool, tool)
    if xtool is None:
        return None
    run_dir = next(logdir.rglob("*.xplane.pb")).parent
    with big_lock(True):  # XProf takes ~8 GB on x400
        try:
            _, rss, out, _ = run_child([ORACLE_PY, str(SHARED / "tools" / "xprof_time.py"), str(run_dir), xtool],
                                       env=dict(os.environ), timeout=3600)
        except SystemExit as e:  # XProf's converter failed on this tool: the table says "-"
            print(f"  XProf's {xtool} converter failed: {str(e).splitlines()[0]}", flush=True)
            return None
    m = re.search(r"\t([\d.]+)s\t", out)
    if not m:
        raise SystemExit(f"could not read XProf's time from: {out!r}")
    return {"s": float(m.group(1)), "rss": rss}


# --- the run -----------------------------------------------------------------------------------
def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `kill`: unwind, so children are stopped too
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repeat of everything (the default is 3)")
    ap.add_argument("--repeat", type=int, help="repeats per measurement")
    ap.add_argument("--work", help="where the profiles are built (kept; default: a temp dir, removed)")
    ap.add_argument("--profiles", default="x100,x400,hosts16", help="which of x100, x400, hosts16")
    ap.add_argument("--tools", help="only these tools (comma-separated; default: every tool with data)")
    ap.add_argument("--no-xprof", action="store_true", help="skip XProf's converter")
    ap.add_argument("--xprof-tools", help="run XProf's converter only for these tools (comma-separated)")
    ap.add_argument("--resume", action="store_true", help="with --work: keep the profiles already measured there")
    ap.add_argument("--no-memory", action="store_true", help="skip the where-the-bytes-go step")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    a = ap.parse_args()
    repeat = a.repeat or (1 if a.quick else 3)
    names = [n for n in a.profiles.split(",") if n]
    unknown = set(names) - set(PROFILES)
    if unknown:
        raise SystemExit(f"unknown profile(s): {', '.join(sorted(unknown))} (x100, x400, hosts16)")
    work = pathlib.Path(a.work) if a.work else pathlib.Path(tempfile.mkdtemp(prefix="tputui-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    compile_bytecode()
    jobs = has_jobs_option()
    saved = work / "scale_results.json"
    done = json.loads(saved.read_text()) if a.resume and saved.exists() else {}
    results: dict[str, dict] = {}
    try:
        for name in names:
            if name in done:
                results[name] = done[name]
                print(f"\n== {name}: kept from {saved}", flush=True)
                continue
            logdir = build(work, name)
            big = name in BIG
            with tempfile.TemporaryDirectory() as cache, big_lock(big):
                tools = tools_with_data(logdir, cache)
            if a.tools:
                tools = [t for t in tools if t in a.tools.split(",")]
            r = results[name] = {"facts": profile_facts(logdir), "tools": {}, "frame": [], "jobs": [], "memory": None}
            print(f"\n== {name}: {r['facts']}; tools: {', '.join(tools)}", flush=True)
            for i in range(repeat):  # alternate the sides each repeat: the machine is shared
                for tool in tools:
                    t = r["tools"].setdefault(tool, {"ours": [], "xprof": []})
                    t["ours"].append(time_export(logdir, tool, big))
                    if not a.no_xprof and (i == 0 or not a.quick) and (
                            not a.xprof_tools or tool in a.xprof_tools.split(",")):
                        x = time_xprof(logdir, tool)
                        if x:
                            t["xprof"].append(x)
                    o = t["ours"][-1]
                    print(f"  {tool}: cold {o['cold']:.2f} s ({o['cold_rss']:.0f} MB), warm {o['warm']:.2f} s"
                          + (f"; XProf {t['xprof'][-1]['s']:.2f} s ({t['xprof'][-1]['rss']:.0f} MB)"
                             if t["xprof"] else ""), flush=True)
                if "trace_viewer" in tools:
                    f = time_first_frame(logdir, big)
                    r["frame"].append(f)
                    print(f"  trace viewer first frame: cold {f['cold']:.2f} s (final index {f['cold_complete']:.2f} s), "
                          f"warm {f['warm']:.2f} s", flush=True)
                if i == 0 and not a.no_memory and name != "hosts16":
                    r["memory"] = m = measure_memory(logdir, big)
                    print(f"  memory: frame {m['frame_mb']:.0f} MB, trace events {m['trace_events_mb']:.0f} MB, "
                          f"trace index {m['trace_index_mb']:.0f} MB; peak RSS {m['rss_mb']:.0f} MB", flush=True)
                if name == "hosts16" and jobs:
                    j = time_jobs(logdir, "overview_page")
                    r["jobs"].append(j)
                    print(f"  overview_page --jobs 1 {j['jobs1']:.2f} s, default {j['default']:.2f} s, "
                          f"identical: {j['identical']}", flush=True)
            if a.work:
                done[name] = r
                saved.write_text(json.dumps(done))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    section = render(results, repeat, jobs)
    print("\n" + section)
    if not a.no_write:
        write_results(section)


def compile_bytecode() -> None:
    """Write tputui's .pyc files first, as `pip install` does: this environment may set
    PYTHONDONTWRITEBYTECODE, and every timed process would then compile tputui's sources again
    (~0.06 s of each start) where a user's installed copy reads its bytecode."""
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "tputui")], check=True, capture_output=True)


def render(results: dict, repeat: int, jobs: bool) -> str:
    load = os.getloadavg()[0]
    lines = [f"## scale (bench/scale.py, {time.strftime('%Y-%m-%d')}, issue 12)", "",
             f"The shared real TPU v6e profile tiled with ../shared/tools/gen/tpu_scaled.py; each step a fresh "
             f"process, 2 shared cores (load average {load:.1f} at the end). Seconds as min / median of {repeat} "
             "run(s); CPU s = user + system time of the process (every thread), which a loaded machine moves far "
             "less than the wall time. tputui: the whole `tputui export --tool T --format json` process (its "
             ".pyc files written first, as pip install does); cold = empty cache dir, "
             "warm = a second process on the same cache. XProf: its converter alone (xprof_time.py), peak RSS of "
             "its whole process. Ratio = tputui cold min / XProf min. Targets (issue 12): x100 every export "
             "<= 1.5 s cold, <= 0.4 s warm; trace viewer first frame <= 1.5 s cold, <= 0.5 s warm; x400 "
             "overview_page <= 5 s cold and <= 0.12x XProf, peak RSS <= 1.5 GB (1,430 MiB) for any tool. Peak RSS in "
             "MiB (2^20 bytes), file sizes in MB (10^6 bytes).", ""]
    for name, r in results.items():
        lines += [f"### {name}: {r['facts']}", "",
                  "| tool | tputui cold s | cold CPU s | warm s | warm CPU s | peak RSS cold / warm MiB | XProf s "
                  "| XProf RSS MiB | ratio |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for tool, t in r["tools"].items():
            ours = t["ours"]
            cold = [o["cold"] for o in ours]
            rss = f"{max(o['cold_rss'] for o in ours):.0f} / {max(o['warm_rss'] for o in ours):.0f}"
            xs = [x["s"] for x in t["xprof"]]
            ratio = f"{min(cold) / min(xs):.2f}x" if xs else "-"
            xrss = f"{max(x['rss'] for x in t['xprof']):.0f}" if t["xprof"] else "-"
            lines.append(f"| {tool} | {fmt_pair(cold)} | {fmt_pair([o['cold_cpu'] for o in ours])} | "
                         f"{fmt_pair([o['warm'] for o in ours])} | {fmt_pair([o['warm_cpu'] for o in ours])} | {rss} | "
                         f"{fmt_pair(xs)} | {xrss} | {ratio} |")
        if r["frame"]:
            f = r["frame"]
            lines += ["", f"Trace viewer ({f[0]['events']:,} events), app headless at {SIZE[0]}x{SIZE[1]}, "
                      "from process spawn: first frame cold "
                      f"{fmt_pair([x['cold'] for x in f], ' s')} (CPU {fmt_pair([x['cold_cpu'] for x in f], ' s')}; "
                      "final index built and saved: "
                      f"{fmt_pair([x['cold_complete'] for x in f], ' s')}), first frame warm "
                      f"{fmt_pair([x['warm'] for x in f], ' s')} (CPU {fmt_pair([x['warm_cpu'] for x in f], ' s')}; "
                      "from the saved index: "
                      f"{all(x['warm_from_saved'] for x in f)}); peak RSS cold / warm "
                      f"{max(x['cold_rss'] for x in f):.0f} / {max(x['warm_rss'] for x in f):.0f} MiB."]
        if r["memory"]:
            m = r["memory"]
            top = ", ".join(f"{k} {v:.0f}" for k, v in m["frame_top"].items())
            lines += ["", f"Where the bytes go ({m['events']:,} events, {m['event_stats']:,} event stats): decoded frame "
                      f"{m['frame_mb']:.0f} MB (largest columns, MB: {top}); the trace viewer's events "
                      f"{m['trace_events_mb']:.0f} MB; its index + pyramid {m['trace_index_mb']:.0f} MB "
                      f"(levels {', '.join(f'{x:,}' for x in m['levels'])}). Peak RSS of that process after the decode "
                      f"{m['rss_after_decode']:.0f} MB, after the events {m['rss_after_events']:.0f} MB, after the index "
                      f"{m['rss_after_index']:.0f} MB."]
        if name == "hosts16":
            if r["jobs"]:
                j = r["jobs"]
                j1, jd = [x["jobs1"] for x in j], [x["default"] for x in j]
                lines += ["", f"overview_page on 16 hosts, cold: `--jobs 1` {fmt_pair(j1, ' s')}, default "
                          f"{fmt_pair(jd, ' s')} ({min(jd) / min(j1):.3f}x by the min, "
                          f"{statistics.median(jd) / statistics.median(j1):.3f}x by the median; target <= 0.6x; CPU "
                          f"{fmt_pair([x['jobs1_cpu'] for x in j], ' s')} / {fmt_pair([x['default_cpu'] for x in j], ' s')}); "
                          "peak RSS "
                          f"{max(x['jobs1_rss'] for x in j):.0f} / {max(x['default_rss'] for x in j):.0f} MiB; "
                          f"identical outputs: {all(x['identical'] for x in j)}."]
            elif not jobs:
                lines += ["", "`tputui export` has no `--jobs` option in this build: the --jobs comparison was skipped."]
        lines.append("")
    return "\n".join(lines)


def write_results(section: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\nWritten by the scripts in bench/.\n"
    pattern = re.compile(r"## scale \(bench/scale\.py.*?(?=\n## |\Z)", re.S)
    body = section.rstrip("\n")
    text = pattern.sub(lambda _: body, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + body
    RESULTS.write_text(text if text.endswith("\n") else text + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

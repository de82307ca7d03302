"""Decode benchmark: tputui vs XProf's own converter on the same ~2M-event profile.

usage: python bench/decode.py [--profile RUN_DIR] [--xprof-python PY] [--gen-python PY] [--repeat N]

Builds a ~2M-event JAX profile in a temp dir with ../shared/tools/gen/big_trace.py (never
committed) unless --profile names one, then times, in one run on the same file:
  - our full decode (no cache), our warm decode (from the cache),
  - `tputui export --tool trace_viewer` (the whole command),
  - XProf's trace_viewer and trace_viewer@ converters (../shared/tools/xprof_time.py),
each in a fresh subprocess so peak RSS is that step's alone. Prints the ratios and writes
the "decode" section of bench/RESULTS.md. Targets (2 cores): full decode <= 0.6 s, warm
<= 0.15 s, our trace export <= 0.5x XProf's time, peak RSS <= 600 MB.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_TOOLS = ROOT.parent / "shared" / "tools"
RESULTS = ROOT / "bench" / "RESULTS.md"

# Runs in a child: decode one file (optionally via the cache) and report seconds and peak RSS.
CHILD = r"""
import json, resource, sys, time, threading
from tputui.data.logdir import open_logdir
from tputui.data.cache import load_frame
hf = open_logdir(sys.argv[1]).runs[0].hosts[0]
use_cache = sys.argv[2] == "cache"
t = time.perf_counter()
frame = load_frame(hf, use_cache=use_cache)
events = frame.events  # the table every tool reads
dt = time.perf_counter() - t
for th in threading.enumerate():
    if th.name == "tputui-cache-write":
        th.join()
print(json.dumps({"seconds": dt, "events": frame.num_events,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def run_child(args: list[str], env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=600)
    if out.returncode:
        sys.exit(f"decode child failed: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout)


def timed_command(cmd: list[str], env: dict) -> tuple[float, float, str]:
    """Seconds and peak RSS (MB) of a whole command, measured with /usr/bin/time-like rusage."""
    wrapper = ("import resource, subprocess, sys, time, json; t = time.perf_counter(); "
               "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "print(json.dumps({'s': time.perf_counter() - t, 'rc': p.returncode, "
               "'rss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, "
               "'out': p.stdout[-300:], 'err': p.stderr[-300:]}))")
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=900)
    doc = json.loads(out.stdout)
    if doc["rc"]:
        raise RuntimeError(f"{' '.join(cmd[:4])}... failed: {doc['err'].strip()}")
    return doc["s"], doc["rss"], doc["out"]


def make_profile(gen_python: str, workdir: str) -> str:
    logdir = os.path.join(workdir, "big")
    gen = SHARED_TOOLS / "gen"
    print(f"building the ~2M-event profile with {gen_python} {gen / 'big_trace.py'} ...", flush=True)
    subprocess.run([gen_python, "big_trace.py", logdir], cwd=gen, check=True, capture_output=True, timeout=900)
    return os.path.dirname(glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb"))[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", help="a run dir holding one <host>.xplane.pb (default: build one)")
    ap.add_argument("--xprof-python", default=os.environ.get("XPROF_PYTHON", "/opt/venvs/oracle/bin/python"),
                    help="a python with `xprof` installed (XProf's converter)")
    ap.add_argument("--gen-python", default=os.environ.get("GEN_PYTHON", sys.executable),
                    help="a python with jax, to build the profile")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="tputui-bench-")
    try:
        run_dir = a.profile or make_profile(a.gen_python, work)
        xplane = glob.glob(os.path.join(run_dir, "*.xplane.pb"))[0]
        size_mb = os.path.getsize(xplane) / 1e6
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
        rows = {}

        full = [run_child([run_dir, "nocache"], env) for _ in range(a.repeat)]
        rows["full decode (no cache)"] = (min(r["seconds"] for r in full), max(r["rss_mb"] for r in full))
        events = full[0]["events"]
        run_child([run_dir, "cache"], env)  # fills the cache
        warm = [run_child([run_dir, "cache"], env) for _ in range(a.repeat)]
        rows["warm decode (cached)"] = (min(r["seconds"] for r in warm), max(r["rss_mb"] for r in warm))

        export_out = os.path.join(work, "trace.json")
        ours = []
        for _ in range(a.repeat):
            ours.append(timed_command([sys.executable, "-m", "tputui.cli", "export", run_dir, "--tool",
                                       "trace_viewer", "--no-cache", "-o", export_out], env))
        rows["tputui export --tool trace_viewer (whole command)"] = (min(s for s, _, _ in ours),
                                                                    max(r for _, r, _ in ours))
        xprof = None  # the faster of XProf's two trace converters is the bar
        if shutil.which(a.xprof_python) or os.path.exists(a.xprof_python):
            for tool in ("trace_viewer", "trace_viewer@"):
                runs = [timed_command([a.xprof_python, str(SHARED_TOOLS / "xprof_time.py"), run_dir, tool], env)
                        for _ in range(max(1, a.repeat - 1))]
                conv = [float(re.search(r"\t([\d.]+)s\t", out).group(1)) for _, _, out in runs]
                rows[f"XProf {tool} converter (conversion alone)"] = (min(conv), max(r for _, r, _ in runs))
                if xprof is None or min(conv) < xprof[0]:
                    xprof = (min(conv), max(r for _, r, _ in runs))
        else:
            print(f"note: {a.xprof_python} not found; XProf not timed (pass --xprof-python)")

        print(f"\nprofile: {size_mb:.1f} MB, {events:,} events  ({platform.machine()}, {os.cpu_count()} cores)")
        for name, (s, rss) in rows.items():
            print(f"  {name:<52} {s:7.3f} s   peak RSS {rss:6.0f} MB")
        ratio = None
        if xprof:
            ratio = rows["tputui export --tool trace_viewer (whole command)"][0] / xprof[0]
            print(f"  ratio ours / XProf's faster trace converter: {ratio:.2f}x  (target <= 0.5x)")
        if not a.no_write:
            write_results(size_mb, events, rows, ratio)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_results(size_mb: float, events: int, rows: dict, ratio: float | None) -> None:
    lines = [f"## decode (bench/decode.py, {time.strftime('%Y-%m-%d')})", "",
             f"Profile: {size_mb:.1f} MB, {events:,} events (../shared/tools/gen/big_trace.py), "
             f"{os.cpu_count()} cores. Best of the runs; peak RSS is the step's own process.", "",
             "| measurement | seconds | peak RSS MB |", "|---|---:|---:|"]
    lines += [f"| {name} | {s:.3f} | {rss:.0f} |" for name, (s, rss) in rows.items()]
    if ratio is not None:
        lines += ["", f"Our whole `export --tool trace_viewer` command vs the faster of XProf's two trace converters "
                      f"(conversion alone, without its process start): **{ratio:.2f}x** (target <= 0.5x)."]
    section = "\n".join(lines) + "\n"
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\nWritten by the scripts in bench/.\n"
    pattern = re.compile(r"## decode \(bench/decode\.py.*?(?=\n## |\Z)", re.S)
    if pattern.search(text):  # replace our section in place; the next heading keeps its blank line
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text if text.endswith("\n") else text + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

"""Time our overview_page export against XProf's overview_page converter on the same profile.

usage: python bench/overview.py [LOGDIR] [--repeat N]

LOGDIR defaults to bench/_work/big (made with /work/shared/tools/gen/big_trace.py when missing:
~2M events, 2000 steps). Both sides start cold: XProf's converter runs on a fresh copy of the run
(/work/shared/tools/xprof_time.py, conversion alone); ours runs in a fresh process with an empty
cache dir, timing decode + analysis + JSON (comparable to XProf's figure) and, separately, the
whole `tputui export` process including interpreter start and imports. Prints the ratio (target
<= 0.25x). Best of N runs on each side, run alternately, since this machine is shared.
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

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text
t1 = time.perf_counter()
run = RunData(open_logdir(sys.argv[1]).runs[0], use_cache=False)
frame = run.frame()
t2 = time.perf_counter()
text = export_text(run, "overview_page", "json")
t3 = time.perf_counter()
doc = json.loads(text)
print(json.dumps({"import_s": t1 - t0, "decode_s": t2 - t1, "analysis_s": t3 - t2, "convert_s": t3 - t1,
                  "events": frame.num_events, "steps": len(doc["steps"]), "bytes": len(text),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def ensure_profile(logdir: pathlib.Path) -> None:
    if list(logdir.rglob("*.xplane.pb")):
        return
    print(f"making the big profile in {logdir} ...", flush=True)
    subprocess.run([ORACLE_PY, "big_trace.py", str(logdir)], cwd=TOOLS / "gen", check=True)


def ours(logdir: pathlib.Path) -> tuple[dict, float]:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        out = subprocess.run([DEV_PY, "-c", CHILD, str(logdir)], cwd=ROOT, env=env, check=True,
                             capture_output=True, text=True)
        inner = json.loads(out.stdout.strip().splitlines()[-1])
        t = time.perf_counter()
        subprocess.run([str(pathlib.Path(DEV_PY).parent / "tputui"), "export", str(logdir), "--tool", "overview_page",
                        "--format", "json", "-o", os.devnull], cwd=ROOT, env=env, check=True,
                       capture_output=True)
        whole = time.perf_counter() - t
    return inner, whole


def xprof(run_dir: pathlib.Path) -> float:
    out = subprocess.run([ORACLE_PY, str(TOOLS / "xprof_time.py"), str(run_dir), "overview_page"],
                         check=True, capture_output=True, text=True)
    m = re.search(r"overview_page\t([\d.]+)s", out.stdout)
    if not m:
        raise SystemExit(f"could not read XProf's time from: {out.stdout!r}")
    return float(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("logdir", nargs="?", default=str(ROOT / "bench" / "_work" / "big"))
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    logdir = pathlib.Path(a.logdir)
    ensure_profile(logdir)
    run_dir = next(logdir.rglob("*.xplane.pb")).parent
    best_ours, best_whole, best_xprof, inner = 1e9, 1e9, 1e9, {}
    for _ in range(a.repeat):
        got, whole = ours(logdir)
        if got["convert_s"] < best_ours:
            best_ours, inner = got["convert_s"], got
        best_whole = min(best_whole, whole)
        best_xprof = min(best_xprof, xprof(run_dir))
    size = next(logdir.rglob("*.xplane.pb")).stat().st_size / 1e6
    print(f"profile: {run_dir} ({size:.1f} MB, {inner['events']:,} events, {inner['steps']} steps shown)")
    print(f"XProf overview_page converter: {best_xprof:.2f} s")
    print(f"tputui decode + analysis + JSON: {best_ours:.2f} s (decode {inner['decode_s']:.2f} s, "
          f"analysis {inner['analysis_s']:.2f} s, peak RSS {inner['rss_mb']:.0f} MB)  "
          f"ratio {best_ours / best_xprof:.2f}x (target <= 0.25x)")
    print(f"tputui export, whole process (start + imports): {best_whole:.2f} s  ratio {best_whole / best_xprof:.2f}x")


if __name__ == "__main__":
    sys.exit(main())

"""gs:// open benchmark: a ~30 MB remote profile, cold and warm, against the local GCS emulator.

usage: python bench/gcs.py [--profile RUN_DIR] [--repeat N] [--no-write]

Uploads the profile's files (the .xplane.pb and whatever sits beside it, e.g. the .trace.json.gz
that we must not fetch) to an in-memory gcp-storage-emulator on 127.0.0.1, then times, each in a
fresh process (as a user's second `tputui gs://...` would be):
  - cold: list + download (parallel ranged GETs) + decode, with empty caches;
  - warm: list + the decoded-frame cache (download cache filled by the cold run);
  - warm bytes: list + the local download cache, decoding again (frame cache off);
  - the same cold download with one plain GET, and the local file decoded, for comparison.
The default profile is bench/_work/big (make it with
`cd ../shared/tools/gen && /opt/venvs/oracle/bin/python big_trace.py /work/main/bench/_work/big`;
never committed). Writes the "gcs" section of bench/RESULTS.md. The emulator serves one request at
a time, so parallel parts cannot beat one GET here; on real GCS they are what fills the link.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
sys.path.insert(0, str(ROOT / "tests"))

# Runs in a child: open the logdir, then the first host's frame; report each phase.
CHILD = r"""
import json, resource, sys, threading, time
from tputui.data import gcs
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

url, mode = sys.argv[1], sys.argv[2]
if mode == "single":  # one GET for the whole object, for comparison
    gcs.MIN_PART = gcs.MAX_PART = 1 << 40
spent = {"read": 0.0}
_read = gcs.read_bytes
def timed_read(*args, **kwargs):
    t = time.perf_counter()
    try:
        return _read(*args, **kwargs)
    finally:
        spent["read"] += time.perf_counter() - t
gcs.read_bytes = timed_read
t0 = time.perf_counter()
if url.startswith("gs://"):
    gcs.filesystem()  # import gcsfs and make the client: paid once per process
tc = time.perf_counter()
logdir = open_logdir(url)
t1 = time.perf_counter()
run = RunData(logdir.runs[0], use_cache=mode != "nocache")
frame = run.frame()
events = frame.events
t2 = time.perf_counter()
for th in threading.enumerate():
    if th.name == "tputui-cache-write":
        th.join()
print(json.dumps({"client": tc - t0, "list": t1 - tc, "read": spent["read"], "frame": t2 - t1, "total": t2 - t0,
                  "events": frame.num_events, "size": logdir.runs[0].hosts[0].size,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_child(target: str, mode: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, target, mode], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=900)
    if out.returncode:
        raise SystemExit(f"child failed ({mode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def best(runs: list[dict]) -> dict:
    return min(runs, key=lambda r: r["total"])


def main() -> None:
    from gcs_emulator import Emulator

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default=str(ROOT / "bench" / "_work" / "big"),
                    help="a logdir or run dir holding one <host>.xplane.pb (default: bench/_work/big)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    a = ap.parse_args()

    files = glob.glob(os.path.join(a.profile, "**", "*.xplane.pb"), recursive=True)
    if not files:
        raise SystemExit(f"no .xplane.pb under {a.profile} (see the usage for how to make one)")
    run_dir = os.path.dirname(files[0])
    work = tempfile.mkdtemp(prefix="tputui-bench-gcs-")
    emu = Emulator()
    try:
        emu.create_bucket("bench")
        prefix = f"logs/plugins/profile/{os.path.basename(run_dir)}"
        emu.upload_tree(run_dir, "bench", prefix)
        url = "gs://bench/logs"
        base = dict(os.environ, STORAGE_EMULATOR_HOST=emu.url)
        rows: dict[str, dict] = {}

        def fresh_env() -> dict:
            return dict(base, XDG_CACHE_HOME=tempfile.mkdtemp(dir=work))

        rows["cold: list + download + decode"] = best([run_child(url, "cache", fresh_env()) for _ in range(a.repeat)])
        warm_env = fresh_env()
        run_child(url, "cache", warm_env)  # fills both caches
        rows["warm: list + decoded-frame cache"] = best([run_child(url, "cache", warm_env) for _ in range(a.repeat)])
        rows["warm bytes: list + download cache, decode again"] = best(
            [run_child(url, "nocache", warm_env) for _ in range(a.repeat)])
        rows["cold, one plain GET instead of ranged parts"] = best(
            [run_child(url, "single", fresh_env()) for _ in range(a.repeat)])
        rows["local file, decode (no cache)"] = best(
            [run_child(run_dir, "nocache", fresh_env()) for _ in range(a.repeat)])
    finally:
        emu.stop()
        shutil.rmtree(work, ignore_errors=True)

    first = next(iter(rows.values()))
    size_mb, events = first["size"] / 1e6, first["events"]
    print(f"\nprofile: {size_mb:.1f} MB, {events:,} events, emulator on 127.0.0.1, {os.cpu_count()} cores")
    for name, r in rows.items():
        print(f"  {name:<50} total {r['total']:6.3f} s  (client {r['client']:.3f}, list {r['list']:.3f}, "
              f"bytes {r['read']:.3f}, "
              f"open frame {r['frame']:.3f})  RSS {r['rss_mb']:.0f} MB")
    if not a.no_write:
        write_results(size_mb, events, rows)


def write_results(size_mb: float, events: int, rows: dict) -> None:
    lines = [f"## gcs (bench/gcs.py, {time.strftime('%Y-%m-%d')})", "",
             f"A {size_mb:.1f} MB profile ({events:,} events, ../shared/tools/gen/big_trace.py) opened as "
             f"gs://bench/logs from gcp-storage-emulator (in memory, 127.0.0.1, one request at a time), "
             f"each run in a fresh process, {os.cpu_count()} cores, best of the runs. \"bytes\" is the "
             "download (or download-cache read); \"open frame\" includes it plus decoding; \"client\" is "
             "importing gcsfs and making the client. The emulator serves one request at a time (its "
             "listen backlog raised from 5, see tests/gcs_emulator.py), so 8 parallel ranged parts can only "
             "match one GET here; on GCS each stream is latency-bound and the parts run side by side. "
             "The warm open makes one list request and no download.", "",
             "| measurement | total s | client s | list s | bytes s | open frame s | download MB/s | peak RSS MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in rows.items():
        rate = f"{r['size'] / 1e6 / r['read']:.0f}" if r["read"] > 0.05 else "-"
        lines.append(f"| {name} | {r['total']:.3f} | {r['client']:.3f} | {r['list']:.3f} | {r['read']:.3f} | {r['frame']:.3f} "
                     f"| {rate} | {r['rss_mb']:.0f} |")
    section = "\n".join(lines) + "\n"
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\nWritten by the scripts in bench/.\n"
    pattern = re.compile(r"## gcs \(bench/gcs\.py.*?(?=\n## |\Z)", re.S)
    text = pattern.sub(section.rstrip("\n"), text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text if text.endswith("\n") else text + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

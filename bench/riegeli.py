"""Opening a big .xplane.riegeli run vs the same content as .xplane.pb.

usage: python bench/riegeli.py [--source PB] [--mb 3000] [--compression none|brotli|zstd] [--pb-mb 200]
                               [--workdir DIR] [--keep]

Builds, in a temp dir (never committed, deleted afterwards unless --keep):
  - RIEGELI: one host file of about --mb MB, one record per copy of the source profile (a real
    fixture), each copy's lines moved after the previous copy's, as XLA's profiler writes a long
    capture chunk by chunk (records merge into the same planes and lines);
  - PB: the same copies merged into one .xplane.pb of about --pb-mb MB (a protobuf message is
    capped at 2 GB, so the per-MB rate is measured on a smaller file of the same content).
Then opens each in a fresh process (decode + merge, no cache: what `tputui LOGDIR` does first) and
reports wall time, peak RSS, and seconds per MB. Targets (issue #14): peak RSS <= 2.5 GB for the
riegeli run and <= 1.3x the pb's time per MB. Writes the "riegeli" section of bench/RESULTS.md.
Run it under `flock /tmp/bigjob.lock` on a shared machine.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "RESULTS.md"
DEFAULT_SOURCE = next((ROOT / "tests" / "fixtures" / "profiles" / "tpu_v6e_inference").rglob("*.xplane.pb"))

CHILD = r"""
import json, resource, sys, time
from tputui.data.logdir import open_logdir
from tputui.data.cache import load_frame
hf = open_logdir(sys.argv[1]).runs[0].hosts[0]
t = time.perf_counter()
frame = load_frame(hf, use_cache=False)
n = frame.num_events
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "events": n, "bytes": hf.size,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def copies(source: pathlib.Path):
    """(template XSpace, span in ns): copy c has every line moved by c * span."""
    from tputui.proto import xplane_pb2

    space = xplane_pb2.XSpace.FromString(source.read_bytes())
    end = max((ln.timestamp_ns + max((e.offset_ps + e.duration_ps for e in ln.events), default=0) // 1000
               for p in space.planes for ln in p.lines), default=0)
    start = min((ln.timestamp_ns for p in space.planes for ln in p.lines), default=0)
    return space, end - start + 1_000_000


def shifted(space, c: int, span: int) -> bytes:
    for p in space.planes:
        for ln in p.lines:
            ln.timestamp_ns += c * span
    data = space.SerializeToString()
    for p in space.planes:
        for ln in p.lines:
            ln.timestamp_ns -= c * span
    return data


def build_riegeli(path: pathlib.Path, source: pathlib.Path, mb: float, compression: str) -> int:
    from tputui.data.riegeli_writer import RecordWriter

    space, span = copies(source)
    n = 0
    with open(path, "wb") as f:
        w = RecordWriter(f, compression)
        while w.pos < mb * 1e6:
            w.write_chunk([shifted(space, n, span)])
            n += 1
        w.pad_to_block()
    return n


def build_pb(path: pathlib.Path, source: pathlib.Path, mb: float) -> int:
    """The same copies as one XSpace: every copy's events appended to the first copy's lines."""
    from tputui.proto import xplane_pb2

    space, span = copies(source)
    out = xplane_pb2.XSpace()
    out.CopyFrom(space)
    n = 1
    base = [[list(ln.events) for ln in p.lines] for p in space.planes]
    while out.ByteSize() < mb * 1e6:
        for p, lines in zip(out.planes, base):
            for ln, events in zip(p.lines, lines):
                for e in events:
                    x = ln.events.add()
                    x.CopyFrom(e)
                    if x.WhichOneof("data") != "num_occurrences":
                        x.offset_ps += n * span * 1000
        n += 1
    path.write_bytes(out.SerializeToString())
    return n


def measure(logdir: pathlib.Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", CHILD, str(logdir)], capture_output=True, text=True, env=env,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_results(section: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    head = "## riegeli (bench/riegeli.py"
    if head in text:
        before, _, rest = text.partition(head)
        nxt = rest.find("\n## ")
        text = before + section + (rest[nxt + 1:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=pathlib.Path, default=DEFAULT_SOURCE)
    ap.add_argument("--mb", type=float, default=3000)
    ap.add_argument("--pb-mb", type=float, default=200)
    ap.add_argument("--compression", choices=("none", "brotli", "zstd"), default="none")
    ap.add_argument("--workdir", type=pathlib.Path)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-write", action="store_true", help="print only; leave bench/RESULTS.md alone")
    a = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="tputui-riegeli-", dir=a.workdir))
    try:
        rdir = work / "r" / "plugins" / "profile" / "2026_01_01_00_00_00"
        pdir = work / "p" / "plugins" / "profile" / "2026_01_01_00_00_00"
        rdir.mkdir(parents=True)
        pdir.mkdir(parents=True)
        t = time.perf_counter()
        records = build_riegeli(rdir / "host.xplane.riegeli", a.source, a.mb, a.compression)
        pb_copies = build_pb(pdir / "host.xplane.pb", a.source, a.pb_mb)
        print(f"built in {time.perf_counter() - t:.0f} s: {records} records, pb of {pb_copies} copies", flush=True)
        pb = measure(work / "p")
        print("pb", pb, flush=True)
        rg = measure(work / "r")
        print("riegeli", rg, flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    per_mb = {k: v["seconds"] / (v["bytes"] / 1e6) for k, v in (("pb", pb), ("riegeli", rg))}
    ratio = per_mb["riegeli"] / per_mb["pb"]
    section = (
        f"## riegeli (bench/riegeli.py, {time.strftime('%Y-%m-%d')}, issue #14)\n\n"
        f"Source: {a.source.relative_to(ROOT) if a.source.is_relative_to(ROOT) else a.source} tiled "
        f"({records} records, compression {a.compression}, each copy's lines after the previous one's; "
        f"the records merge into the same planes and lines). Fresh process per open, no cache, "
        f"{os.cpu_count()} cores ({platform.machine()}), a machine shared with other jobs.\n\n"
        "| file | MB | events | open s | s per MB | peak RSS MB |\n|---|---:|---:|---:|---:|---:|\n"
        f"| .xplane.pb (same content, one message) | {pb['bytes'] / 1e6:.0f} | {pb['events']:,} | "
        f"{pb['seconds']:.2f} | {per_mb['pb']:.4f} | {pb['rss_mb']:.0f} |\n"
        f"| .xplane.riegeli | {rg['bytes'] / 1e6:.0f} | {rg['events']:,} | {rg['seconds']:.2f} | "
        f"{per_mb['riegeli']:.4f} | {rg['rss_mb']:.0f} |\n\n"
        f"Time per MB, riegeli / pb: {ratio:.2f}x (target <= 1.3x); riegeli peak RSS "
        f"{rg['rss_mb'] / 1024:.2f} GB (target <= 2.5 GB).\n")
    print(section)
    if not a.no_write:
        write_results(section)


if __name__ == "__main__":
    main()

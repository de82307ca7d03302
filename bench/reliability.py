"""Reliability costs: what bad input costs now, and what the checks cost good input.

usage: python bench/reliability.py [--profile XPLANE_PB] [--repeat N] [--no-write]

Each bad-input case runs `tputui export --tool overview_page` (or `--list`) in a fresh process
and reports seconds, peak RSS and the exit code:
  - a logdir with two symlinks to itself (`ln -s . a; ln -s . b`; it never returned before),
  - a 3 GB sparse .xplane.pb (refused from its size; it cost the file's size in RSS before),
  - a 1.9 GB sparse file whose first field claims 1.9 GB and holds zeros (refused at the first
    bad key; read whole before),
  - small .xplane.riegeli decompression bombs (tests/helpers/riegeli_bombs.py: a brotli or zstd
    chunk of 1 GB of records, one 4 GB record, a chunk claiming 1 MiB that expands to 1 GiB;
    refused by what the chunk claims, decompression stopped at its declared size).
For good input, on --profile (default: the largest fixture): the cache entry's checks (manifest,
then dtypes / lengths / index ranges) against the whole warm open, and the C decoder's speed.
Writes the "reliability" section of bench/RESULTS.md.
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
RESULTS = ROOT / "bench" / "RESULTS.md"
FIXTURE = max((ROOT / "tests" / "fixtures" / "profiles").rglob("*.xplane.pb"), key=lambda p: p.stat().st_size)

# Child: time and peak RSS of one CLI command (the CLI's own exit code is reported, not raised).
CLI = r"""
import json, resource, sys, time, contextlib, io
t = time.perf_counter()
from tputui.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
    code = main(sys.argv[1:])
print(json.dumps({"s": time.perf_counter() - t, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "code": code, "err": err.getvalue().strip()}))
"""

# Child: the warm open of one profile, split into the cache entry's checks and the rest.
WARM = r"""
import json, os, sys, threading, time
from tputui.data import cache_entry, storage, wire
from tputui.data.cache import cache_key, load_frame
from tputui.data.logdir import open_logdir
from tputui.data.raw import validate
hf = open_logdir(sys.argv[1]).runs[0].hosts[0]
load_frame(hf)
for th in threading.enumerate():
    if th.name == "tputui-cache-write":
        th.join()
entry = os.path.join(storage.cache_root(), "frames", cache_key(hf, None))
best = {"warm": 1e9, "manifest": 1e9, "validate": 1e9, "decode": 1e9}
data = bytes(storage.read(hf))
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); load_frame(hf); best["warm"] = min(best["warm"], time.perf_counter() - t)
    t = time.perf_counter(); raw = cache_entry._load_checked(entry)
    best["manifest"] = min(best["manifest"], time.perf_counter() - t)
    t = time.perf_counter(); validate(raw); best["validate"] = min(best["validate"], time.perf_counter() - t)
    t = time.perf_counter(); wire.decode(data); best["decode"] = min(best["decode"], time.perf_counter() - t)
print(json.dumps({**best, "events": len(raw.event_line), "mb": len(data) / 1e6}))
"""


def child(code: str, *args: str, cache: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": cache}
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.splitlines()[-1])


def bad_inputs(tmp: pathlib.Path, repeat: int) -> dict[str, dict]:
    loop = tmp / "loop" / "plugins" / "profile" / "r"
    loop.mkdir(parents=True)
    (loop / "vm.xplane.pb").write_bytes(FIXTURE.read_bytes())
    (tmp / "loop" / "a").symlink_to(".")
    (tmp / "loop" / "b").symlink_to(".")
    cases = {"logdir with `ln -s . a; ln -s . b`: export --list": ["export", str(tmp / "loop"), "--list", "--no-cache"]}
    for name, head, size in [("3 GB sparse .xplane.pb: export --tool overview_page", b"", 3 << 30),
                             ("1.9 GB sparse, first field claims 1.9 GB: export --tool overview_page",
                              b"\x0a\x80\x80\x80\x80\x07", 1900 << 20)]:
        run = tmp / name.split(":")[0].replace(" ", "_") / "plugins" / "profile" / "r"
        run.mkdir(parents=True)
        with open(run / "h.xplane.pb", "wb") as f:
            f.write(head)
            f.truncate(size)  # sparse: no disk used
        cases[name] = ["export", str(run.parents[2]), "--tool", "overview_page", "--no-cache"]
    sys.path.insert(0, str(ROOT / "tests" / "helpers"))
    from riegeli_bombs import BOMBS, write_bomb

    for bomb in BOMBS:
        path = write_bomb(tmp / bomb / "plugins" / "profile" / "r" / "vm.xplane.riegeli", bomb)
        name = f"riegeli bomb {bomb} ({path.stat().st_size / 1e3:.0f} KB): export --tool overview_page"
        cases[name] = ["export", str(path.parents[3]), "--tool", "overview_page", "--no-cache"]
    out = {}
    for name, argv in cases.items():
        runs = [child(CLI, *argv, cache=str(tmp / "cache")) for _ in range(repeat)]
        out[name] = min(runs, key=lambda r: r["s"])
        out[name]["err"] = out[name]["err"].replace(str(tmp), "$TMP")
        print(f"{name}: {out[name]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default=str(FIXTURE), help="an .xplane.pb for the good-input costs")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tputui-reliability-") as tmp:
        bad = bad_inputs(pathlib.Path(tmp), a.repeat)
        good = child(WARM, a.profile, str(max(a.repeat, 5)), cache=os.path.join(tmp, "cache-good"))
    print(f"good input: {good}")
    if not a.no_write:
        write_results(bad, good, a.profile)


def write_results(bad: dict, good: dict, profile: str) -> None:
    lines = [f"## reliability (bench/reliability.py, {time.strftime('%Y-%m-%d')})", "",
             f"{os.cpu_count()} cores, each command in a fresh process (interpreter start and imports included), "
             "best of the runs.", "",
             "| bad input | seconds | peak RSS MB | exit code | stderr |", "|---|---:|---:|---:|---|"]
    lines += [f"| {name} | {r['s']:.2f} | {r['rss_mb']:.0f} | {r['code']} | {r['err'].replace('|', '/')} |"
              for name, r in bad.items()]
    name = os.path.relpath(profile, ROOT) if profile.startswith(str(ROOT)) else os.path.basename(profile)
    lines += ["", f"Good input: {name} ({good['mb']:.1f} MB, {good['events']:,} events). The cache entry's checks "
              f"(manifest, sizes and CRC-32s, entry_seal: every byte up to 64 MiB, big files sampled above: "
              f"{good['manifest'] * 1000:.1f} ms; dtypes, lengths and "
              f"index ranges: "
              f"{good['validate'] * 1000:.1f} ms) of a {good['warm'] * 1000:.0f} ms warm open; the C decoder "
              f"(protobuf's semantics, UTF-8 checked): {good['decode'] * 1000:.0f} ms, "
              f"{good['mb'] / good['decode']:.0f} MB/s."]
    section = "\n".join(lines) + "\n"
    text = RESULTS.read_text()
    pattern = re.compile(r"## reliability \(bench/reliability\.py.*?(?=\n## |\Z)", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

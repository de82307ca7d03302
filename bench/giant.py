"""Giant hosts (issue #28): every tool's export cold and warm, `--jobs 1` against the default,
peak RSS of the process tree, XProf's converter under a memory cap, and the trace viewer's first
frame and settled time in the app.

usage: python bench/giant.py LOGDIR [LOGDIR ...] [--quick] [--repeat N] [--tools a,b]
                             [--cap-gb 6] [--xprof-cap-gb 15] [--xprof-repeat N] [--no-xprof]
                             [--no-jobs] [--no-frame] [--timeout S] [--json FILE] [--md FILE] [--write]

Each LOGDIR is measured as it is (nothing is built here): the 1.67 GB host of
`tpu_scaled.py SRC DST 2000` (../shared/tools/gen), a riegeli run (bench/riegeli.py --keep, or
`scripts/to_riegeli.py --tile`), the x100 case. With several, each later one's cold times are also
given as a multiple of the first's (the issue's "<= 10x the x100 case's time in the same run":
pass the x100 logdir first). Test it with --quick on the small profiles (x1, x100) only.

Each step is a fresh process from a settled machine (bench/riegeli.py's settle(): dirty pages
written back, the page cache dropped where allowed, the step's input read once; then our
interpreter's libraries imported once, untimed, as XProf's figure leaves out its imports),
sampled every 50 ms for the RSS of its whole process tree (workers included) and stopped past
--cap-gb (tputui) or --xprof-cap-gb (XProf: reported as "over N GB"). Steps of logdirs over 500 MB and
every XProf run take /tmp/bigjob.lock (bench/scale.py's big_lock), one at a time.

  - every tool with data (`tputui export --list`): `tputui export --tool T --format json`, the
    whole process; cold = empty cache dir, warm = a second process on that cache; with the
    default --jobs and with `--jobs 1`;
  - XProf 2.24's converter on the same run: the conversion alone (../shared/tools/xprof_time.py
    for .xplane.pb runs, the same steps inline for .xplane.riegeli), peak RSS of its process;
  - the trace viewer in the app, headless at 200x60 (bench/scale.py's Pilot child): from process
    spawn to the first drawn timeline frame, and to the settled view (its final index built and
    saved), cold then warm.
Seconds as min / median of --repeat runs (default 3; --quick 1); the ratio to XProf by the
minima, the medians and paired (the median of each repeat's ours / XProf, run back to back);
steal % = the hypervisor's share of the machine's CPU during the step (it lengthens wall and CPU
times alike). Prints a markdown section (also to --md FILE; --write puts it in
bench/RESULTS.md as the "giant" section) and keeps every figure in --json FILE as measured.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import signal
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from riegeli import env_with_cache, run_child, settle  # noqa: E402 (settled steps, tree RSS, steal)
from scale import FIRST_FRAME_CHILD, XPROF_TOOL, big_lock, compile_bytecode  # noqa: E402

PY = sys.executable
ORACLE_PY = os.environ.get("XPROF_PYTHON", "/work/xvenv/bin/python")  # a python with xprof
SHARED = ROOT.parent / "shared" if (ROOT.parent / "shared").is_dir() else pathlib.Path("/work/shared")
RESULTS = ROOT / "bench" / "RESULTS.md"
BIG_MB = 500  # logdirs past this take the machine's big-job lock for every step
SIZE = (200, 60)  # FIRST_FRAME_CHILD's terminal

# XProf on a riegeli run: xprof_time.py's steps (a cold copy, the conversion alone timed) for the
# .xplane.riegeli files it does not glob.
XPROF_RIEGELI_CHILD = r"""
import glob, json, os, shutil, sys, tempfile, time
from xprof.convert import raw_to_tool_data as rtd
run_dir, tool = sys.argv[1], sys.argv[2]
params = {"use_saved_result": False}
if tool == "trace_viewer@":
    params["trace_viewer_options"] = {"resolution": 8000}
with tempfile.TemporaryDirectory() as tmp:
    dst = os.path.join(tmp, "run")
    shutil.copytree(run_dir, dst)
    paths = sorted(glob.glob(os.path.join(dst, "*.xplane.riegeli")))
    t = time.perf_counter()
    data, _ = rtd.xspace_to_tool_data(paths, tool, params)
    dt = time.perf_counter() - t
print(f"{tool}\t{dt:.3f}s\t{len(data) if data else 0}B")
"""


# --- one logdir --------------------------------------------------------------------------------
def host_files(logdir: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for pat in ("*.xplane.pb", "*.xplane.riegeli") for p in logdir.rglob(pat))


def facts(logdir: pathlib.Path) -> dict:
    files = host_files(logdir)
    if not files:
        raise SystemExit(f"{logdir}: no .xplane.pb or .xplane.riegeli file")
    kinds = sorted({"riegeli" if f.name.endswith(".riegeli") else "pb" for f in files})
    return {"files": len(files), "mb": sum(f.stat().st_size for f in files) / 1e6, "formats": kinds,
            "run_dir": str(files[0].parent)}


def tools_with_data(logdir: pathlib.Path, cap_mb: float, big: bool) -> list[str]:
    with tempfile.TemporaryDirectory() as cache, big_lock(big):
        r = run_child([PY, "-m", "tputui.cli", "export", str(logdir), "--list"], env_with_cache(cache), cap_mb)
    if r["capped"]:
        raise SystemExit(f"{logdir}: `tputui export --list` passed the {cap_mb / 1024:.0f} GB cap")
    return json.loads(r["stdout"])["runs"][0]["tools"]


def settled(logdir: pathlib.Path) -> None:
    """settle() (no dirty pages, the page cache dropped where allowed, the input read once), then
    our interpreter's libraries read back by an untimed import: a dropped page cache would
    otherwise put reading them from disk on every tputui step, while XProf's figure is its
    conversion alone, imports excluded."""
    settle(logdir)
    run_child([PY, "-c", "import tputui.cli, tputui.app, polars, numpy"], env_with_cache(tempfile.gettempdir()),
              4096)


def _step(cmd: list[str], env: dict, cap_mb: float, timeout: float) -> dict:
    """One measured process: run_child's figures, or {"failed": its first error line}."""
    try:
        r = run_child(cmd, env, cap_mb, timeout)
    except SystemExit as e:
        lines = [x for x in str(e).splitlines() if x.strip()]
        return {"failed": (lines[-1] if lines else str(e))[:200]}
    return r


def time_export(logdir: pathlib.Path, tool: str, jobs: str | None, cap_mb: float, big: bool, timeout: float) -> dict:
    """Cold (empty cache dir, settled machine) then warm (the same cache dir, a second process)."""
    cmd = [PY, "-m", "tputui.cli", "export", str(logdir), "--tool", tool, "--format", "json", "-o", os.devnull]
    if jobs:
        cmd += ["--jobs", jobs]
    out = {}
    with tempfile.TemporaryDirectory() as cache, big_lock(big):
        settled(logdir)
        out["cold"] = _step(cmd, env_with_cache(cache), cap_mb, timeout)
        if ok(out["cold"]):
            os.sync()  # the cold run's cache entries written back: the warm run starts clean
            out["warm"] = _step(cmd, env_with_cache(cache), cap_mb, timeout)
    for r in out.values():
        r.pop("stdout", None)
    return out


def time_xprof(logdir: pathlib.Path, run_dir: str, tool: str, riegeli: bool, cap_mb: float, timeout: float) -> dict | None:
    xtool = XPROF_TOOL.get(tool, tool)
    if xtool is None:
        return None
    cmd = ([ORACLE_PY, "-c", XPROF_RIEGELI_CHILD, run_dir, xtool] if riegeli
           else [ORACLE_PY, str(SHARED / "tools" / "xprof_time.py"), run_dir, xtool])
    with big_lock(True):  # XProf's converter takes several GB well before the giant sizes
        settled(logdir)
        r = _step(cmd, dict(os.environ), cap_mb, timeout)
    if ok(r):
        m = re.search(r"\t([\d.]+)s\t", r["stdout"])
        if not m:
            r = {"failed": f"no time in XProf's output: {r['stdout'][-200:]!r}"}
        else:
            r["s"] = float(m.group(1))
    r.pop("stdout", None)
    return r


def time_first_frame(logdir: pathlib.Path, cap_mb: float, big: bool, timeout: float) -> dict:
    """The trace viewer opened cold, then warm: first drawn frame and settled view, from spawn."""
    out = {}
    with tempfile.TemporaryDirectory() as cache, big_lock(big):
        settled(logdir)
        for kind in ("cold", "warm"):
            r = _step([PY, "-c", FIRST_FRAME_CHILD, str(logdir), repr(time.time())], env_with_cache(cache),
                      cap_mb, timeout)
            if ok(r):
                got = json.loads(r.pop("stdout").strip().splitlines()[-1])
                r.update(first_frame=got["first_frame"], settled=got["complete"], events=got["events"],
                         from_saved=got["warm_index"])
            out[kind] = r
            if not ok(r):
                break
            os.sync()
    return out


def ok(r: dict | None) -> bool:
    return bool(r) and "failed" not in r and not r.get("capped")


# --- the report --------------------------------------------------------------------------------
def pair(xs: list[float], fmt: str = "{:.2f}") -> str:
    if not xs:
        return "-"
    return fmt.format(min(xs)) if len(xs) == 1 else f"{fmt.format(min(xs))} / {fmt.format(statistics.median(xs))}"


def stopped(r: dict, cap_mb: float) -> str:
    """Why a step has no time: its failure, or where it was stopped."""
    if "failed" in r:
        return f"failed: {r['failed']}"
    if r["rss"] > cap_mb:
        return f"over {cap_mb / 1024:g} GB (killed after {r['wall']:.0f} s)"
    return f"stopped after {r['wall']:.0f} s"


def times(runs: list[dict], key: str = "wall") -> list[float]:
    return [r[key] for r in runs if ok(r)]


def cell(runs: list[dict], cap_mb: float, key: str = "wall") -> str:
    xs = times(runs, key)
    if xs:
        return pair(xs)
    return stopped(runs[0], cap_mb) if runs else "-"


def ratio(ours: list[dict], theirs: list[dict]) -> str:
    """ours / XProf by the minima; with repeats also by the medians and paired."""
    a, b = times(ours), times(theirs, "s")
    stopped_at = [r["wall"] for r in theirs if r.get("capped")]
    if a and not b and stopped_at:  # XProf was stopped: its conversion would have taken longer
        return f"< ~{min(a) / max(stopped_at):.2f}x (XProf stopped; its wall time incl. imports)"
    if not a or not b:
        return "-"
    by_min = min(a) / min(b)
    pairs = [x["wall"] / y["s"] for x, y in zip(ours, theirs) if ok(x) and ok(y)]
    if len(a) == 1 or len(b) == 1:
        return f"{by_min:.2f}x"
    return f"{by_min:.2f}x / {statistics.median(a) / statistics.median(b):.2f}x / {statistics.median(pairs):.2f}x"


def steal(runs: list[dict]) -> str:
    s = [100 * r["steal"] for r in runs if "steal" in r]
    return f"{min(s):.0f}-{max(s):.0f}" if s else "-"


def peak(runs: list[dict]) -> str:
    rs = [r["tree_rss"] for r in runs if "tree_rss" in r]
    return f"{max(rs):.0f}" if rs else "-"


def render(results: dict, args) -> str:
    cap, xcap = args.cap_gb * 1024, args.xprof_cap_gb * 1024
    intro = (
        f"`{' '.join(['python', 'bench/giant.py', *sys.argv[1:]])}` on {os.cpu_count()} shared cores "
        f"({platform.machine()}); load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end. "
        "Each step a fresh process after a settle (dirty pages written back, the page cache dropped where "
        "allowed, the input read once, the libraries imported once untimed). tputui: the whole "
        "`tputui export --tool T --format json` process; cold = empty cache dir, warm = a second process on "
        "it; default `--jobs` and `--jobs 1`. Peak RSS (MiB) of the process tree, workers included (sampled "
        "every 50 ms; at least the largest process's own peak). XProf: its converter alone (xprof_time.py's "
        "steps; CPU s: its whole process, ~0.1 s of imports and the run's copy included), peak RSS of its "
        f"process, stopped past {args.xprof_cap_gb:g} GB (tputui past "
        f"{args.cap_gb:g} GB). Seconds as min / median of {args.repeat} run(s) (XProf: {args.xprof_repeat}); "
        "ratio = tputui cold / XProf by the minima / medians / paired (each repeat's pair run back to back). "
        "steal % = the hypervisor's share of the machine's CPU during the steps (it lengthens wall and CPU "
        "times alike). Targets (issue #28): 1.67 GB .pb every op tool <= 15 s cold, <= 0.5 s warm, peak "
        "RSS <= 2 GB (held to 2,048 MiB here); trace viewer first frame <= 4 s cold, <= 1 s warm; 3 GB "
        "riegeli every tool finishes under 2.5 GB; x100 every tool <= 0.3x XProf.")
    lines = [f"## giant (bench/giant.py, {time.strftime('%Y-%m-%d')}, issue #28)", "", intro, ""]
    first = next(iter(results.values()), None)
    for name, r in results.items():
        f = r["facts"]
        lines += [f"### {name}: {f['files']} host file(s), {f['mb']:.1f} MB ({', '.join(f['formats'])})", ""]
        vs_first = r is not first and first is not None
        head = ("| tool | cold s | cold CPU s | warm s | cold s, --jobs 1 | warm s, --jobs 1 | peak RSS MiB "
                "cold / warm / --jobs 1 | XProf s | XProf CPU s | XProf peak RSS MiB | tputui / XProf |"
                + (" cold / first logdir's |" if vs_first else "") + " steal % |")
        lines += [head, "|---|" + "---:|" * (head.count("|") - 2)]
        for tool, t in r["tools"].items():
            d, j = t["default"], t["jobs1"]
            cold, warm = [x["cold"] for x in d], [x["warm"] for x in d if "warm" in x]
            jcold, jwarm = [x["cold"] for x in j], [x["warm"] for x in j if "warm" in x]
            x = t["xprof"]
            row = (f"| {tool} | {cell(cold, cap)} | {cell(cold, cap, 'cpu')} | {cell(warm, cap)} | "
                   f"{cell(jcold, cap)} | {cell(jwarm, cap)} | {peak(cold)} / {peak(warm)} / {peak(jcold + jwarm)} | "
                   f"{cell(x, xcap, 's') if x else '-'} | {cell(x, xcap, 'cpu') if x else '-'} | {peak(x)} | "
                   f"{ratio(cold, x)} |")
            if vs_first:
                base = first["tools"].get(tool)
                a, b = times(cold), times([c["cold"] for c in base["default"]]) if base else []
                row += f" {min(a) / min(b):.1f}x |" if a and b else " - |"
            lines.append(row + f" {steal(cold + warm + jcold + jwarm + x)} |")
        fr = r["frame"]
        if fr:
            cold, warm = [x["cold"] for x in fr], [x["warm"] for x in fr if "warm" in x]
            ev = next((x["events"] for x in cold + warm if ok(x)), 0)
            lines += ["", f"Trace viewer in the app ({ev:,} events), headless at {SIZE[0]}x{SIZE[1]}, from process "
                      f"spawn: first frame cold {cell(cold, cap, 'first_frame')} s, settled (final index built and "
                      f"saved) {cell(cold, cap, 'settled')} s; warm first frame {cell(warm, cap, 'first_frame')} s, "
                      f"settled {cell(warm, cap, 'settled')} s (from the saved index: "
                      f"{all(x.get('from_saved') for x in warm if ok(x)) if warm else '-'}); peak RSS of the tree "
                      f"cold / warm {peak(cold)} / {peak(warm)} MiB; steal {steal(cold + warm)} %."]
        lines.append("")
    return "\n".join(lines)


def write_results(section: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(r"## giant \(bench/giant\.py.*?(?=\n## |\Z)", re.S)
    body = section.rstrip("\n")
    text = pattern.sub(lambda _: body, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + body
    RESULTS.write_text(text if text.endswith("\n") else text + "\n")


# --- the run -----------------------------------------------------------------------------------
def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `kill`: unwind, so children are stopped too
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logdirs", nargs="+", type=pathlib.Path)
    ap.add_argument("--quick", action="store_true", help="one repeat of everything (the default is 3)")
    ap.add_argument("--repeat", type=int)
    ap.add_argument("--xprof-repeat", type=int, help="XProf runs per tool (default: --repeat)")
    ap.add_argument("--tools", help="only these tools (comma-separated; default: every tool with data)")
    ap.add_argument("--cap-gb", type=float, default=6.0, help="stop a tputui step past this RSS (GB)")
    ap.add_argument("--xprof-cap-gb", type=float, default=15.0, help="stop XProf past this RSS (GB)")
    ap.add_argument("--timeout", type=float, default=1800, help="stop any step after this many seconds")
    ap.add_argument("--no-xprof", action="store_true")
    ap.add_argument("--no-jobs", action="store_true", help="skip the --jobs 1 runs")
    ap.add_argument("--no-frame", action="store_true", help="skip the trace viewer in the app")
    ap.add_argument("--json", type=pathlib.Path, help="keep every figure here as it is measured")
    ap.add_argument("--md", type=pathlib.Path, help="write the markdown section here too")
    ap.add_argument("--write", action="store_true", help="put the section in bench/RESULTS.md")
    a = ap.parse_args()
    a.repeat = a.repeat or (1 if a.quick else 3)
    a.xprof_repeat = min(a.xprof_repeat or a.repeat, a.repeat)
    cap, xcap = a.cap_gb * 1024, a.xprof_cap_gb * 1024
    compile_bytecode()
    kept = a.json or pathlib.Path(tempfile.gettempdir()) / f"tputui-giant-{os.getpid()}.json"
    results: dict[str, dict] = {}

    def keep() -> None:
        kept.write_text(json.dumps(results, indent=1))

    for logdir in a.logdirs:
        logdir = logdir.resolve()
        f = facts(logdir)
        big = f["mb"] > BIG_MB
        tools = tools_with_data(logdir, cap, big)
        if a.tools:
            tools = [t for t in tools if t in a.tools.split(",")]
        r = results[str(logdir)] = {"facts": f, "tools": {}, "frame": []}
        print(f"\n== {logdir}: {f['files']} file(s), {f['mb']:.1f} MB; tools: {', '.join(tools)}", flush=True)
        for i in range(a.repeat):  # the sides alternate within each repeat: the machine is shared
            for tool in tools:
                t = r["tools"].setdefault(tool, {"default": [], "jobs1": [], "xprof": []})
                t["default"].append(time_export(logdir, tool, None, cap, big, a.timeout))
                if not a.no_jobs:
                    t["jobs1"].append(time_export(logdir, tool, "1", cap, big, a.timeout))
                if not a.no_xprof and i < a.xprof_repeat:
                    x = time_xprof(logdir, f["run_dir"], tool, "riegeli" in f["formats"], xcap, a.timeout)
                    if x is not None:
                        t["xprof"].append(x)
                d = t["default"][-1]
                print(f"  {tool}: cold {d['cold'].get('wall', float('nan')):.2f} s "
                      f"({d['cold'].get('tree_rss', 0):.0f} MiB), warm {d.get('warm', {}).get('wall', float('nan')):.2f} s"
                      + (f", --jobs 1 cold {t['jobs1'][-1]['cold'].get('wall', float('nan')):.2f} s" if t["jobs1"] else "")
                      + (f"; XProf {t['xprof'][-1].get('s', float('nan')):.2f} s "
                         f"({t['xprof'][-1].get('tree_rss', 0):.0f} MiB)" if t["xprof"] and i < a.xprof_repeat else ""),
                      flush=True)
                keep()
            if "trace_viewer" in tools and not a.no_frame:
                fr = time_first_frame(logdir, cap, big, a.timeout)
                r["frame"].append(fr)
                c = fr["cold"]
                print(f"  trace viewer: first frame cold {c.get('first_frame', float('nan')):.2f} s, settled "
                      f"{c.get('settled', float('nan')):.2f} s; warm {fr.get('warm', {}).get('first_frame', float('nan')):.2f} s",
                      flush=True)
                keep()
    section = render(results, a)
    print("\n" + section)
    print(f"(every figure: {kept})")
    if a.md:
        a.md.write_text(section)
    if a.write:
        write_results(section)


if __name__ == "__main__":
    main()

"""Time our graph viewer (long_txt of every module, and one neighbourhood) against XProf's converter.

usage: python bench/graph_viewer.py [LOGDIR] [--repeat N]   (default: tests/fixtures/profiles/jax_mlp)

Both sides start cold in a fresh process. XProf (run with XPROF_PYTHON, default
/work/xvenv/bin/python) first lists the tools, which writes one `.hlo_proto.pb` per module (not
timed; its graph viewer reads those files), then converts `long_txt` for every module (timed).
Ours decodes the host file's `/host:metadata` plane and prints every module (timed from the
decode on, imports excluded). Prints both and the ratio; best of N runs each, alternating.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
ORACLE_PY = os.environ.get("XPROF_PYTHON", "/work/xvenv/bin/python")

OURS = r"""
import json, sys, time
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.analysis.hlo_modules import hlo_modules
from tputui.analysis.hlo_text import module_text
t = time.perf_counter()
run = RunData(open_logdir(sys.argv[1]).runs[0], use_cache=False)
texts = [module_text(m.parse()) for m in hlo_modules(run)]
print(json.dumps({"seconds": time.perf_counter() - t, "modules": len(texts), "bytes": sum(map(len, texts))}))
"""

XPROF = r"""
import glob, json, os, shutil, sys, tempfile, time
from xprof.convert import raw_to_tool_data as rtd
run_dir = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    paths = []
    for f in sorted(glob.glob(os.path.join(run_dir, "*.xplane.pb"))):
        shutil.copy(f, tmp)
        paths.append(os.path.join(tmp, os.path.basename(f)))
    rtd.xspace_to_tool_names(paths)  # writes <module>.hlo_proto.pb files (not timed)
    modules = sorted(os.path.basename(f)[:-len(".hlo_proto.pb")] for f in glob.glob(os.path.join(tmp, "*.hlo_proto.pb")))
    modules = [m for m in modules if m != "NO_MODULE"]
    t = time.perf_counter()
    total = 0
    for m in modules:
        data, _ = rtd.xspace_to_tool_data(paths, "graph_viewer", {"graph_viewer_options": {
            "module_name": m, "type": "long_txt"}, "use_saved_result": False})
        total += len(data)
    print(json.dumps({"seconds": time.perf_counter() - t, "modules": len(modules), "bytes": total}))
"""


def last_json(cmd: list[str], cwd: pathlib.Path | None = None) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run(cmd, cwd=cwd, env=dict(os.environ, XDG_CACHE_HOME=cache, PYTHONPATH=str(ROOT)),
                             check=True, capture_output=True, text=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logdir", nargs="?", default=str(ROOT / "tests" / "fixtures" / "profiles" / "jax_mlp"))
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    run_dir = next(pathlib.Path(a.logdir).rglob("*.xplane.pb")).parent
    ours, theirs = [], []
    for _ in range(a.repeat):
        theirs.append(last_json([ORACLE_PY, "-c", XPROF, str(run_dir)]))
        ours.append(last_json([sys.executable, "-c", OURS, a.logdir], cwd=ROOT))
    o, x = min(ours, key=lambda r: r["seconds"]), min(theirs, key=lambda r: r["seconds"])
    print(f"profile {a.logdir}: {o['modules']} modules, {o['bytes']:,} bytes of HLO text "
          f"(XProf: {x['modules']} modules, {x['bytes']:,} bytes)")
    print(f"XProf graph_viewer long_txt, all modules: {x['seconds']:.3f} s")
    print(f"tputui decode + long_txt, all modules:    {o['seconds']:.3f} s  ({o['seconds'] / x['seconds']:.2f}x)")


if __name__ == "__main__":
    main()

"""Build tests/fixtures/riegeli/: riegeli versions of real fixture profiles, and XProf's outputs on them.

usage: python scripts/make_riegeli_fixtures.py [--oracle XPROF_PYTHON] [--only NAME ...]

Each fixture is a logdir `riegeli/<name>/plugins/profile/<run>/<host>.xplane.riegeli` made by
scripts/to_riegeli.py from `profiles/<source>`; `riegeli/<name>/oracle/<tool>.json` is XProf
2.24's own converter run on the riegeli file (with --oracle: a Python that has `xprof`, e.g. the
oracle venv), trace_viewer reduced to a digest as scripts/copy_fixtures.py does.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import to_riegeli  # noqa: E402
from copy_fixtures import digest  # noqa: E402

SRC = ROOT / "tests" / "fixtures" / "profiles"
DEST = ROOT / "tests" / "fixtures" / "riegeli"
# name: (source profile, to_riegeli arguments)
FIXTURES = {
    "tpu_planes_brotli": ("tpu_v6e_inference", ["--records", "3", "--split", "planes", "--compression", "brotli"]),
    "tpu_lines_zstd": ("tpu_v6e_inference", ["--records", "4", "--split", "lines", "--compression", "zstd"]),
    "tf_loop_none": ("tf_loop", ["--records", "3", "--split", "lines", "--compression", "none"]),
    "jax_mlp_corrupt": ("jax_mlp", ["--records", "4", "--split", "lines", "--compression", "brotli", "--corrupt"]),
    # --tile's copies (device_offset_ps moved with the events), for the op tools' self times.
    "tpu_tiled_x3": ("tpu_v6e_inference", ["--records", "3", "--split", "planes", "--compression", "brotli",
                                           "--tile", "3"]),
}
TOOLS = ["overview_page", "framework_op_stats", "op_profile", "hlo_stats", "kernel_stats",
         "input_pipeline_analyzer", "roofline_model", "memory_profile", "pod_viewer", "trace_viewer"]
FIXTURE_TOOLS = {"tpu_tiled_x3": ["op_profile", "hlo_stats"]}  # the others: TOOLS

ORACLE = r"""
import json, shutil, sys, tempfile, os
from xprof.convert import raw_to_tool_data as rtd
src, out, tools = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
tmp = tempfile.mkdtemp()
path = os.path.join(tmp, os.path.basename(src))
shutil.copy(src, path)  # XProf writes caches beside its input
for tool in tools:
    data, _ = rtd.xspace_to_tool_data([path], tool, {"use_saved_result": False})
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(out, tool + ".json"), "wb") as f:
        f.write(data or b"null")
shutil.rmtree(tmp)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle", metavar="XPROF_PYTHON")
    ap.add_argument("--only", nargs="+", choices=sorted(FIXTURES), help="rebuild these fixtures only")
    a = ap.parse_args()
    for name, (source, args) in FIXTURES.items():
        if a.only and name not in a.only:
            continue
        tools = FIXTURE_TOOLS.get(name, TOOLS)
        pb = next((SRC / source).rglob("*.xplane.pb"))
        run_dir = DEST / name / "plugins" / "profile" / pb.parent.name
        shutil.rmtree(DEST / name / "plugins", ignore_errors=True)
        run_dir.mkdir(parents=True)
        dst = run_dir / (pb.name[: -len(".xplane.pb")] + ".xplane.riegeli")
        to_riegeli.main([str(pb), str(dst), *args])
        if not a.oracle:
            continue
        out = DEST / name / "oracle"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        subprocess.run([a.oracle, "-c", ORACLE, str(dst), str(out), json.dumps(tools)], check=True,
                       stderr=subprocess.DEVNULL)
        trace = out / "trace_viewer.json"
        if trace.exists():
            with tempfile.TemporaryDirectory() as tmp:
                digest(trace, pathlib.Path(tmp) / "d.npz")
                shutil.copy(pathlib.Path(tmp) / "d.npz", out / "trace_viewer.digest.npz")
            trace.unlink()
        print(name, sum(p.stat().st_size for p in (DEST / name).rglob("*") if p.is_file()), "bytes")


if __name__ == "__main__":
    main()

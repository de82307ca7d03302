"""Build synthetic TPU profiles that fire XProf's smart suggestions, with XProf's output beside them.

usage: python scripts/make_advice_fixtures.py [OUT_DIR] [--no-oracle]   (default tests/fixtures/advice)

XProf 2.24's open-source `smart_suggestion` tool runs one rule (RegisterAllRulesFor3P in
xprof/convert/smart_suggestion/all_rules.h): BarrierCoresRule, which fires when `barrier-cores`
ops take >= 10% of each step on average and names straggler hosts (modified z-score of the
hosts' barrier share > 3.5). None of the real profiles has such ops, so these pods (built with
scripts/make_pod_fixtures.py's machinery) replace the pod-wide all-reduce by a `barrier-cores`
op:

  barrier_4hosts   4 hosts x 2 cores (TPU v4), 6 steps; the last host's input is slow, so it
                   waits least at the barrier (fires, with that host as the straggler)
  barrier_light    1 host x 4 cores (TPU v5 lite), 6 steps; a short barrier (does not fire)

`oracle/smart_suggestion.json` is XProf 2.24.2's own output for each (../shared/tools/oracle.py,
run with XPROF_PYTHON, default /work/xvenv/bin/python; XPROF_ORACLE names oracle.py).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import make_pod_fixtures as pods  # noqa: E402

ORACLE_PY = os.environ.get("XPROF_PYTHON", "/work/xvenv/bin/python")
ORACLE = os.environ.get("XPROF_ORACLE", "/work/shared/tools/oracle.py")

FIXTURES = [
    (pods.PodSpec("barrier_4hosts", "TPU v4", hosts_per_slice=4, chips_per_host=2, cores_per_chip=1, steps=6,
                  seed=5, host_prefix="bar-w", peak_tflops=275.0, peak_hbm_gbps=1200.0), 1.0),
    (pods.PodSpec("barrier_light", "TPU v5 lite", hosts_per_slice=1, chips_per_host=4, cores_per_chip=1, steps=6,
                  seed=6, host_prefix="light-w"), 0.1),
]


def with_barrier(sim: dict, keep: float) -> dict:
    """The pod-wide all-reduce becomes a `barrier-cores` op (its duration scaled by `keep`:
    the cores still wait for the slowest one, for that share of the time)."""
    for steps in sim.values():
        for _s0, _s1, ops in steps:
            for op in ops:
                if op.name == "all-reduce.3":
                    op.name, op.category = "barrier-cores.3", "barrier-cores"
                    op.dur = max(1, int(op.dur * keep))
    return sim


def build(spec: pods.PodSpec, keep: float, run_dir: pathlib.Path) -> list[pathlib.Path]:
    run_dir.mkdir(parents=True, exist_ok=True)
    sim = with_barrier(pods.simulate(spec), keep)
    hlo = pods.hlo_module_proto(spec)
    paths = []
    for h in range(spec.hosts):
        path = run_dir / f"{spec.host_name(h)}.xplane.pb"
        path.write_bytes(pods.build_host(spec, h, sim, hlo).SerializeToString())
        paths.append(path)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=str(ROOT / "tests" / "fixtures" / "advice"))
    ap.add_argument("--no-oracle", action="store_true")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    for spec, keep in FIXTURES:
        base = out / spec.name
        shutil.rmtree(base, ignore_errors=True)
        paths = build(spec, keep, base / "plugins" / "profile" / pods.RUN)
        print(f"{spec.name}: {len(paths)} hosts, {sum(p.stat().st_size for p in paths)} bytes")
        if a.no_oracle:
            continue
        od = base / "oracle"
        od.mkdir(parents=True, exist_ok=True)
        data = subprocess.run([ORACLE_PY, ORACLE, str(base), "smart_suggestion"], check=True,
                              capture_output=True, timeout=600).stdout
        (od / "smart_suggestion.json").write_bytes(data)
        (od / "index.json").write_text(json.dumps(
            {"tool": "xprof 2.24.2 via shared/tools/oracle.py", "outputs": {"smart_suggestion": "smart_suggestion.json"}},
            indent=1) + "\n")


if __name__ == "__main__":
    main()

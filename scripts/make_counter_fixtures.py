"""Build a synthetic TPU v6e profile with hardware performance counters, and XProf's output for it.

usage: python scripts/make_counter_fixtures.py [OUT_DIR] [--no-oracle]   (default tests/fixtures/counters)

XProf's `perf_counters` (xprof/convert/xplane_to_perf_counters.cc) lists every event carrying a
`counter_value` stat on a `/device:TPU:` (or GPU) plane that has a `global_chip_id` (else
`device_id`) plane stat: host, chip, the line's name ("Kernel") and id ("Sample"), the event's name
lower-cased ("Counter"), the value (a hex cell), and the `performance_counter_description` /
`performance_counter_sets` stats. None of the real profiles has counters, so this one has two chips
(v6e, `TPU v6 Lite`), each with a `_counters_` line (sample 0: whole-program counters) and a
per-kernel line (sample 1), values as uint64 and as int64 stats, one event without description.

`oracle/perf_counters.json` and `oracle/utilization_viewer.json` are XProf 2.24.2's outputs
(../shared/tools/oracle.py with XPROF_PYTHON, default /work/xvenv/bin/python).
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from make_pod_fixtures import PROFILE_START_NS, US, PlaneBuilder  # noqa: E402

from tputui.proto import xplane_pb2  # noqa: E402

ORACLE_PY = os.environ.get("XPROF_PYTHON", "/work/xvenv/bin/python")
ORACLE = os.environ.get("XPROF_ORACLE", "/work/shared/tools/oracle.py")
RUN = "2026_11_24_09_00_00"
HOST = "v6e-counters"

# (name as the runtime writes it, description, set, value per (chip, sample))
COUNTERS = [
    ("MXU_BUSY_0", "cycles with no MXU busy", "tc_mxu", lambda c, s: 1_200_000 + 1000 * c + 7 * s),
    ("MXU_BUSY_1", "cycles with one MXU busy", "tc_mxu", lambda c, s: 3_400_000 + 2000 * c + 11 * s),
    ("MXU_BUSY_2", "cycles with both MXUs busy", "tc_mxu", lambda c, s: 9_800_000 - 500 * c),
    ("CYCLES", "TensorCore cycles", "tc_core", lambda c, s: 14_400_000 + 4096 * s),
    ("HBM_RD_BYTES", "", "", lambda c, s: 0xDEADBEEF00 + c),
]


def build_host() -> xplane_pb2.XSpace:
    xs = xplane_pb2.XSpace()
    xs.hostnames.append(HOST)
    for chip in range(2):
        p = xs.planes.add()
        p.id, p.name = chip, f"/device:TPU:{chip}"
        pb = PlaneBuilder(p)
        pb.add_stats(p, {"device_type_string": "TPU v6 Lite", "global_chip_id": 10 + chip, "device_id": chip})
        for sample, line_name in ((0, "_counters_"), (1, "jit_step(7)/fusion.3")):
            line = pb.line(sample, line_name)
            for k, (name, desc, cset, value) in enumerate(COUNTERS):
                stats = {"counter_value": ("u", value(chip, sample)) if k % 2 == 0 else value(chip, sample),
                         "performance_counter_id": ("u", 100 + k)}
                if desc:
                    stats["performance_counter_description"] = desc
                if cset:
                    stats["performance_counter_sets"] = cset
                pb.event(line, pb.metadata(name), 40 * US + k * US, US // 2, stats)
    env = xs.planes.add()
    env.name = "Task Environment"
    PlaneBuilder(env).add_stats(env, {"profile_start_time": ("u", PROFILE_START_NS),
                                      "profile_stop_time": ("u", PROFILE_START_NS + 1_000_000)})
    return xs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=str(ROOT / "tests" / "fixtures" / "counters"))
    ap.add_argument("--no-oracle", action="store_true")
    a = ap.parse_args()
    base = pathlib.Path(a.out) / "v6e_counters"
    shutil.rmtree(base, ignore_errors=True)
    run_dir = base / "plugins" / "profile" / RUN
    run_dir.mkdir(parents=True)
    (run_dir / f"{HOST}.xplane.pb").write_bytes(build_host().SerializeToString())
    if a.no_oracle:
        return
    od = base / "oracle"
    od.mkdir()
    outputs = {}
    for tool in ("perf_counters", "utilization_viewer"):
        data = subprocess.run([ORACLE_PY, ORACLE, str(base), tool], check=True, capture_output=True, timeout=600).stdout
        (od / f"{tool}.json").write_bytes(data)
        outputs[tool] = f"{tool}.json"
    (od / "index.json").write_text(json.dumps({"tool": "xprof 2.24.2 via shared/tools/oracle.py",
                                               "outputs": outputs}, indent=1) + "\n")


if __name__ == "__main__":
    main()

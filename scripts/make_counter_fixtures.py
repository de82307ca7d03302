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

Its counter ids (100-104) are made up, so XProf's utilization viewer finds none of the counters it
reads and writes zeros. `v6e_utilization` (two chips, `TPU v6 Lite`) and `v7x_utilization` (one
chip, `TPU v7x`) carry every counter of XProf's id tables (`xprof/utils/tpu_counter_ids_v6e.h` /
`_v7x.h`, read from the XProf source at XPROF_SRC, a git dir, default the local mirror) with
non-trivial values: per sample a clock (`_counters_`: 1 s of cycles, the kernel line: 0.1 s) and
every other counter a pseudo-random fraction of it (an eighth for MXU and HBM counters, so the
utilizations look like a real run's), as uint64, int64 and one double stat; on chip 1 the counter
id sits on the event metadata rather than the event, and an `XLA Ops` line without counters
checks that only counter events count.

`v6e_value_kinds` holds the odd values: a negative int64 (XProf wraps it to uint64), integers
above 2**53 (kept exact), doubles of -0.0, 1e30 (clamped to the largest uint64) and -3.5 (0).
`v7x_clock_gaps` has clock counters at 0 where XProf drops rows (die 0's power-manager clock: no
tensor-core 0 or ICI rows; die 1's tensor-core clock: no HBM rows for core 1; no HBM traffic: no
read / write split) and one counter event without an id whose event-metadata id is the counter id.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import pathlib
import re
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
BIG_OUTPUT = 256 * 1024
XPROF_SRC = os.environ.get("XPROF_SRC", "/work/.mirror/openxla+xprof/repo")
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


# name -> (device_type_string, header, chips, clock Hz)
UTILIZATION = {"v6e_utilization": ("TPU v6 Lite", "tpu_counter_ids_v6e.h", 2, 1.75e9),
               "v7x_utilization": ("TPU v7x", "tpu_counter_ids_v7x.h", 1, 1.9e9)}


def counter_ids(header: str) -> list[tuple[str, int]]:
    text = subprocess.run(["git", "-C", XPROF_SRC, "show", f"HEAD:xprof/utils/{header}"], check=True,
                          capture_output=True, text=True).stdout
    return [(k, int(v)) for k, v in re.findall(r"\b(VF_CHIP_\w+)\s*=\s*(\d+)", text)]


def counter_value(name: str, chip: int, sample: int, cycles: int) -> int:
    if name.endswith("_CYCLES") or name.endswith("_CYCLE_COUNT"):
        return cycles - 1000 * chip
    frac = 0.02 + 0.88 * int.from_bytes(hashlib.sha256(f"{name}/{chip}/{sample}".encode()).digest()[:4], "little") / 2**32
    scale = 8 if ("MATMUL" in name or "MATPUSH" in name or "HBM" in name) else 1
    return int(cycles * frac / scale)


def build_utilization_host(host: str, device_type: str, header: str, chips: int, hz: float) -> xplane_pb2.XSpace:
    ids = counter_ids(header)
    xs = xplane_pb2.XSpace()
    xs.hostnames.append(host)
    for chip in range(chips):
        p = xs.planes.add()
        p.id, p.name = chip, f"/device:TPU:{chip}"
        pb = PlaneBuilder(p)
        pb.add_stats(p, {"device_type_string": device_type, "global_chip_id": chip, "device_id": chip})
        ops = pb.line(2, "XLA Ops")
        pb.event(ops, pb.metadata("fusion.3"), 30 * US, 10 * US, {"program_id": 7})
        for sample, line_name, seconds in ((0, "_counters_", 1.0), (1, "jit_step(7)/fusion.3", 0.1)):
            line = pb.line(sample, line_name)
            cycles = int(hz * seconds)
            for k, (name, cid) in enumerate(ids):
                short = name.removeprefix("VF_CHIP_").lower()
                value = counter_value(name, chip, sample, cycles)
                stats: dict = {"counter_value": ("u", value) if k % 3 else value}
                if k == 7:  # a double-valued sample: XProf truncates it to an integer
                    stats["counter_value"] = value + 0.75
                if chip == 1:
                    md = pb.metadata(short, stats={"performance_counter_id": ("u", cid)})
                else:
                    md = pb.metadata(short)
                    stats["performance_counter_id"] = ("u", cid)
                pb.event(line, md, 40 * US + k * 10, 5, stats)
    env = xs.planes.add()
    env.name = "Task Environment"
    PlaneBuilder(env).add_stats(env, {"profile_start_time": ("u", PROFILE_START_NS),
                                      "profile_stop_time": ("u", PROFILE_START_NS + 1_000_000)})
    return xs


TC_PREFIX = "VF_CHIP_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_"
VALUE_KINDS = {  # sample -> [(tensor-core counter, value as stored)]
    0: [("CYCLES", 1000), ("SCALAR_ALU_INSTRUCTION_0", -5), ("SCALAR_ALU_INSTRUCTION_1", 10),
        ("VST_INSTRUCTION", 2**53 + 1), ("VLD_INSTRUCTION_0", 2**53 + 1), ("VLD_INSTRUCTION_1", 1)],
    1: [("CYCLES", ("u", 1000)), ("SCALAR_ALU_INSTRUCTION_0", ("u", 2**64 - 5)), ("SCALAR_ALU_INSTRUCTION_1", ("u", 10)),
        ("VLD_INSTRUCTION_0", ("u", 2**53 + 1)), ("VLD_INSTRUCTION_1", ("u", 1)), ("MXU_BUSY_0", -0.0),
        ("MXU_BUSY_1", 1e30), ("MXU_BUSY_2", -3.5)],
}


def build_value_kinds_host(host: str) -> xplane_pb2.XSpace:
    ids = dict(counter_ids("tpu_counter_ids_v6e.h"))
    xs = xplane_pb2.XSpace()
    xs.hostnames.append(host)
    p = xs.planes.add()
    p.id, p.name = 0, "/device:TPU:0"
    pb = PlaneBuilder(p)
    pb.add_stats(p, {"device_type_string": "TPU v6 Lite", "device_id": 0})
    for sample, items in VALUE_KINDS.items():
        line = pb.line(sample, f"sample_{sample}")
        for k, (name, value) in enumerate(items):
            pb.event(line, pb.metadata(name.lower()), 40 * US + k * 10, 5,
                     {"counter_value": value, "performance_counter_id": ("u", ids[TC_PREFIX + name])})
    return xs


def build_clock_gaps_host(host: str) -> xplane_pb2.XSpace:
    ids = dict(counter_ids("tpu_counter_ids_v7x.h"))
    die = ["VF_CHIP_DIE0_", "VF_CHIP_DIE1_"]
    pwr = "PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_"
    hbm_rd = "HBM_0_SS_HBMC_3_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_RD_RESP_PS1"
    samples = {  # sample -> [(counter name, value)]
        0: [(die[0] + pwr + "CYCLE_COUNT", 0), (die[0] + TC_PREFIX[8:] + "CYCLES", 1000),
            (die[0] + hbm_rd, 5), (die[0] + TC_PREFIX[8:] + "MXU_BUSY_1", 300),
            (die[1] + pwr + "CYCLE_COUNT", 2000), (die[1] + TC_PREFIX[8:] + "CYCLES", 0),
            (die[1] + TC_PREFIX[8:] + "MXU_BUSY_2", 700), (die[1] + hbm_rd, 9)],
        1: [(die[0] + pwr + "CYCLE_COUNT", 1900), (die[0] + TC_PREFIX[8:] + "CYCLES", 1900),
            (die[1] + pwr + "CYCLE_COUNT", 1900), (die[1] + TC_PREFIX[8:] + "CYCLES", 1900)],
    }
    no_id = die[1] + pwr + "CLOCKS_SKIPPED"  # sample 1: named by its metadata id only
    xs = xplane_pb2.XSpace()
    xs.hostnames.append(host)
    p = xs.planes.add()
    p.id, p.name = 0, "/device:TPU:0"
    pb = PlaneBuilder(p)
    pb.add_stats(p, {"device_type_string": "TPU v7x", "device_id": 0})
    for sample, items in samples.items():
        line = pb.line(sample, f"sample_{sample}")
        for k, (name, value) in enumerate(items):
            pb.event(line, pb.metadata(name.lower()), 40 * US + k * 10, 5,
                     {"counter_value": ("u", value), "performance_counter_id": ("u", ids[name])})
    md = p.event_metadata[ids[no_id]]
    md.id, md.name = ids[no_id], no_id.lower()
    pb.event(p.lines[1], ids[no_id], 50 * US, 5, {"counter_value": ("u", 123)})
    return xs


def write_fixture(base: pathlib.Path, host: str, xs: xplane_pb2.XSpace, oracle: bool) -> None:
    shutil.rmtree(base, ignore_errors=True)
    run_dir = base / "plugins" / "profile" / RUN
    run_dir.mkdir(parents=True)
    (run_dir / f"{host}.xplane.pb").write_bytes(xs.SerializeToString())
    if not oracle:
        return
    od = base / "oracle"
    od.mkdir()
    outputs = {}
    for tool in ("perf_counters", "utilization_viewer"):
        data = subprocess.run([ORACLE_PY, ORACLE, str(base), tool], check=True, capture_output=True, timeout=600).stdout
        name = f"{tool}.json"
        if len(data) > BIG_OUTPUT:  # thousands of counter rows: kept gzipped (no name or time in the header)
            name, data = name + ".gz", gzip.compress(data, mtime=0)
        (od / name).write_bytes(data)
        outputs[tool] = name
    (od / "index.json").write_text(json.dumps({"tool": "xprof 2.24.2 via shared/tools/oracle.py",
                                               "outputs": outputs}, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=str(ROOT / "tests" / "fixtures" / "counters"))
    ap.add_argument("--no-oracle", action="store_true")
    ap.add_argument("--only", choices=["v6e_counters", "v6e_value_kinds", "v7x_clock_gaps", *UTILIZATION],
                    help="build just this fixture")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    if a.only in (None, "v6e_counters"):
        write_fixture(out / "v6e_counters", HOST, build_host(), not a.no_oracle)
    if a.only in (None, "v6e_value_kinds"):
        write_fixture(out / "v6e_value_kinds", "v6e-value-kinds", build_value_kinds_host("v6e-value-kinds"),
                      not a.no_oracle)
    if a.only in (None, "v7x_clock_gaps"):
        write_fixture(out / "v7x_clock_gaps", "v7x-clock-gaps", build_clock_gaps_host("v7x-clock-gaps"),
                      not a.no_oracle)
    for name, (device_type, header, chips, hz) in UTILIZATION.items():
        if a.only in (None, name):
            host = name.replace("_", "-")
            write_fixture(out / name, host, build_utilization_host(host, device_type, header, chips, hz),
                          not a.no_oracle)


if __name__ == "__main__":
    main()

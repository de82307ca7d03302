"""Write tputui/analysis/tpu_counter_ids.py: the TPU v6e / v7x hardware counter ids the utilization
viewer reads, taken from XProf's counter-id tables.

usage: python scripts/gen_tpu_counter_ids.py [XPROF_GIT_DIR]   (default /work/.mirror/openxla+xprof/repo)

The ids are facts of the hardware, listed in XProf's `xprof/utils/tpu_counter_ids_v6e.h`
(enum TpuCounterIdsTpu6e) and `tpu_counter_ids_v7x.h` (TpuCounterIdsTpu7x); which counters feed
which utilization row is `xprof/convert/tpu_generic_utilization_utils.cc`. Only the counters a
formula reads are kept, grouped by unit (tensor core, SparseCore sequencer and tiles, HBM
controllers, ICI), so the module stays small; a missing name fails here, not at run time.
"""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tputui" / "analysis" / "tpu_counter_ids.py"
DEFAULT_GIT = "/work/.mirror/openxla+xprof/repo"

MXU_KINDS_V6E = ("LMR_BF16", "LMR_I8", "LMR_I4", "VREG_I4", "VREG_I8", "VREG_F8", "VREG_BF16", "VREG_F32")
MXU_KINDS_V7X = ("LMR_BF16", "VREG_F8", "VREG_BF16", "VREG_F32")
TC_COMMON = (["CYCLES", "SCALAR_ALU_INSTRUCTION_0", "SCALAR_ALU_INSTRUCTION_1"]
             + [f"VECTOR_ALU_INSTRUCTION_{i}" for i in range(4)]
             + [f"VPU_VALU_{k}_OPS_{i}" for k in ("FADD", "FMUL", "MISC", "INT", "FMAC") for i in range(4)]
             + ["VST_INSTRUCTION", "VLD_INSTRUCTION_0", "VLD_INSTRUCTION_1"]
             + [f"MXU_BUSY_{i}" for i in range(3)] + [f"XLU_BUSY_{i}" for i in range(3)]
             + [f"MATPUSH_CYCLES_MXU_{i}" for i in range(2)]
             + [f"{k}_XLU_{i}" for k in ("PACKED", "ROTATE_PERMUTE_INSTRUCTION", "ROTATE_PERMUTE_SET_INSTRUCTION",
                                         "TRANSPOSE") for i in range(2)])
TILE_KEYS = ("TEC_SCALAR_ISSUE", "TEC_S0_INSTRUCTION", "TEC_S1_INSTRUCTION", "TEC_SMISC_INSTRUCTION",
             "VECTOR_ISSUE", "V0_INSTRUCTION", "V1_INSTRUCTION", "V2_INSTRUCTION", "VLD_INSTRUCTION",
             "VST_INSTRUCTION", "VRES_INSTRUCTION", "VEX_INSTRUCTION")
TEC_KEYS = ("TEC_SCALAR_ISSUE", "TEC_S0_INSTRUCTION", "TEC_S1_INSTRUCTION", "TEC_SMISC_INSTRUCTION")
VECTOR_KEYS = ("VECTOR_ISSUE", "V0_INSTRUCTION", "V1_INSTRUCTION", "V2_INSTRUCTION", "VLD_INSTRUCTION",
               "VST_INSTRUCTION", "VRES_INSTRUCTION", "VEX_INSTRUCTION")
SCS_KEYS = ("CYCLES", "SCALAR_ISSUE", "S0_INSTRUCTION", "S1_INSTRUCTION", "SMISC_INSTRUCTION")
PWRMGR_KEYS = ("CYCLE_COUNT", "CLOCKS_SKIPPED", "EXT_THROTTLE_CLOCKS_SKIPPED", "LDIDT_DROOP_CLOCKS_SKIPPED")
STATS = "SC_STATS_COUNTERS_UNPRIVILEGED_COUNT_"
TC = "TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_"
HBM_STATS = "CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_"


def enum(git_dir: str, name: str) -> dict[str, int]:
    text = subprocess.run(["git", "-C", git_dir, "show", f"HEAD:xprof/utils/{name}"], check=True,
                          capture_output=True, text=True).stdout
    return {k: int(v) for k, v in re.findall(r"\b(VF_CHIP_\w+)\s*=\s*(\d+)", text)}


def hbm(ids: dict[str, int], prefix: str, hbms: range, kinds: tuple[str, ...]) -> list[int]:
    """The HBM controllers' counters in XProf's order: per HBM, per controller, per kind."""
    return [ids[f"{prefix}HBM_{h}_{'SS_' if 'DIE' in prefix else ''}HBMC_{c}_{HBM_STATS}{k}"]
            for h in hbms for c in range(16) for k in kinds]


READ_KINDS = ("RD_RESP_PS0", "RD_RESP_PS1")
WRITE_KINDS = ("WR_REQ_PS0", "PARTIAL_WRITE_REQ_PS0", "WR_REQ_PS1", "PARTIAL_WRITE_REQ_PS1")


def v6e(ids: dict[str, int]) -> dict[str, object]:
    p = "VF_CHIP_"
    return {
        "TC": {k: ids[p + TC + k] for k in TC_COMMON + [f"MATMUL_{m}_MXU_{u}" for m in MXU_KINDS_V6E
                                                      for u in range(2)]},
        "SCS": [{k: ids[f"{p}SC_{c}_SCS_{STATS}{k}"] for k in SCS_KEYS} for c in range(2)],
        "TILES": [{k: [ids[f"{p}SC_{c}_SCT_{t}_{STATS}{k}"] for t in range(16)] for k in TILE_KEYS}
                  for c in range(2)],
        "TILE_CYCLES": [ids[f"{p}SC_{c}_SCT_0_{STATS}CYCLES"] for c in range(2)],  # tile 0's clock for all 16
        "HBM_READ": hbm(ids, p, range(2), READ_KINDS),
        "HBM_WRITE": hbm(ids, p, range(2), WRITE_KINDS),
        "ICI_READ": [ids[f"{p}OCI_ICR_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_RD_REQ_{i}_INSERTION_COUNT"]
                     for i in range(2)],
        "ICI_WRITE": [ids[f"{p}OCI_ICR_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_WR_REQ_{i}_INSERTION_COUNT"]
                      for i in range(2)],
    }


def v7x(ids: dict[str, int]) -> dict[str, object]:
    die = [f"VF_CHIP_DIE{d}_" for d in range(2)]
    tc_keys = TC_COMMON + [f"MATMUL_{m}_MXU_{u}" for m in MXU_KINDS_V7X for u in range(2)]
    return {
        "TC": [{k: ids[p + TC + k] for k in tc_keys} for p in die],
        "PWRMGR": [{k: ids[f"{p}PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_{k}"] for k in PWRMGR_KEYS}
                   for p in die],
        "SCS": [[{k: ids[f"{p}SC_{c}_SCS_{STATS}{k}"] for k in SCS_KEYS} for c in range(2)] for p in die],
        # TEC counters (and the tiles' cycles) sit in the SCTD block, vector-issue counters in SCTC.
        "TILES": [[{**{k: [ids[f"{p}SC_{c}_SCTD_{t}_{STATS}{k}"] for t in range(16)] for k in TEC_KEYS},
                    **{k: [ids[f"{p}SC_{c}_SCTC_{t}_{STATS}{k}"] for t in range(16)] for k in VECTOR_KEYS}}
                   for c in range(2)] for p in die],
        "TILE_CYCLES": [[ids[f"{p}SC_{c}_SCTD_0_{STATS}CYCLES"] for c in range(2)] for p in die],
        "HBM_READ": [hbm(ids, p, range(4), READ_KINDS) for p in die],
        "HBM_WRITE": [hbm(ids, p, range(4), WRITE_KINDS) for p in die],
        "ICI_READ": [ids[f"VF_CHIP_DIE1_OCI_ICR_{i}_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_RD_REQ_0_"
                         "INSERTION_COUNT"] for i in range(4)],
        "ICI_WRITE": [ids[f"VF_CHIP_DIE1_OCI_ICR_{i}_PERF_COUNTERS_FIFO_STATS_COUNTERS_UNPRIVILEGED_BN_WR_REQ_0_"
                          "INSERTION_COUNT"] for i in range(4)],
    }


def render(name: str, table: dict[str, object]) -> str:
    lines = [f"{name}: dict[str, Any] = {{"]
    for key, value in table.items():
        lines.append(f"    {key!r}: {value!r},")
    lines.append("}")
    return "\n".join(lines)


def main() -> None:
    git_dir = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_GIT
    v6e_ids, v7x_ids = enum(git_dir, "tpu_counter_ids_v6e.h"), enum(git_dir, "tpu_counter_ids_v7x.h")
    head = ('"""TPU v6e / v7x counter ids read by the utilization viewer (generated by\n'
            'scripts/gen_tpu_counter_ids.py from XProf\'s xprof/utils/tpu_counter_ids_v6e.h and _v7x.h; do not edit).\n\n'
            "TC: tensor-core counters by name; SCS: SparseCore sequencer counters per core; TILES: per core,\n"
            "per name, the 16 tiles' ids; TILE_CYCLES: per core, tile 0's cycle counter; HBM_READ / HBM_WRITE:\n"
            "the HBM controllers' read-response and write-request counters; ICI_READ / ICI_WRITE:\n"
            "ICI flit counters. v7x lists are per die.\n"
            '"""\n# ruff: noqa: E501\nfrom __future__ import annotations\n\nfrom typing import Any\n')
    OUT.write_text(head + "\n" + render("V6E", v6e(v6e_ids)) + "\n\n" + render("V7X", v7x(v7x_ids)) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()

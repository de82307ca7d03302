"""Utilization viewer: per-unit utilization of TPU v6e / v7x chips from their hardware counters.

XProf's `utilization_viewer` (xprof/convert/xplane_to_utilization_viewer.cc, formulas in
tpu_generic_utilization_utils.cc): on every `/device:TPU:` plane with a `device_id` stat and a
`device_type_string` of "TPU v6 Lite" or "TPU v7x", each line with counter events is one sample
(the `_counters_` line: the whole program; other lines: kernels). An event's counter id is its
`performance_counter_id` stat (on the event, else its metadata; 0 or absent: the metadata id), its
value the `counter_value` stat (integers as uint64 bits, doubles truncated and clamped to uint64);
the last value of an id in a line wins. From those values each sample gives rows of (node, unit
name, achieved, peak, unit): per tensor core the scalar, vector, VPU, vmem, MXU (busy, per MXU, per
data type, matpush), XLU and, on v7x, throttling rows (none when the core's clock counter is 0),
HBM read+write bytes against the chip's peak bandwidth over the sample's time and the read / write
split, ICI read / write bytes (repeated once per tensor core, as XProf does), then per SparseCore the
TEC scalar, vector-slot and sequencer issue rows. Samples are columns of one matrix (line x counter)
so every formula is a numpy expression over all samples of a chip at once.

XProf reads only the first host file and numbers it host 0; here every host is read and `host` is
its position in the run (0 on one host, as XProf).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis import giant_host, host_map, tool_facts
from tputui.analysis import tpu_counter_ids as ids
from tputui.analysis.result import NoDataError
from tputui.data import schema
from tputui.data.raw import KIND_DOUBLE, KIND_INT64, KIND_UINT64
from tputui.data.run_data import RunData
from tputui.data.xspace import XSpaceFrame

COLUMNS = [("host", "number", "Host"), ("device", "number", "Device"), ("sample", "number", "Sample"),
           ("node", "number", "Node"), ("name", "string", "Name"), ("achieved", "number", "Achieved"),
           ("peak", "number", "Peak"), ("unit", "string", "Unit")]
SCHEMA = {"host": pl.Int64, "device": pl.Int64, "sample": pl.Int64, "node": pl.Int64, "name": pl.String,
          "achieved": pl.Float64, "peak": pl.Float64, "unit": pl.String,
          "host_name": pl.String, "device_type": pl.String, "kernel": pl.String}
GIB = 1024.0 ** 3
U64_MAX_AS_DOUBLE = 18446744073709551615.0  # 2**64: doubles at or above it clamp to the largest uint64
HBM_BYTES_PER_BEAT = 32
ICI_BYTES_PER_FLIT = 128
ICI_PEAK_BYTES_PER_S = 294947368421.0526  # per direction, over a nominal 1 GHz clock (as XProf)
TILES_PER_SPARSECORE = 16


@dataclass(frozen=True)
class Chip:
    """Per-chip constants XProf's utilization viewer uses."""
    v6e: bool
    clock_hz: float  # tensor-core clock: cycles to seconds for the HBM peak
    peak_hbm_bytes_per_s: float
    cycles_per_xlu_instruction: int
    tensor_cores: int  # v7x: one per die
    mxus_per_core: int = 2


CHIPS = {"TPU v6 Lite": Chip(True, 1.75e9, 1525.5 * GIB, 4, 1),
         "TPU v7x": Chip(False, 1.9e9, 3433.0 * GIB, 1, 2)}


def _all_ids(table: Any) -> list[int]:
    if isinstance(table, dict):
        return [i for v in table.values() for i in _all_ids(v)]
    if isinstance(table, list):
        return [i for v in table for i in _all_ids(v)]
    return [int(table)]


NEEDED = {True: np.unique(np.array(_all_ids(ids.V6E), np.uint64)),
          False: np.unique(np.array(_all_ids(ids.V7X), np.uint64))}


class Samples:
    """The counter values of one chip's samples: a (samples x needed counters) uint64 matrix."""

    def __init__(self, needed: np.ndarray, values: np.ndarray):
        self.needed, self.values = needed, values

    def get(self, counter_id: int) -> np.ndarray:
        return self.values[:, int(np.searchsorted(self.needed, np.uint64(counter_id)))]

    def total(self, counter_ids: list[int]) -> np.ndarray:
        """Sum of counters, wrapping at 2**64 like XProf's uint64 arithmetic."""
        out = np.zeros(len(self.values), np.uint64)
        for c in counter_ids:
            out += self.get(c)
        return out


class Rows:
    """Utilization rows as XProf emits them, one vector per row kind over all samples; `present`
    says which samples have that row (XProf skips some when a clock counter reads 0)."""

    def __init__(self, n: int):
        self.n = n
        self.kinds: list[tuple[int, str, np.ndarray, np.ndarray, str, np.ndarray]] = []

    def add(self, node: int, name: str, achieved, peak, unit: str, present=None) -> None:
        def vec(x) -> np.ndarray:
            return np.broadcast_to(np.asarray(x).astype(np.float64), (self.n,))

        mask = np.ones(self.n, bool) if present is None else np.asarray(present, bool)
        self.kinds.append((node, name, vec(achieved), vec(peak), unit, mask))


def _tensor_core(s: Samples, chip: Chip, core: int, rows: Rows) -> None:
    tc = ids.V6E["TC"] if chip.v6e else ids.V7X["TC"][core]

    def c(name: str) -> np.ndarray:
        return s.get(tc[name])

    def total(*names: str) -> np.ndarray:
        return s.total([tc[n] for n in names])

    # v7x's tensor cores can be throttled: their clock is the power manager's cycle count.
    cycles = c("CYCLES") if chip.v6e else s.get(ids.V7X["PWRMGR"][core]["CYCLE_COUNT"])
    on = cycles != 0

    def add(name: str, achieved, peak, unit: str) -> None:
        rows.add(core, name, achieved, peak, unit, on)

    if not chip.v6e:
        pwr = ids.V7X["PWRMGR"][core]
        for name, key in (("Clocks Skipped", "CLOCKS_SKIPPED"), ("Ext Throttle Clocks Skipped",
                          "EXT_THROTTLE_CLOCKS_SKIPPED"), ("LDIDT Droop Clocks Skipped", "LDIDT_DROOP_CLOCKS_SKIPPED")):
            add(name, s.get(pwr[key]), cycles, "cycles")
    add("Scalar Unit", total("SCALAR_ALU_INSTRUCTION_0", "SCALAR_ALU_INSTRUCTION_1"), cycles * np.uint64(2),
        "instructions")
    vector_alus = np.uint64(4)
    add("Vector ALUs", total(*(f"VECTOR_ALU_INSTRUCTION_{i}" for i in range(4))), cycles * vector_alus,
        "instructions")
    add("VPU Utilization", total(*(f"VPU_VALU_{k}_OPS_{i}" for k in ("FADD", "FMUL", "MISC", "INT", "FMAC")
                                   for i in range(4))), cycles * vector_alus, "instructions")
    add("Vmem Stores", c("VST_INSTRUCTION"), cycles, "instructions")
    add("Vmem Loads", total("VLD_INSTRUCTION_0", "VLD_INSTRUCTION_1"), cycles * np.uint64(2), "instructions")
    busy = [c(f"MXU_BUSY_{i}") for i in range(3)]
    add("No MXU Busy", busy[0], cycles, "cycles")
    add("1 MXU Busy", busy[1], cycles, "cycles")
    add("2 MXU Busy", busy[2], cycles, "cycles")
    add("Avg MXU Busy", 0.5 * busy[1].astype(np.float64) + busy[2].astype(np.float64), cycles, "cycles")

    # Busy cycles per MXU: instructions of each kind times their cycles per instruction.
    def cycles_of(unit: int, kinds: tuple[tuple[str, int], ...]) -> np.ndarray:
        out = np.zeros(s.values.shape[0], np.uint64)
        for kind, cpi in kinds:
            out += np.uint64(cpi) * c(f"MATMUL_{kind}_MXU_{unit}")
        return out

    both = cycles * np.uint64(chip.mxus_per_core)
    groups: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]  # (row, ((instruction kind, cycles each), ...))
    if chip.v6e:
        groups = (("MXU BF16", (("LMR_BF16", 4), ("VREG_F8", 8), ("VREG_BF16", 8), ("VREG_F32", 4))),
                  ("MXU I8", (("LMR_I8", 2), ("VREG_I8", 8))),
                  ("MXU I4", (("LMR_I4", 2), ("VREG_I4", 8))))
    else:
        groups = (("MXU BF16", (("LMR_BF16", 4), ("VREG_BF16", 8), ("VREG_F32", 4))),
                  ("MXU E4M3 + E5M2", (("VREG_F8", 8),)))
    per_unit = [[cycles_of(u, kinds) for _, kinds in groups] for u in range(2)]
    for u in range(2):
        add(f"MXU{u}", sum(per_unit[u][1:], per_unit[u][0]), cycles, "cycles")
    for g, (name, _) in enumerate(groups):
        add(name, per_unit[0][g] + per_unit[1][g], both, "cycles")
    add("MXU matpush", total("MATPUSH_CYCLES_MXU_0", "MATPUSH_CYCLES_MXU_1"), both, "cycles")
    xlu = [c(f"XLU_BUSY_{i}") for i in range(3)]
    add("No XLU Busy", xlu[0], cycles, "cycles")
    add("1 XLU Busy", xlu[1], cycles, "cycles")
    add("2 XLUs Busy", xlu[2], cycles, "cycles")
    add("Avg XLU Busy", 0.5 * xlu[1].astype(np.float64) + xlu[2].astype(np.float64), cycles, "cycles")
    xlu_peak = cycles // np.uint64(chip.cycles_per_xlu_instruction)  # integer division, as XProf
    for u in range(2):
        add(f"XLU{u}", total(f"PACKED_XLU_{u}", f"ROTATE_PERMUTE_INSTRUCTION_XLU_{u}",
                             f"ROTATE_PERMUTE_SET_INSTRUCTION_XLU_{u}", f"TRANSPOSE_XLU_{u}"), xlu_peak, "instructions")


def _hbm(s: Samples, chip: Chip, core: int, rows: Rows) -> None:
    table = ids.V6E if chip.v6e else ids.V7X
    read = table["HBM_READ"] if chip.v6e else table["HBM_READ"][core]
    write = table["HBM_WRITE"] if chip.v6e else table["HBM_WRITE"][core]
    rd = s.total(read) * np.uint64(HBM_BYTES_PER_BEAT)
    wr = s.total(write) * np.uint64(HBM_BYTES_PER_BEAT)
    cycles = s.get(ids.V6E["TC"]["CYCLES"] if chip.v6e else ids.V7X["TC"][core]["CYCLES"])
    on = cycles != 0
    peak = chip.peak_hbm_bytes_per_s * (cycles.astype(np.float64) / chip.clock_hz)
    both = rd + wr
    rows.add(0, f"HBM Rd+Wr - core {core}", both, peak, "bytes", on)
    split = on & (both != 0)
    rows.add(core, "HBM Read Ratio", rd, both, "percent", split)
    rows.add(core, "HBM Write Ratio", wr, both, "percent", split)


def _ici(s: Samples, chip: Chip, rows: Rows) -> None:
    table = ids.V6E if chip.v6e else ids.V7X
    rd = s.total(table["ICI_READ"]) * np.uint64(ICI_BYTES_PER_FLIT)
    wr = s.total(table["ICI_WRITE"]) * np.uint64(ICI_BYTES_PER_FLIT)
    cycles = s.get(ids.V6E["TC"]["CYCLES"] if chip.v6e else ids.V7X["PWRMGR"][0]["CYCLE_COUNT"])
    peak = ICI_PEAK_BYTES_PER_S * (cycles.astype(np.float64) / 1e9)
    rows.add(0, "ICI (Read)", rd, peak, "bytes", cycles != 0)
    rows.add(0, "ICI (Write)", wr, peak, "bytes", cycles != 0)


def _sparse_core(s: Samples, chip: Chip, die: int, core: int, rows: Rows) -> None:
    if chip.v6e:
        tiles, scs, tile_clock = ids.V6E["TILES"][core], ids.V6E["SCS"][core], ids.V6E["TILE_CYCLES"][core]
        node = core
    else:
        tiles, scs = ids.V7X["TILES"][die][core], ids.V7X["SCS"][die][core]
        tile_clock, node = ids.V7X["TILE_CYCLES"][die][core], (die << 1) + core
    peak = s.get(tile_clock) * np.uint64(TILES_PER_SPARSECORE)  # tile 0's clock stands for all 16
    # XProf spells a few v6e names without the space after the colon; v7x's have it.
    gap = "" if chip.v6e else " "
    for name, key in (("TEC Scalar Issue", "TEC_SCALAR_ISSUE"), ("TEC Scalar Issue: S0 slot", "TEC_S0_INSTRUCTION"),
                      ("TEC Scalar Issue: S1 slot", "TEC_S1_INSTRUCTION"),
                      ("TEC Scalar Issue: Smisc slot", "TEC_SMISC_INSTRUCTION"), ("SC Vector Issue", "VECTOR_ISSUE"),
                      (f"SC Vector Issue:{gap}V0 Slot", "V0_INSTRUCTION"), ("SC Vector Issue: V1 Slot", "V1_INSTRUCTION"),
                      ("SC Vector Issue: V2 Slot", "V2_INSTRUCTION"), ("SC Vector Issue: VLD Slot", "VLD_INSTRUCTION"),
                      ("SC Vector Issue: VST Slot", "VST_INSTRUCTION"), (f"SC Vector Issue:{gap}VEX Slot", "VEX_INSTRUCTION"),
                      (f"SC Vector Issue:{gap}VRES Slot", "VRES_INSTRUCTION")):
        rows.add(node, name, s.total(tiles[key]), peak, "instructions")
    scs_cycles = s.get(scs["CYCLES"])
    for name, key in (("SCS Scalar Issue", "SCALAR_ISSUE"), ("SCS: S0 Slot", "S0_INSTRUCTION"),
                      ("SCS: S1 Slot", "S1_INSTRUCTION"), ("SCS: Smisc Slot", "SMISC_INSTRUCTION")):
        rows.add(node, name, s.get(scs[key]), scs_cycles, "instructions")


def chip_rows(s: Samples, chip: Chip) -> Rows:
    """Every row kind of one chip, in XProf's order: per tensor core its units, HBM and ICI, then
    the SparseCores (v6e: two; v7x: two per die)."""
    rows = Rows(s.values.shape[0])
    for core in range(chip.tensor_cores):
        _tensor_core(s, chip, core, rows)
        _hbm(s, chip, core, rows)
        _ici(s, chip, rows)
    for die in range(1 if chip.v6e else 2):
        for core in range(2):
            _sparse_core(s, chip, die, core, rows)
    return rows


def _stat_as_u64(frame: XSpaceFrame, owner: str, name: str, size: int, double_to_int: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(present, uint64 value) of one stat per owner row. Integers keep their 64 bits (a negative
    int64 wraps, as XProf's cast); a nonzero double is truncated and clamped to [0, 2**64) when
    `double_to_int` (counter values), else reads 0 (XProf's IntOrUintValue of a double, for ids)."""
    sv = frame.stat_values(owner, name)
    present = np.zeros(size, bool)
    values = np.zeros(size, np.uint64)
    if not sv.height:
        return present, values
    own = sv["owner"].to_numpy().astype(np.int64)
    kind = sv["kind"].to_numpy()
    bits = sv["int"].fill_null(0).to_numpy().astype(np.int64).view(np.uint64)
    out = np.where((kind == KIND_INT64) | (kind == KIND_UINT64), bits, np.uint64(0))
    if double_to_int:
        d = sv["float"].fill_null(0.0).to_numpy()
        dbl = kind == KIND_DOUBLE
        in_range = np.where((d > 0) & (d < U64_MAX_AS_DOUBLE), d, 0.0)  # negatives and NaN read 0
        clamped = np.where(d >= U64_MAX_AS_DOUBLE, np.uint64(2**64 - 1), np.trunc(in_range).astype(np.uint64))
        out = np.where(dbl, clamped, out)
    present[own] = True
    values[own] = out  # an owner with the stat twice: the last one
    return present, values


def counter_events(frame: XSpaceFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(event rows, counter ids, uint64 values) of every event with a counter value."""
    n_ev, n_md = frame.num_events, len(frame.raw.em_name)
    md = frame.events["metadata"].to_numpy().astype(np.int64)
    has_md = md >= 0
    ev_has_val, ev_val = _stat_as_u64(frame, "event", "counter_value", n_ev, True)
    md_has_val, md_val = _stat_as_u64(frame, "metadata", "counter_value", n_md, True)
    from_md = ~ev_has_val & has_md & md_has_val[np.where(has_md, md, 0)]
    rows = np.flatnonzero(ev_has_val | from_md)
    if not len(rows):
        return rows, np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    m = md[rows]
    mm = np.where(m >= 0, m, 0)
    values = np.where(ev_has_val[rows], ev_val[rows], md_val[mm])
    ev_has_id, ev_id = _stat_as_u64(frame, "event", "performance_counter_id", n_ev, False)
    md_has_id, md_id = _stat_as_u64(frame, "metadata", "performance_counter_id", n_md, False)
    counter = np.where(ev_has_id[rows], ev_id[rows], np.where((m >= 0) & md_has_id[mm], md_id[mm], np.uint64(0)))
    # No id (or 0): the event's metadata id stands in, as XProf's event.Id().
    em_id = np.asarray(frame.raw.em_id, np.int64)
    fallback = np.where(m >= 0, em_id[mm], 0).astype(np.int64).view(np.uint64)
    counter = np.where(counter == 0, fallback, counter)
    return rows, counter, values


def _chip_of(frame: XSpaceFrame, plane: int) -> tuple[int, str, Chip] | None:
    """(device id, device type, constants) of a supported TPU plane, else None."""
    if not frame.raw.plane_name[plane].startswith(schema.TPU_PLANE_PREFIX):
        return None
    stats = frame.plane_stat_map(plane)
    device, kind = stats.get("device_id"), stats.get("device_type_string")
    if not isinstance(device, (int, np.integer)) or device == -1 or kind not in CHIPS:
        return None
    return int(device), str(kind), CHIPS[str(kind)]


def host_utilization(frame: XSpaceFrame, host_index: int, host: str) -> pl.DataFrame:
    rows, counters, values = counter_events(frame)
    if not len(rows):
        return pl.DataFrame(schema=SCHEMA)
    raw = frame.raw
    # Events are stored line by line: the line of event r is the last non-empty line starting at or before r.
    filled = np.flatnonzero(np.asarray(raw.line_num_events) > 0)
    first = np.asarray(raw.line_first_event, np.int64)[filled]
    order = np.argsort(first, kind="stable")
    ev_line = filled[order][np.searchsorted(first[order], rows, side="right") - 1]
    parts = []
    for plane in np.unique(np.asarray(raw.line_plane)[ev_line]).tolist():
        found = _chip_of(frame, plane)
        if found is None:
            continue
        device, kind, chip = found
        needed = NEEDED[chip.v6e]
        sel = np.flatnonzero(np.asarray(raw.line_plane)[ev_line] == plane)
        lines = np.unique(ev_line[sel])  # line rows are in file order
        li = np.searchsorted(lines, ev_line[sel])
        pos = np.searchsorted(needed, counters[sel])
        known = (pos < len(needed)) & (needed[np.minimum(pos, len(needed) - 1)] == counters[sel])
        matrix = np.zeros((len(lines), len(needed)), np.uint64)
        # In event order the last value of a (line, counter) wins: assign the reversed last occurrences.
        keys = li[known] * len(needed) + pos[known]
        vals = values[sel][known]
        _, last = np.unique(keys[::-1], return_index=True)
        keep = len(keys) - 1 - last
        matrix.reshape(-1)[keys[keep]] = vals[keep]
        table = chip_rows(Samples(needed, matrix), chip)
        parts.append(_long_rows(table, host_index, host, device, kind,
                                np.asarray(raw.line_id, np.int64)[lines], [raw.line_name[ln] for ln in lines]))
    return pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)


def _long_rows(rows: Rows, host_index: int, host: str, device: int, kind: str, sample_ids: np.ndarray,
               kernels: list[str]) -> pl.DataFrame:
    """Row kinds x samples -> XProf's table order: sample by sample, each sample's rows in order."""
    mask = np.stack([k[5] for k in rows.kinds], axis=1)  # samples x kinds
    sample_idx, kind_idx = np.nonzero(mask)  # row-major: by sample, then kind
    achieved = np.stack([k[2] for k in rows.kinds], axis=1)[sample_idx, kind_idx]
    peak = np.stack([k[3] for k in rows.kinds], axis=1)[sample_idx, kind_idx]
    n = len(sample_idx)
    return pl.DataFrame({
        "host": np.full(n, host_index, np.int64), "device": np.full(n, device, np.int64),
        "sample": sample_ids[sample_idx], "node": np.array([rows.kinds[k][0] for k in range(len(rows.kinds))],
                                                           np.int64)[kind_idx],
        "name": np.array([k[1] for k in rows.kinds], dtype=object)[kind_idx].tolist(),
        "achieved": achieved, "peak": peak,
        "unit": np.array([k[4] for k in rows.kinds], dtype=object)[kind_idx].tolist(),
        "host_name": [host] * n, "device_type": [kind] * n,
        "kernel": np.array(kernels, dtype=object)[sample_idx].tolist(),
    }, schema=SCHEMA)


@dataclass
class UtilizationResult:
    rows: pl.DataFrame  # SCHEMA: XProf's eight columns, then host name, device type, line (kernel) name

    def to_json(self) -> dict[str, Any]:
        """XProf's DataTable, row for row (numbers as doubles)."""
        out = []
        for r in self.rows.select([c for c, _, _ in COLUMNS]).iter_rows():
            out.append({"c": [{"v": float(v) if isinstance(v, (int, float)) else v} for v in r]})
        return {"cols": [{"id": i, "label": label, "type": t} for i, t, label in COLUMNS], "rows": out}

    def with_percent(self) -> pl.DataFrame:
        """The rows with achieved / peak as a percentage (null where the peak is 0)."""
        return self.rows.with_columns(
            percent=pl.when(pl.col("peak") != 0).then(100.0 * pl.col("achieved") / pl.col("peak")))

    def sample_units(self, host: int, device: int, sample: int) -> pl.DataFrame:
        """One sample's rows in XProf's order (node, name, percent, achieved, peak, unit): the bars."""
        return self.with_percent().filter((pl.col("host") == host) & (pl.col("device") == device)
                                          & (pl.col("sample") == sample)).select(
            "node", "name", "percent", "achieved", "peak", "unit")

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"utilization": self.with_percent()}


def has_data(run: RunData) -> bool:
    """Listed only when a host has a TPU v6e / v7x chip and counter values (cheap: no event is read)."""
    return any(tool_facts.has_chip_counters(facts) for facts in host_map.host_facts(run)) if run.hosts else False


def _utilization(run: RunData, host: str, host_index: int) -> pl.DataFrame:
    """A host's rows; a giant host's from its TPU planes, a few at a time (each plane's rows
    depend on that plane alone): only the planes of a chip it knows, none when no plane names the
    counter stat."""
    if giant_host.pieces(run, host) is None:
        return host_utilization(run.frame(host), host_index, host)
    meta = giant_host.planes_without_lines(run, host, lambda n: n.startswith(schema.TPU_PLANE_PREFIX))
    chips = {meta.raw.plane_name[p] for p in range(len(meta.raw.plane_name)) if _chip_of(meta, p) is not None}
    if not chips or "counter_value" not in meta.raw.sm_name:
        return pl.DataFrame(schema=SCHEMA)
    parts = giant_host.over_planes(run, host, chips.__contains__,
                                   lambda frame: host_utilization(frame, host_index, host))
    return pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)


def analyze(run: RunData, host: str | None = None, **_options) -> UtilizationResult:
    hosts = run.require_hosts()
    chosen = [host] if host else hosts
    parts = [_utilization(run, h, hosts.index(h) if h in hosts else 0) for h in chosen]
    rows = pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)
    if not rows.height:
        raise NoDataError("no TPU v6e / v7x hardware counters in this profile (the utilization viewer reads the "
                          "`_counters_` samples those chips record)")
    return UtilizationResult(rows)

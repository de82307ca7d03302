"""Performance counters: the hardware counters a TPU (v6e, v7x) or GPU profile recorded.

XProf's `perf_counters` (xprof/convert/xplane_to_perf_counters.cc): for every `/device:TPU:` or
`/device:GPU:` plane with a `global_chip_id` (else `device_id`) plane stat, every event carrying a
`counter_value` stat is one row: host, chip, the line's name (the kernel, or `_counters_` for the
whole-program sample) and id (the sample), the event name lower-cased, the value, and the
`performance_counter_description` / `performance_counter_sets` stats. `to_json()` is XProf's
DataTable (the value as a number with its hex form), row for row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis import giant_host, host_map, tool_facts
from tputui.analysis.op_metrics import event_stat
from tputui.analysis.result import NoDataError
from tputui.data import schema
from tputui.data.run_data import RunData
from tputui.data.xspace import XSpaceFrame

COLUMNS = [("Host", "string", "Host"), ("Chip", "number", "Chip"), ("Kernel", "string", "Kernel"),
           ("Sample", "number", "Sample"), ("Counter", "string", "Counter"), ("Value", "number", "Value (Hex)"),
           ("Description", "string", "Description"), ("Set", "string", "Set")]
SCHEMA = {"host": pl.String, "chip": pl.Int64, "kernel": pl.String, "sample": pl.Int64, "counter": pl.String,
          "value": pl.UInt64, "description": pl.String, "set": pl.String}
U64 = 0xFFFFFFFFFFFFFFFF


def _chip_id(frame: XSpaceFrame, plane: int) -> int | None:
    stats = frame.plane_stat_map(plane)
    for key in ("global_chip_id", "device_id"):
        value = stats.get(key)
        if isinstance(value, (int, np.integer)):
            return int(value)
    return None


def _counter_plane(name: str) -> bool:
    return name.startswith(schema.TPU_PLANE_PREFIX) or name.startswith(schema.GPU_PLANE_PREFIX)


def host_counters(frame: XSpaceFrame, host: str) -> pl.DataFrame:
    raw = frame.raw
    has_value, values = event_stat(frame, "counter_value")
    # A double-valued sample is listed with value 0, as XProf reads counters as integers.
    has_double, _ = event_stat(frame, "counter_value", kind="float")
    values = np.where(has_value, values, 0)
    has_value = has_value | has_double
    if not has_value.any():
        return pl.DataFrame(schema=SCHEMA)
    _, desc = event_stat(frame, "performance_counter_description", kind="text")
    _, sets = event_stat(frame, "performance_counter_sets", kind="text")
    ev_md = frame.events["metadata"].to_numpy().astype(np.int64)
    parts = []
    for p, name in enumerate(raw.plane_name):
        if not _counter_plane(name):
            continue
        chip = _chip_id(frame, p)
        if chip is None:
            continue
        for ln in frame.lines_of(p):
            sl = frame.line_events(ln)
            rows = np.arange(sl.start, sl.stop)[has_value[sl.start:sl.stop]]
            if not len(rows):
                continue
            parts.append(pl.DataFrame({
                "host": [host] * len(rows), "chip": [chip] * len(rows),
                "kernel": [raw.line_name[ln]] * len(rows), "sample": [int(raw.line_id[ln])] * len(rows),
                "counter": [raw.em_name[m].lower() if m >= 0 else "" for m in ev_md[rows]],
                "value": [int(v) & U64 for v in values[rows]],
                "description": [frame.text(int(t)) if t >= 0 else "" for t in desc[rows]],
                "set": [frame.text(int(t)) if t >= 0 else "" for t in sets[rows]],
            }, schema=SCHEMA))
    return pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)


@dataclass
class PerfCountersResult:
    counters: pl.DataFrame  # one row per counter sample (SCHEMA)

    def per_chip(self, counter: str) -> pl.DataFrame:
        """One counter's values by chip and sample (for the screen's bars)."""
        return self.counters.filter(pl.col("counter") == counter).select("host", "chip", "kernel", "sample", "value")

    def to_json(self) -> dict[str, Any]:
        rows = []
        for r in self.counters.iter_rows(named=True):
            rows.append({"c": [{"v": r["host"]}, {"v": float(r["chip"])}, {"v": r["kernel"]}, {"v": float(r["sample"])},
                               {"v": r["counter"]}, {"f": f"0x{r['value']:x}", "v": float(r["value"])},
                               {"v": r["description"]}, {"v": r["set"]}]})
        return {"cols": [{"id": i, "label": label, "type": t} for i, t, label in COLUMNS], "rows": rows}

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"counters": self.counters.with_columns(value_hex=pl.col("value").map_elements(
            lambda v: f"0x{v:x}", return_dtype=pl.String))}


def has_data(run: RunData) -> bool:
    return any(tool_facts.COUNTERS in facts for facts in host_map.host_facts(run)) if run.hosts else False


def _counters(run: RunData, host: str) -> pl.DataFrame:
    """A host's counter rows; a giant host's from its device planes, a few at a time (each plane's
    rows depend on that plane alone), none read when no plane names the counter stat."""
    if giant_host.pieces(run, host) is None:
        return host_counters(run.frame(host), host)
    if "counter_value" not in giant_host.planes_without_lines(run, host, _counter_plane).raw.sm_name:
        return pl.DataFrame(schema=SCHEMA)
    parts = giant_host.over_planes(run, host, _counter_plane, lambda frame: host_counters(frame, host))
    return pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)


def analyze(run: RunData, host: str | None = None, **_options) -> PerfCountersResult:
    hosts = [host] if host else run.require_hosts()
    frames = [_counters(run, h) for h in hosts]
    counters = pl.concat(frames) if frames else pl.DataFrame(schema=SCHEMA)
    if not counters.height:
        raise NoDataError("no hardware performance counters in this profile (TPU v6e / v7x or GPU captures with "
                          "counter sampling record them)")
    return PerfCountersResult(counters)

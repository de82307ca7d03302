"""Two runs compared: what `tputui diff` reports and the diff screen draws.

Built only from the tools' public results (`to_json()` / `tables()` of overview_page, hlo_stats,
framework_op_stats and memory_profile), one `Side` per run; no profile is read here.

- step time: count, mean, median, min, max, sigma of each side's steps (ms) and the change of the
  mean in percent; the per-category step breakdown (mean ms per step) side by side.
- KPIs: the overview page's figures (device / host idle, duty cycle, FLOPS and HBM utilization, ...)
  and its bottleneck words, A, B and B - A.
- op deltas: HLO ops matched by (program id, op name), those left over by op name alone (program ids
  change between compilations); framework ops by (host/device, type, name). Time is the total self
  time (us), with occurrences and the FLOP rate (GFLOP/s: HLO stats' model rate, framework op stats'
  measured rate); rows sorted by |B - A| time, largest first;
  an op found on one side only says so in `only_in`.
- memory: each allocator's peaks and counts (memory profile), A, B and B - A.
- the gate: B's mean step time against A's, or, without steps, the device op time (the host op time
  on profiles without device ops); `slower_than(pct)` says whether B is more than pct percent worse.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

# The overview figures compared, in the order shown.
KPIS = (
    ("device_idle_time_percent", "Device idle %"),
    ("host_idle_time_percent", "Host idle %"),
    ("device_duty_cycle_percent", "Device duty cycle %"),
    ("flop_rate_utilization_relative_to_roofline_percent", "FLOPS utilization %"),
    ("memory_bw_utilization_relative_to_hw_limit_percent", "HBM bandwidth utilization %"),
    ("mxu_utilization_percent", "MXU utilization %"),
    ("hbm_utilization_percent", "HBM utilization %"),
    ("device_compute_16bit_percent", "Device compute 16-bit %"),
    ("device_compute_32bit_percent", "Device compute 32-bit %"),
    ("host_tf_op_percent", "Host op time %"),
    ("device_tf_op_percent", "Device op time %"),
)
MEMORY_FIGURES = ("peak_bytes_in_use", "peak_heap_usage_bytes", "stack_reserved_bytes", "num_allocations",
                  "num_deallocations", "fragmentation")
OP_COLUMNS = ("name", "only_in", "a_time_us", "b_time_us", "delta_us", "delta_pct", "a_occurrences",
              "b_occurrences", "a_flop_rate_gflops", "b_flop_rate_gflops")
_OP_SCHEMA = {"name": pl.String, "only_in": pl.String, "a_time_us": pl.Float64, "b_time_us": pl.Float64,
              "delta_us": pl.Float64, "delta_pct": pl.Float64, "a_occurrences": pl.Int64,
              "b_occurrences": pl.Int64, "a_flop_rate_gflops": pl.Float64, "b_flop_rate_gflops": pl.Float64}


@dataclass
class Side:
    """One run's tool results (None where the tool has no data) and where the run came from."""

    label: str  # what the user named ("logs/run_a", "2026_11_22_12_58_45")
    run: str
    hosts: list[str]
    overview: Any = None
    hlo_stats: Any = None
    framework_op_stats: Any = None
    memory_profile: Any = None
    notes: list[str] = field(default_factory=list)  # "no <tool>: why", hosts left out: one line each
    path: str = ""  # the run's folder (or URL)


def _pct(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not a:
        return None
    return (b - a) / a * 100.0


def step_stats(side: Side) -> dict[str, Any] | None:
    """count, mean / median / min / max / sigma (ms) of the side's step times; None without steps."""
    if side.overview is None:
        return None
    steps = side.overview.tables().get("steps")
    if steps is None or steps.height == 0:
        return None
    t = steps["step_time_ms"].cast(pl.Float64).to_numpy()
    return {"count": len(t), "mean_ms": float(t.mean()), "median_ms": float(np.median(t)),
            "min_ms": float(t.min()), "max_ms": float(t.max()),
            "stddev_ms": float(t.std(ddof=1)) if len(t) > 1 else 0.0}


def breakdown(a: Side, b: Side) -> pl.DataFrame:
    """Mean ms per step of each step-time category, A and B."""
    def cats(side: Side) -> dict[str, float]:
        if side.overview is None or step_stats(side) is None:
            return {}
        summary = side.overview.to_json().get("step_time_breakdown_ms") or {}
        return {k.removesuffix("_ms"): float(v.get("avg", 0.0)) for k, v in summary.items()}

    ca, cb = cats(a), cats(b)
    names = list(dict.fromkeys([*ca, *cb]))
    rows = [(n, ca.get(n), cb.get(n)) for n in names]
    return _delta_frame(rows, "category", "a_ms", "b_ms", "delta_ms")


def _delta_frame(rows: list[tuple], key: str, a: str, b: str, delta: str) -> pl.DataFrame:
    frame = pl.DataFrame(rows, schema={key: pl.String, a: pl.Float64, b: pl.Float64}, orient="row")
    return frame.with_columns((pl.col(b) - pl.col(a)).alias(delta),
                              pl.when(pl.col(a) != 0).then((pl.col(b) - pl.col(a)) / pl.col(a) * 100)
                              .alias("delta_pct"))


def kpis(a: Side, b: Side) -> pl.DataFrame:
    ja = a.overview.to_json() if a.overview is not None else {}
    jb = b.overview.to_json() if b.overview is not None else {}
    shown = [(key, label) for key, label in KPIS if key in ja or key in jb]
    rows = [(label, _num(ja.get(key)), _num(jb.get(key))) for key, label in shown]
    # `key`: the overview page's JSON field, for scripts.
    return _delta_frame(rows, "kpi", "a", "b", "delta").with_columns(
        pl.Series("key", [key for key, _ in shown], dtype=pl.String))


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def bottlenecks(a: Side, b: Side) -> dict[str, str]:
    """The overview's input-bound classification and statement of each side."""
    out = {}
    for key, side in (("a", a), ("b", b)):
        j = side.overview.to_json() if side.overview is not None else {}
        out[key] = j.get("bottleneck") or ""
        out[f"{key}_statement"] = j.get("statement") or j.get("input_conclusion") or ""
    return out


def _hlo_rows(side: Side) -> pl.DataFrame:
    if side.hlo_stats is None:
        return pl.DataFrame(schema={"program_id": pl.String, "name": pl.String, "category": pl.String,
                                    "time_us": pl.Float64, "occurrences": pl.Int64, "flops_rate": pl.Float64})
    t = side.hlo_stats.tables()["hlo_stats"]
    return t.select(pl.col("program_id").cast(pl.String), pl.col("hlo_op_name").alias("name"),
                    pl.col("category").cast(pl.String), pl.col("total_self_time").cast(pl.Float64).alias("time_us"),
                    pl.col("occurrences").cast(pl.Int64),
                    pl.col("model_flop_rate").cast(pl.Float64).alias("flops_rate"))


def _framework_rows(side: Side) -> pl.DataFrame:
    if side.framework_op_stats is None:
        return pl.DataFrame(schema={"side": pl.String, "type": pl.String, "name": pl.String, "time_us": pl.Float64,
                                    "occurrences": pl.Int64, "flops_rate": pl.Float64})
    t = side.framework_op_stats.tables()["framework_op_stats"]
    return t.select(pl.col("host_or_device").alias("side"), pl.col("op_type").alias("type"),
                    pl.col("op_name").alias("name"), pl.col("total_self_time_us").cast(pl.Float64).alias("time_us"),
                    pl.col("occurrences").cast(pl.Int64),
                    pl.col("measured_flop_rate").cast(pl.Float64).alias("flops_rate"))


def _summed(frame: pl.DataFrame, keys: list[str], keep: list[str]) -> pl.DataFrame:
    """One row per key: times and occurrences added, the FLOP rate time-weighted."""
    return frame.group_by(keys, maintain_order=True).agg(
        *[pl.col(c).first() for c in keep],
        pl.col("time_us").sum(), pl.col("occurrences").sum(),
        ((pl.col("flops_rate") * pl.col("time_us")).sum() / pl.col("time_us").sum()).fill_nan(0.0)
        .alias("flops_rate"))


def _match(a: pl.DataFrame, b: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    j = a.join(b, on=keys, how="full", suffix="_b", coalesce=True, nulls_equal=True)
    return j.rename({c: c + "_a" for c in ("time_us", "occurrences", "flops_rate")})


def _finish(j: pl.DataFrame, extra: list[str]) -> pl.DataFrame:
    out = j.select(
        *extra, "name",
        pl.when(pl.col("time_us_a").is_null()).then(pl.lit("B"))
        .when(pl.col("time_us_b").is_null()).then(pl.lit("A")).otherwise(pl.lit("")).alias("only_in"),
        pl.col("time_us_a").fill_null(0.0).alias("a_time_us"), pl.col("time_us_b").fill_null(0.0).alias("b_time_us"),
        pl.col("occurrences_a").fill_null(0).alias("a_occurrences"),
        pl.col("occurrences_b").fill_null(0).alias("b_occurrences"),
        pl.col("flops_rate_a").fill_null(0.0).alias("a_flop_rate_gflops"),
        pl.col("flops_rate_b").fill_null(0.0).alias("b_flop_rate_gflops"),
    ).with_columns(delta_us=pl.col("b_time_us") - pl.col("a_time_us"))
    out = out.with_columns(delta_pct=pl.when(pl.col("a_time_us") != 0)
                           .then(pl.col("delta_us") / pl.col("a_time_us") * 100))
    order = [*extra, *OP_COLUMNS]
    # Largest change first; among equal changes (a run against itself) the most time first.
    return out.select(order).sort(pl.col("delta_us").abs(), pl.max_horizontal("a_time_us", "b_time_us"), "name",
                                  descending=[True, True, False], maintain_order=True)


def hlo_op_deltas(a: Side, b: Side) -> pl.DataFrame:
    """HLO ops: matched by (program id, name), then what is left by name alone."""
    ra = _summed(_hlo_rows(a), ["program_id", "name"], ["category"])
    rb = _summed(_hlo_rows(b), ["program_id", "name"], ["category"])
    j = _match(ra, rb, ["program_id", "name"])
    both = j.filter(pl.col("time_us_a").is_not_null() & pl.col("time_us_b").is_not_null())
    left_a = j.filter(pl.col("time_us_b").is_null()).select("program_id", "name", "category", *[
        pl.col(c + "_a").alias(c) for c in ("time_us", "occurrences", "flops_rate")])
    left_b = j.filter(pl.col("time_us_a").is_null()).select("program_id", "name", pl.col("category_b").alias(
        "category"), *[pl.col(c + "_b").alias(c) for c in ("time_us", "occurrences", "flops_rate")])
    # Program ids change between compilations: match what is left by op name (per-name sums).
    by_name = _match(_summed(left_a, ["name"], ["program_id", "category"]),
                     _summed(left_b, ["name"], ["program_id", "category"]), ["name"])
    both = both.select("name", pl.col("program_id").alias("program_a"), pl.col("program_id").alias("program_b"),
                       pl.coalesce("category", "category_b").alias("category"),
                       *[pl.col(f"{c}_{s}") for s in "ab" for c in ("time_us", "occurrences", "flops_rate")])
    rest = by_name.select("name", pl.col("program_id").alias("program_a"), pl.col("program_id_b").alias("program_b"),
                          pl.coalesce("category", "category_b").alias("category"),
                          *[pl.col(f"{c}_{s}") for s in "ab" for c in ("time_us", "occurrences", "flops_rate")])
    return _finish(pl.concat([both, rest]), ["program_a", "program_b", "category"])


def framework_op_deltas(a: Side, b: Side) -> pl.DataFrame:
    keys = ["side", "type", "name"]
    j = _match(_summed(_framework_rows(a), keys, []), _summed(_framework_rows(b), keys, []), keys)
    return _finish(j.rename({"side": "host_or_device", "type": "op_type"}), ["host_or_device", "op_type"])


def memory_deltas(a: Side, b: Side) -> pl.DataFrame:
    def figures(side: Side) -> dict[tuple[str, str], float]:
        if side.memory_profile is None:
            return {}
        out = {}
        for r in side.memory_profile.tables()["summary"].iter_rows(named=True):
            for f in MEMORY_FIGURES:
                if r.get(f) is not None:
                    out[(r["memory_id"], f)] = float(r[f])
        return out

    fa, fb = figures(a), figures(b)
    keys = list(dict.fromkeys([*fa, *fb]))
    frame = pl.DataFrame([(k[0], k[1], fa.get(k), fb.get(k)) for k in keys], orient="row",
                         schema={"allocator": pl.String, "figure": pl.String, "a": pl.Float64, "b": pl.Float64})
    return frame.with_columns(delta=pl.col("b") - pl.col("a"))


def _device_time_us(side: Side) -> tuple[float | None, str]:
    """The side's device op self time (us), or its host op time when it has no device ops."""
    if side.framework_op_stats is None:
        return None, ""
    t = _framework_rows(side).filter(pl.col("type") != "IDLE")
    dev = t.filter(pl.col("side") == "Device")
    if dev.height:
        return float(dev["time_us"].sum()), "device op time"
    host = t.filter(pl.col("side") == "Host")
    return (float(host["time_us"].sum()), "host op time") if host.height else (None, "")


@dataclass
class RunDiff:
    a: Side
    b: Side
    step_a: dict | None
    step_b: dict | None
    step_breakdown: pl.DataFrame
    kpis: pl.DataFrame
    bottleneck: dict[str, str]
    hlo_ops: pl.DataFrame
    framework_ops: pl.DataFrame
    memory: pl.DataFrame
    gate: dict[str, Any]

    def slower_than(self, pct: float) -> bool:
        d = self.gate.get("delta_pct")
        return d is not None and d > pct

    def to_json(self) -> dict[str, Any]:
        def side(s: Side) -> dict:
            return {"label": s.label, "run": s.run, "path": s.path, "hosts": s.hosts, "notes": s.notes}

        return {
            "tool": "diff", "a": side(self.a), "b": side(self.b),
            "step_time": {"a": self.step_a, "b": self.step_b,
                          "delta_pct": _pct(*(s["mean_ms"] if s else None for s in (self.step_a, self.step_b)))},
            "step_breakdown": self.step_breakdown.to_dicts(),
            "kpis": self.kpis.to_dicts(), "bottleneck": self.bottleneck,
            "hlo_ops": self.hlo_ops.to_dicts(), "framework_ops": self.framework_ops.to_dicts(),
            "memory": self.memory.to_dicts(),
            "only_in_a": {"hlo_ops": _only(self.hlo_ops, "A"), "framework_ops": _only(self.framework_ops, "A")},
            "only_in_b": {"hlo_ops": _only(self.hlo_ops, "B"), "framework_ops": _only(self.framework_ops, "B")},
            "gate": self.gate,
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        ops = pl.concat([
            self.hlo_ops.select(pl.lit("hlo").alias("table"), pl.lit("Device").alias("side"),
                                pl.col("category").alias("kind"), *OP_COLUMNS),
            self.framework_ops.select(pl.lit("framework").alias("table"), pl.col("host_or_device").alias("side"),
                                      pl.col("op_type").alias("kind"), *OP_COLUMNS)])
        ops = ops.sort(pl.col("delta_us").abs(), descending=True, maintain_order=True)
        return {"ops": ops, "hlo_ops": self.hlo_ops, "framework_ops": self.framework_ops, "kpis": self.kpis,
                "step_breakdown": self.step_breakdown, "memory": self.memory, "step_time": self.step_time_table()}

    def step_time_table(self) -> pl.DataFrame:
        names = ("count", "mean_ms", "median_ms", "min_ms", "max_ms", "stddev_ms")
        rows = [(n, _num((self.step_a or {}).get(n)), _num((self.step_b or {}).get(n))) for n in names]
        return _delta_frame(rows, "figure", "a", "b", "delta")


def _only(ops: pl.DataFrame, side: str) -> list[str]:
    return ops.filter(pl.col("only_in") == side)["name"].to_list()


def diff(a: Side, b: Side) -> RunDiff:
    sa, sb = step_stats(a), step_stats(b)
    if sa and sb:
        gate = {"measure": "mean step time", "unit": "ms", "a": sa["mean_ms"], "b": sb["mean_ms"]}
    else:
        (ta, wa), (tb, wb) = _device_time_us(a), _device_time_us(b)
        measure = wa if wa == wb else (wa or wb)
        gate = {"measure": measure or "none", "unit": "us", "a": ta, "b": tb}
    gate["delta_pct"] = _pct(gate["a"], gate["b"])
    return RunDiff(a, b, sa, sb, breakdown(a, b), kpis(a, b), bottlenecks(a, b), hlo_op_deltas(a, b),
                   framework_op_deltas(a, b), memory_deltas(a, b), gate)

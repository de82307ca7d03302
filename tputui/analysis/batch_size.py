"""The batch size of a run, for the run environment (issue #31). XProf derives none: its
RunEnvironment has no batch field (the old `per_core_batch_size` is gone).

Recorded: a positive `batch_size` stat on an event, event metadata or plane (tf.data's batching
iterators carry one: `Iterator::...::MapAndBatch`, `...::BatchV2`). Otherwise derived from the step
function's XLA program: its entry computation's parameters, model state left out (JAX names them by
argument path: `params[0][0]`, `opt_state...`, `key`), hold the batch as their leading dimension; the
batch is the leading dimension most of them share (a tie: the higher-rank input's, then the
earlier argument's). The step function is the program named like one
(`train`, `step`, `update`), the largest such when there are several; none: no derived batch. In an
SPMD-partitioned program the parameters are one core's share, so a batch-sharded leading dimension
is multiplied back by its tile count.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import polars as pl

from tputui.analysis.hlo_modules import HloModuleEntry
from tputui.analysis.result import NoDataError
from tputui.data.xspace import XSpaceFrame

BATCH_SIZE_STAT = "batch_size"
STEP_PROGRAM = re.compile(r"train|step|update", re.IGNORECASE)
# Argument names that hold model state, not a batch (JAX's argument paths, e.g. `params[0][1]`).
STATE_ARGUMENTS = {"params", "param", "state", "opt_state", "optimizer_state", "variables", "weights", "ws",
                   "key", "rng", "keys", "rngs", "model", "train_state", "w", "b", "theta", "kernel", "bias",
                   "weight"}


@dataclass(frozen=True)
class BatchSize:
    value: int
    source: str  # "recorded" (a batch_size stat) | "derived" (the step program's input shapes)
    detail: str  # what carries it: the event / plane name, or the program and its inputs
    values: tuple[int, ...] = ()  # every recorded value (several pipelines may batch differently)

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "detail": self.detail,
                "values": list(self.values or (self.value,))}

    def text(self) -> str:
        return f"{self.value:,} ({self.source}: {self.detail})"


def recorded_batch_sizes(frame: XSpaceFrame) -> tuple[list[int], str]:
    """The distinct positive `batch_size` stat values on events, event metadata or planes, and
    the name of what carries the first one (e.g. tf.data's `Iterator::...::MapAndBatch`)."""
    found: list[int] = []
    source = ""
    for owner in ("event", "metadata", "plane"):
        v = frame.stat_values(owner, BATCH_SIZE_STAT).filter(pl.col("int") > 0)
        if not len(v):
            continue
        if not source:
            row = int(v["owner"][0])
            if owner == "event":
                source = frame.raw.em_name[int(frame.events["metadata"][row])]
            elif owner == "metadata":
                source = frame.raw.em_name[row]
            else:
                source = frame.raw.plane_name[row]
        found += v["int"].unique().to_list()
    return sorted(set(found)), source


def _argument(op_name: str, fallback: str) -> str:
    """The argument's root name: `params` of `params[0][1]`, `x` of `x`."""
    return re.split(r"[\[.']", op_name or fallback, maxsplit=1)[0]


def derived_batch_size(modules: list[HloModuleEntry]) -> BatchSize | None:
    """The batch from the step program's inputs (an unreadable program is left out)."""
    steps = []
    for m in modules:
        if STEP_PROGRAM.search(m.module_name):
            try:
                steps.append((m.name, m.parse()))
            except NoDataError:
                continue
    if not steps:
        return None
    name, proto = max(steps, key=lambda m: (sum(len(c.instructions) for c in m[1].hlo_module.computations), m[0]))
    module = proto.hlo_module
    entry = next((c for c in module.computations if c.id == module.entry_computation_id), None)
    if entry is None:
        return None
    partitioned = entry.name.endswith("_spmd")  # XLA's name for an SPMD-partitioned entry
    inputs: list[tuple[int, str, int, int, int]] = []  # (parameter number, argument, leading dim, tiles, rank)
    for ins in entry.instructions:
        dims = list(ins.shape.dimensions)
        if ins.opcode != "parameter" or not dims or _argument(ins.metadata.op_name, ins.name) in STATE_ARGUMENTS:
            continue
        tiles = 1
        if partitioned and ins.HasField("sharding") and list(ins.sharding.tile_assignment_dimensions):
            tiles = int(ins.sharding.tile_assignment_dimensions[0])
        inputs.append((int(ins.parameter_number), ins.metadata.op_name or ins.name, int(dims[0]) * tiles, tiles,
                       len(dims)))
    if not inputs:
        return None
    counts = Counter(d for _, _, d, _, _ in inputs)
    rank = {d: max(r for _, _, dd, _, r in inputs if dd == d) for d in counts}
    first = {d: min(p for p, _, dd, _, _ in inputs if dd == d) for d in counts}
    # The most shared leading dimension; a tie: the one of the highest-rank input (rows of a matrix rather
    # than a vector's length), then of the earliest argument.
    batch = max(counts, key=lambda d: (counts[d], rank[d], -first[d]))
    carriers = [(arg, tiles) for _, arg, d, tiles, _ in sorted(inputs) if d == batch]
    per_core = f", {batch // carriers[0][1]:,} per core x {carriers[0][1]}" if carriers[0][1] > 1 else ""
    return BatchSize(batch, "derived", f"leading dimension of {', '.join(a for a, _ in carriers[:3])} "
                                       f"in {name}{per_core}")


def host_batch_size(frame: XSpaceFrame, modules: list[HloModuleEntry]) -> BatchSize | None:
    """A host's batch size: recorded when the profile has one, else derived from `modules`."""
    values, source = recorded_batch_sizes(frame)
    if values:
        return BatchSize(values[0], "recorded", f"batch_size stat on {source}", tuple(values))
    return derived_batch_size(modules)


def run_batch_size(per_host: list[BatchSize | None]) -> BatchSize | None:
    """The run's batch size over its hosts: the recorded values of every host, else the first
    host's derived one."""
    recorded = [b for b in per_host if b is not None and b.source == "recorded"]
    if recorded:
        values = tuple(sorted({v for b in recorded for v in b.values}))
        return BatchSize(values[0], "recorded", recorded[0].detail, values)
    return next((b for b in per_host if b is not None), None)

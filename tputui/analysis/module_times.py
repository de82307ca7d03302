"""How long each XLA program ran, for ordering the module pickers and picking the graph viewer's
first module (the training step, not the largest proto: an unrolled `jit__randint` can be larger).

On TPU the op stats hold it already: the device ops' self time summed per program id. A CPU
profile has no device ops: its host plane's `PjitFunction(<fn>)` events are the runs of the
programs named `jit_<fn>(<id>)` (one event kind; the plane read without its other events). A
module with neither has no time (0) and sorts last.
"""
from __future__ import annotations

import re

import polars as pl

from tputui.analysis import host_map
from tputui.analysis.hlo_modules import HloModuleEntry
from tputui.data import schema
from tputui.data.event_subset import events_named
from tputui.data.run_data import RunData

_JIT = re.compile(r"^jit_(.+)$")


def module_times(run: RunData, host: str | None, modules: list[HloModuleEntry]) -> dict[str, int]:
    """Module name -> picoseconds it ran (0 when unknown)."""
    times = dict.fromkeys((m.name for m in modules), 0)
    if host_map.has_device_ops(run):
        ops = host_map.run_device_ops(run, host).ops
        per_program = dict(ops.group_by("program_id").agg(pl.col("self_time_ps").sum()).iter_rows())
        for m in modules:
            times[m.name] = int(per_program.get(m.program_id, 0))
        return times
    functions = {m.name: f"PjitFunction({fn.group(1)})" for m in modules if (fn := _JIT.match(m.module_name))}
    if not functions:
        return times
    ran: dict[str, int] = {}
    hosts = {m.host for m in modules}
    for hf in run.run.hosts:
        if hf.host not in hosts or hf.host in run.unreadable:
            continue
        frame = events_named(hf, schema.HOST_PLANE, set(functions.values()))
        if frame is None or frame.events.height == 0:
            continue
        names = frame.event_metadata.select(pl.col("metadata"), pl.col("name"))
        per_name = frame.events.join(names, on="metadata").group_by("name").agg(pl.col("duration_ps").sum())
        for name, ps in per_name.iter_rows():
            ran[name] = ran.get(name, 0) + int(ps)
    for module, function in functions.items():
        times[module] = ran.get(function, 0)
    return times

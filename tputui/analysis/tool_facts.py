"""Which tools have data on a host, decided once in the op-stats map and kept in its HostOpStats.

The tool picker and `export --list` ask which tools have data. Several tools' answers need more
than the op stats (memory events, MegaScale events, counter samples, tf.data iterators): asking the
frame each time means decoding a host (seconds and gigabytes on a big profile). The map already
holds the host's whole frame, so it notes these facts there; a cached HostOpStats then answers
without reading the host file again.

Each fact is a cheap look at the frame (metadata names, plane stats, one stat's presence).
"""
from __future__ import annotations

import numpy as np

from tputui.data import schema
from tputui.data.xspace import XSpaceFrame

MEMORY_EVENTS = "memory_events"  # MemoryAllocation / MemoryDeallocation on the host plane
MEGASCALE = "megascale"  # `MegaScale:` events on the host plane (DCN collectives)
COUNTERS = "counters"  # `counter_value` stat on some event (hardware counters)
COUNTER_METADATA = "counter_metadata"  # `counter_value` stat on some event metadata
COUNTER_CHIP = "counter_chip"  # a TPU plane of a chip whose counters the utilization viewer reads
TF_DATA = "tf_data"  # `Iterator::` events (tf.data pipelines)
# Facts of a part of a host (a piece read apart) union into the host's; a fact that needs two
# parts at once (a chip plane and counter values) is asked of the union (has_chip_counters).

MEMORY_EVENT_NAMES = ("MemoryAllocation", "MemoryDeallocation")
# The chips whose counters the utilization viewer reads (its CHIPS table; a test keeps them equal).
COUNTER_CHIP_TYPES = frozenset({"TPU v6 Lite", "TPU v7x"})


def has_megascale_events(frame: XSpaceFrame) -> bool:
    """XProf lists megascale stats where the host plane has `MegaScale:` event metadata."""
    return any(n.startswith("MegaScale:") for n in _host_plane_names(frame))


def has_memory_events(frame: XSpaceFrame) -> bool:
    return any(n in MEMORY_EVENT_NAMES for n in _host_plane_names(frame))


def _host_plane_names(frame: XSpaceFrame) -> list[str]:
    p = frame.plane_index(schema.HOST_PLANE)
    if p is None:
        return []
    return [n for n, plane in zip(frame.raw.em_name, frame.raw.em_plane) if plane == p]


def has_counter_events(frame: XSpaceFrame) -> bool:
    if "counter_value" not in frame.raw.sm_name:  # no event can carry it: skip the stat scan
        return False
    return frame.stat_values("event", "counter_value").height > 0


def has_counter_metadata(frame: XSpaceFrame) -> bool:
    if "counter_value" not in frame.raw.sm_name:
        return False
    return frame.stat_values("metadata", "counter_value").height > 0


def has_counter_chip(frame: XSpaceFrame) -> bool:
    """A TPU plane of a chip the utilization viewer knows (its device id and type)."""
    for p in frame.planes_named(schema.TPU_PLANE_PREFIX):
        stats = frame.plane_stat_map(p)
        device = stats.get("device_id")
        if isinstance(device, (int, np.integer)) and device != -1 and stats.get("device_type_string") in COUNTER_CHIP_TYPES:
            return True
    return False


def has_chip_counters(facts: frozenset[str]) -> bool:
    """The utilization viewer's data: a known chip and counter values (event or metadata)."""
    return COUNTER_CHIP in facts and bool({COUNTERS, COUNTER_METADATA} & facts)


def has_tf_data(frame: XSpaceFrame) -> bool:
    return any(n.startswith("Iterator::") for n in frame.raw.em_name)


CHECKS = {MEMORY_EVENTS: has_memory_events, MEGASCALE: has_megascale_events, COUNTERS: has_counter_events,
          COUNTER_METADATA: has_counter_metadata, COUNTER_CHIP: has_counter_chip, TF_DATA: has_tf_data}


def frame_facts(frame: XSpaceFrame) -> frozenset[str]:
    """The facts that hold on this host's frame."""
    return frozenset(name for name, check in CHECKS.items() if check(frame))

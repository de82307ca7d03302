"""How much HBM one device of a profile has, and what the memory viewer's peak leaves of it.

Profiles do not record TPU memory capacity, so it comes from the device type (the device planes'
`device_type_string`) and Cloud TPU's published HBM per device: one JAX device is a TensorCore on
v2 / v3 (8 / 16 GiB each), a chip elsewhere (v4 32 GiB, v5e 16 GiB, v5p 95 GiB, v6e 32 GiB,
v7x 192 GiB). GPU device planes carry their own `memory_size` stat. Anything else: unknown (None).
"""
from __future__ import annotations

from dataclasses import dataclass

from tputui.analysis import giant_host, host_map
from tputui.analysis.op_stats import HostOpStats
from tputui.data import schema
from tputui.data.run_data import RunData

GIB = 1 << 30
# (words of device_type_string, lower case) -> (GiB per device, generation); the first match wins,
# so "v5 lite" comes before "v5".
_TPU_HBM_GIB = (
    (("v7",), 192, "TPU v7x"), (("v6",), 32, "TPU v6e"), (("v5 lite", "v5e", "v5lite"), 16, "TPU v5e"),
    (("v5p", "v5"), 95, "TPU v5p"), (("v4",), 32, "TPU v4"), (("v3",), 16, "TPU v3 core"),
    (("v2",), 8, "TPU v2 core"),
)
GPU_MEMORY_STAT = "memory_size"  # XProf's device capability stat on GPU planes, bytes


@dataclass(frozen=True)
class Capacity:
    bytes: int
    source: str  # how we know it, for the screen and JSON


def tpu_capacity(device_type: str) -> Capacity | None:
    t = device_type.lower()
    if "tpu" not in t:
        return None
    for words, gib, name in _TPU_HBM_GIB:
        if any(w in t for w in words):
            return Capacity(gib * GIB, f"{name} published HBM ({gib} GiB per device; device type {device_type!r})")
    return None


FIRST_DEVICES = (schema.TPU_PLANE_PREFIX + "0", schema.GPU_PLANE_PREFIX + "0")


# Above this, a riegeli host's device plane is too much to merge for one figure (a .xplane.pb's
# plane stats are read without its events).
PLANE_READ_MAX_BYTES = 256 << 20


def device_kind(run: RunData, host: str) -> str:
    """'TPU', 'GPU' or 'CPU' (no device plane: the programs ran on the host), '' when unknown
    (a host too big to read one plane of): the memory viewer names memory space 0 by it."""
    hf = run.host_file(host)
    stats = host_map.known_op_stats(run, [hf.host]).get(hf.host)
    if isinstance(stats, HostOpStats):
        return "CPU" if stats.hardware == "CPU_ONLY" else stats.hardware
    if hf.size > PLANE_READ_MAX_BYTES and run.whole_frame_if_loaded(host) is None:
        return ""
    fr = run.whole_frame_if_loaded(host) or run.frame(host, planes=FIRST_DEVICES)
    for name in fr.raw.plane_name:
        if name in FIRST_DEVICES:
            return "GPU" if name.startswith("/device:GPU") else "TPU"
    return "CPU"


def device_capacity(run: RunData, host: str) -> Capacity | None:
    """The HBM of one device of `host`: from the host's op stats when this process or the cache has
    them, else from its first TPU or GPU device plane's stats (a riegeli host's plane decoded, on
    files up to PLANE_READ_MAX_BYTES: the memory viewer otherwise reads the HLO metadata only)."""
    hf = run.host_file(host)
    stats = host_map.known_op_stats(run, [hf.host]).get(hf.host)
    if isinstance(stats, HostOpStats):
        return tpu_capacity(stats.device_type) if stats.hardware == "TPU" else None
    fr = run.whole_frame_if_loaded(host)
    if fr is None and hf.format == "pb":  # the plane's stats without its events: cheap at any size
        fr = giant_host.planes_without_lines(run, host, FIRST_DEVICES.__contains__)
    if fr is None:
        if hf.size > PLANE_READ_MAX_BYTES:
            return None
        fr = run.frame(host, planes=FIRST_DEVICES)
    for p, name in enumerate(fr.raw.plane_name):
        if name not in FIRST_DEVICES:
            continue
        st = fr.plane_stat_map(p)
        if name.startswith("/device:GPU"):
            size = st.get(GPU_MEMORY_STAT)
            return Capacity(int(size), "the GPU plane's memory_size") if isinstance(size, int) and size > 0 else None
        return tpu_capacity(str(st.get(schema.STAT_DEVICE_TYPE_STRING) or ""))
    return None


@dataclass(frozen=True)
class Headroom:
    capacity_bytes: int | None
    capacity_source: str
    headroom_bytes: int | None  # capacity - peak (negative: does not fit)
    fits: bool | None
    batch_factor: float | None  # how many times larger the temporaries could grow and still fit
    advice: str


def headroom(peak_bytes: int, temporary_bytes: int, capacity: Capacity | None) -> Headroom:
    """What the peak leaves of the device's HBM, and the "increase the batch size" advice with how
    much larger would fit: the temporaries at the peak (activations) are taken to grow with the
    batch, the buffers live for the whole program (parameters, outputs, constants) not."""
    if capacity is None:
        return Headroom(None, "", None, None, None, "")
    room = capacity.bytes - peak_bytes
    fits = room >= 0
    factor = 1.0 + room / temporary_bytes if fits and temporary_bytes > 0 else None
    if not fits:
        advice = (f"The peak is {-room / GIB:.2f} GiB over this device's HBM: reduce the batch or shard the "
                  "program over more devices.")
    elif factor is not None and factor >= 1.5:
        advice = (f"Increase the batch size: {room / GIB:.2f} GiB of HBM is free at the peak; if the temporaries "
                  f"grow with the batch (parameters and outputs do not), a batch about {factor:.1f}x larger would fit.")
    else:
        advice = f"{room / GIB:.2f} GiB of HBM is free at the peak: little room for a larger batch."
    return Headroom(capacity.bytes, capacity.source, room, fits, factor, advice)

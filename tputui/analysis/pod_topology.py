"""Physical chip coordinates for the pod viewer's topology grid.

XProf 2.24 reads no coordinates from a profile: its CoreDetails (op_stats.proto) holds hostname,
device ordinal, core number, local / global chip id and nothing else, and its pod viewer converter
never fills `PodViewerTopology` (the frontend draws no topology graph then). So the coordinates
here are derived, and the result says so (`Topology.source`):

- the slice's shape follows from the generation and the number of chips: v4 and v5p are 3D tori
  built from hosts of 2x2x1 chips (2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4, ...: the smallest axis
  doubles, z first on a tie); v5e and v6e ("lite") are 2D, hosts of 2x2 or 2x4 chips (1x1, 2x2,
  2x4, 4x4, 4x8, ...; y first on a tie). These are Cloud TPU's documented slice shapes; a host's
  block is read from how many chips each host of the profile has (4: 2x2, 8: 2x4).
- a chip's coordinates follow from its global chip id, x fastest, then y, then z (the order TPU
  runtimes number a slice's chips in).

The slice is the smallest of the generation's shapes holding the largest chip id, so a profile
of some of a slice's hosts (chips 4-7 of a v6e host, say) shows them where they sit, the rest of
the grid empty. The derivation is only used when it agrees with the profile: each host's chips
must fall in one host block, one host per block. Otherwise (GPU, CPU, other TPU generations,
several slices with overlapping ids, numberings that cut across host blocks) there is no topology
and the screen draws its per-host strip.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tputui.analysis.tpu_steps import CoreInfo

Coord = tuple[int, int, int]


@dataclass(frozen=True)
class Topology:
    dims: Coord  # chips along x, y, z (z = 1 on 2D slices)
    host_dims: Coord  # chips per host along x, y, z
    cores_per_chip: int
    coords: dict[int, Coord]  # global chip id -> (x, y, z)
    source: str  # how the coordinates were obtained, shown in the UI and the export

    @property
    def is_3d(self) -> bool:
        return self.dims[2] > 1

    def host_block(self, chip: int) -> Coord:
        x, y, z = self.coords[chip]
        hx, hy, hz = self.host_dims
        return x // hx, y // hy, z // hz

    def to_json(self, cores: list[CoreInfo]) -> dict[str, Any]:
        """XProf's PodViewerTopology (pod_viewer.proto): dimensions, host strides, cores per
        chip and one location per chip (`cores`, as XProf names them), plus our `source`."""
        index_on_host: dict[int, int] = {}
        for c in cores:
            index_on_host.setdefault(c.chip, c.local_chip)
        locations = []
        for chip in sorted(self.coords):
            x, y, z = self.coords[chip]
            hx, hy, hz = self.host_block(chip)
            locations.append({"x": x, "y": y, "z": z, "hostX": hx, "hostY": hy, "hostZ": hz,
                              "indexOnHost": index_on_host.get(chip, 0), "globalId": chip})
        return {
            "xDimension": self.dims[0], "yDimension": self.dims[1], "zDimension": self.dims[2],
            "hostXStride": self.host_dims[0], "hostYStride": self.host_dims[1], "hostZStride": self.host_dims[2],
            "numCoresPerChip": self.cores_per_chip, "cores": locations, "source": self.source,
        }


HOST_BLOCKS = {2: {1: (1, 1, 1), 4: (2, 2, 1), 8: (2, 4, 1)}, 3: {4: (2, 2, 1)}}  # axes -> chips -> block


def generation_axes(device_type: str) -> int | None:
    """2 or 3 (the generation's torus), or None when we do not know its layout."""
    t = device_type.lower().replace(" ", "")
    if not t.startswith("tpu"):
        return None
    if "lite" in t or "v5e" in t or "v6e" in t:  # "TPU v5 lite", "TPU v6 lite"
        return 2
    if t in ("tpuv4", "tpuv5", "tpuv5p"):
        return 3
    return None


def slice_dims(n_chips: int, axes: int, exact: bool = True) -> Coord | None:
    """The generation's slice shape with `n_chips` chips, or None when n is not a slice size
    (`exact=False`: the smallest shape with at least `n_chips` chips)."""
    if n_chips == 1:
        return (1, 1, 1)
    dims = [2, 2, 1]
    while dims[0] * dims[1] * dims[2] < n_chips:
        # Double the smallest axis; on a tie the last one (z on 3D, y on 2D).
        live = range(axes)
        smallest = min(dims[a] for a in live)
        axis = max(a for a in live if dims[a] == smallest)
        dims[axis] *= 2
    if exact and dims[0] * dims[1] * dims[2] != n_chips:
        return None
    return dims[0], dims[1], dims[2]


def derive(device_type: str, cores: list[CoreInfo]) -> Topology | None:
    """Coordinates of the cores' chips (see the module doc), or None when not derivable."""
    axes = generation_axes(device_type)
    chips = sorted({c.chip for c in cores})
    if axes is None or not chips or chips[0] < 0:
        return None
    dims = slice_dims(chips[-1] + 1, axes, exact=False)
    per_host: dict[str, set[int]] = {}
    for c in cores:
        per_host.setdefault(c.host, set()).add(c.chip)
    host = HOST_BLOCKS[axes].get(max(len(v) for v in per_host.values()))
    if dims is None or host is None:
        return None
    X, Y, _Z = dims
    coords = {c: (c % X, (c // X) % Y, c // (X * Y)) for c in chips}
    host_dims = (min(host[0], dims[0]), min(host[1], dims[1]), min(host[2], dims[2]))
    per_chip: dict[int, set[int]] = {}
    for c in cores:
        per_chip.setdefault(c.chip, set()).add(c.core_on_chip)
    cores_per_chip = max(len(v) for v in per_chip.values())
    shape_text = "x".join(str(d) for d in (dims if axes == 3 else dims[:2]))
    host_text = "x".join(str(d) for d in (host_dims if axes == 3 else host_dims[:2]))
    n_slice = dims[0] * dims[1] * dims[2]
    part = f", {len(chips)} of its {n_slice} chips in this profile" if len(chips) < n_slice else ""
    topo = Topology(dims, host_dims, cores_per_chip, coords,
                    f"derived: a {device_type} {shape_text} slice ({host_text} chips per host{part}), chips "
                    "placed by global chip id, x fastest; XProf 2.24 writes no topology")
    # Agreement with the profile: every host's chips sit in one host block, one host per block.
    blocks = {h: {topo.host_block(c) for c in chips_of} for h, chips_of in per_host.items()}
    if any(len(b) != 1 for b in blocks.values()) or len({next(iter(b)) for b in blocks.values()}) != len(blocks):
        return None
    return topo

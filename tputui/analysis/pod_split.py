"""tputui's finer split of two of XProf's pod viewer categories, as the Cloud TPU guide names them.

XProf 2.24's pod viewer folds the guide's "high FLOPS compute" and "low FLOPS compute" into one
*device compute*, and the guide's chip-to-chip "send" and "recv-done" into one *device to device*.
We keep XProf's figures as they are and split them beside, per core and step:

- device compute = high-FLOPS + low-FLOPS. High-FLOPS is the self time of the ops whose HLO
  category is a convolution or a matrix product (HIGH_FLOPS_CATEGORIES: `convolution`,
  `convolution fusion`, `output fusion` (XLA's fusion of a convolution / dot with what consumes
  its output), `dot`, `dot fusion`); low-FLOPS is the rest of device compute. By category, not
  by a FLOP-rate threshold, because it is the guide's own definition (time on convolution or
  output fusion ops), it needs no FLOP counts (profiles without them would put everything on one
  side), and the same op stays on the same side in every step and on every TPU generation,
  where a threshold on a fraction of the peak rate would move ops across the line with their
  shapes and the chip's peak.
- device to device = send (`send` + `send-done` ops: handing data to the interconnect) +
  recv-done (`recv` + `recv-done` ops: waiting for it to arrive) + megacore fusion (which XProf
  also counts as device to device).

Both come from the same per-category self times XProf's categories are computed from
(tpu_steps.tpu_breakdown), so the parts sum to XProf's figure exactly, in picoseconds.
"""
from __future__ import annotations

HIGH_FLOPS_CATEGORIES = frozenset({"convolution", "convolution fusion", "output fusion", "dot", "dot fusion"})
SEND_CATEGORIES = ("send", "send-done")
RECV_CATEGORIES = ("recv", "recv-done")
MEGACORE_CATEGORIES = ("megacore fusion",)

# key -> (label on screen, the XProf category it splits)
SPLIT = {
    "high_flops_compute": ("high-FLOPS", "device_compute"),
    "low_flops_compute": ("low-FLOPS", "device_compute"),
    "d2d_send": ("send", "device_to_device"),
    "d2d_recv_done": ("recv-done", "device_to_device"),
    "d2d_megacore_fusion": ("megacore fusion", "device_to_device"),
}
SPLIT_KEYS = tuple(SPLIT)

DEFINITION = {
    "source": "tputui (XProf 2.24 has no such split; its device_compute / device_to_device are unchanged)",
    "high_flops_compute": "self time of ops whose HLO category is one of " + ", ".join(sorted(HIGH_FLOPS_CATEGORIES)),
    "low_flops_compute": "device_compute minus high_flops_compute",
    "d2d_send": "self time of send and send-done ops",
    "d2d_recv_done": "self time of recv and recv-done ops",
    "d2d_megacore_fusion": "self time of megacore fusion ops",
    "sums": "high + low = device_compute; send + recv_done + megacore_fusion = device_to_device (exact in ps)",
}


def finer_split(category_ps: dict[str, int], breakdown_ps: dict[str, int]) -> dict[str, int]:
    """The split (ps) of one core's step: `category_ps` its self time per HLO category, and
    `breakdown_ps` XProf's categories computed from them (tpu_steps.tpu_breakdown)."""
    def total(names) -> int:
        return sum(category_ps.get(n, 0) for n in names)

    compute = breakdown_ps["device_compute"]
    high = min(total(HIGH_FLOPS_CATEGORIES), compute)  # never over: XProf clamps compute at 0
    send, recv = total(SEND_CATEGORIES), total(RECV_CATEGORIES)
    return {"high_flops_compute": high, "low_flops_compute": compute - high,
            "d2d_send": send, "d2d_recv_done": recv,
            "d2d_megacore_fusion": breakdown_ps["device_to_device"] - send - recv}

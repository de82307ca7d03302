"""What the Megascale stats guide tells a user to look for in the DCN collectives table, as findings.

Beyond XProf (its tool shows the table only):
- a collective whose stall stands out from the others' (the guide's step 2): its stall per
  occurrence is at least STALL_OUTLIER_FACTOR times the median of the other collectives' (three or
  more collectives), flagged apart from the bandwidth flag;
- for such a collective, the guide's heuristic: recv-done short next to a large stall (recv-done
  under RECV_DONE_SHORT of the stall: the TPU was held up by send / send-done / recv, not by data
  that had not arrived) makes a hardware or network problem the likely cause; otherwise the
  stall is waiting for the data, and the slow peer is named (the other slices this host's
  `MegaScale:` transport events for that collective talk to);
- a collective that needs more bandwidth than the network has: which one, how much over, and
  the advice to change the sharding (less data over DCN) or give it more slack.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from tputui.data import schema
from tputui.data.xspace import XSpaceFrame

STALL_OUTLIER_FACTOR = 2.0
RECV_DONE_SHORT = 0.25  # recv-done's share of the stall under which it counts as short
MIN_COLLECTIVES = 3
TRANSPORT = "MegaScale: Communication Transport"  # the transport events' names begin so
MAX_TRANSPORT_EVENTS = 256  # MegaScale transport events read per host to find the peers
NO_SLACK = 2147483647  # XProf's required bandwidth when a collective has no slack
LABEL, SOURCE, DESTINATION = "dcn_label", "dcn_source_slice_id", "dcn_destination_slice_id"


def stall_outliers(rows: pl.DataFrame) -> list[str]:
    """Collectives whose stall per occurrence stands out from the others'."""
    if rows.height < MIN_COLLECTIVES:
        return []
    stalls = rows["stall_duration_ms"].to_list()
    out = []
    for i, name in enumerate(rows["name"].to_list()):
        others = stalls[:i] + stalls[i + 1:]
        median = float(np.median(others))
        if stalls[i] > 0 and stalls[i] >= STALL_OUTLIER_FACTOR * median:
            out.append(name)
    return out


def slice_peers(frame: XSpaceFrame | None) -> dict[str, list[int]]:
    """collective -> the other slices this host's MegaScale transport events name for it."""
    if frame is None:
        return {}
    p = frame.plane_index(schema.HOST_PLANE)
    if p is None:
        return {}
    ev = frame.events
    md = ev["metadata"].to_numpy()
    names = frame.metadata_names(md[ev["plane"].to_numpy() == p]).to_list()
    rows = np.flatnonzero(ev["plane"].to_numpy() == p)
    pairs: dict[str, list[tuple[int, int]]] = {}
    senders: list[int] = []  # a Send's source slice is this host's
    seen = 0
    for row, name in zip(rows.tolist(), names):
        if not str(name).startswith(TRANSPORT):
            continue
        st = frame.stat_map("event", row)
        label, src, dst = st.get(LABEL), st.get(SOURCE), st.get(DESTINATION)
        if isinstance(label, str) and isinstance(src, int) and isinstance(dst, int):
            pairs.setdefault(label, []).append((src, dst))
            if "Send" in str(name):
                senders.append(src)
        seen += 1
        if seen >= MAX_TRANSPORT_EVENTS:
            break
    if not senders:
        return {}
    own = max(set(senders), key=senders.count)
    return {label: sorted({s for pr in prs for s in pr} - {own}) for label, prs in pairs.items()}


def findings(rows: pl.DataFrame, dcn_gbps: float | None, cores: int,
             peers: dict[str, list[int]]) -> list[dict[str, Any]]:
    """One finding per flagged collective: stall outliers with their likely cause, then the ones that
    need more than the network."""
    out: list[dict[str, Any]] = []
    by_name = {r["name"]: r for r in rows.iter_rows(named=True)}
    for name in stall_outliers(rows):
        r = by_name[name]
        stall, recv_done = r["stall_duration_ms"], r["recv_done_stall_ms"]
        others = [v for n, v in zip(rows["name"], rows["stall_duration_ms"]) if n != name]
        times = stall / float(np.median(others)) if float(np.median(others)) > 0 else float("inf")
        share = recv_done / stall if stall else 0.0
        base = {"collective": name, "kind": "stall_outlier", "stall_ms": stall, "recv_done_ms": recv_done,
                "times_median": round(times, 2) if np.isfinite(times) else None}
        if share < RECV_DONE_SHORT:
            out.append({**base, "cause": "hardware_or_network", "peers": [],
                        "text": f"{name} stalls {stall:.3f} ms per occurrence, {_times(times)} the other collectives' "
                                f"median, yet its recv-done takes only {recv_done:.3f} ms ({share:.0%}): the data was "
                                "there, the TPU waited on send / send-done / recv. A hardware or network problem is the "
                                "likely cause: check the hosts' NICs and DCN health."})
        else:
            who = peers.get(name, [])
            peer = (f"slice {who[0]}" if len(who) == 1 else f"slices {', '.join(map(str, who))}") if who \
                else "the peer slice"
            out.append({**base, "cause": "slow_peer", "peers": who,
                        "text": f"{name} stalls {stall:.3f} ms per occurrence, {_times(times)} the other collectives' "
                                f"median, {share:.0%} of it in recv-done waiting for data from {peer}: that peer is "
                                "slow to send. Compare its step time and input pipeline with this slice's."})
    if dcn_gbps:
        for r in rows.iter_rows(named=True):
            need = r["required_bandwidth_gbps"] * cores
            if need > dcn_gbps and r["required_bandwidth_gbps"] >= NO_SLACK:
                out.append({"collective": r["name"], "kind": "exceeds_network", "cause": "no_slack",
                            "required_gbps": None, "network_gbps": dcn_gbps, "times_network": None,
                            "text": f"{r['name']} ({r['transfer_type']}) has no slack: nothing runs between its send "
                                    "and recv-done, so any transfer stalls the TPU. Schedule compute between them, or "
                                    "change the sharding so it crosses DCN less often."})
            elif need > dcn_gbps:
                over = need / dcn_gbps
                out.append({"collective": r["name"], "kind": "exceeds_network", "cause": "bandwidth",
                            "required_gbps": need, "network_gbps": dcn_gbps, "times_network": round(over, 2),
                            "text": f"{r['name']} ({r['transfer_type']}) needs {need:,.1f} Gbps per host, "
                                    f"{over:.1f}x the network's {dcn_gbps:g} Gbps: change the sharding so less of it "
                                    "crosses DCN (model / parameter sharding within a slice, data parallelism across "
                                    "slices), or give it more slack."})
    return out


def _times(x: float) -> str:
    return f"{x:.1f}x" if np.isfinite(x) else "far above"

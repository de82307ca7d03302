"""Pod viewer: per step, every core's step-time breakdown, as XProf 2.24's `pod_viewer` computes it.

    analyze(run, host=None) -> PodViewerResult     (all hosts of the run; `host` is ignored,
                                                    the pod view is the whole pod, like XProf)

A reduce over the hosts' op stats (op_stats.py): each host's step database (the TPU step engine in
tpu_steps.py, or the host's generic steps on CPU / GPU, on core 1 as XProf does) is intersected
across hosts (tpu_steps.combine_hosts) and every core's step is broken down into XProf's generic
categories (tpu_steps.tpu_breakdown).

The send/recv channel table is tputui's own (XProf 2.24 leaves `channelDb` empty): per send op
name, the cores that sent and those that ran the matching recv-done, bytes, latency and bandwidth,
and XProf's ChannelInfo duration (send start to recv-done end) that the latency chart draws.

Also tputui's own, as XProf 2.24 leaves them empty too: the chips' coordinates (pod_topology.py,
derived and labelled so) and the split of each core's collective time into sync wait and transfer:
in a step, the core whose collectives took least arrived last and waited for no one, so its time is
taken as the transfer and every other core's excess over it as waiting for slower cores.

And tputui's finer split of XProf's device compute (high- / low-FLOPS) and device to device (send /
recv-done / megacore fusion), beside XProf's unchanged figures (pod_split.py); the chip pairs a
channel links (`channel_links`), which the screen draws on the topology.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tputui.analysis import host_map, op_stats
from tputui.analysis.pod_split import DEFINITION, SPLIT_KEYS, finer_split
from tputui.analysis.pod_topology import Topology, derive
from tputui.analysis.steps import NO_STEP_MARKER
from tputui.analysis.tpu_steps import (
    CATEGORIES,
    CATEGORY_KEYS,
    CATEGORY_NAMES,
    MAX_DEVICES_PER_HOST,
    CoreInfo,
    bottleneck,
    combine_hosts,
    tpu_breakdown,
)
from tputui.data.run_data import RunData
from tputui.data.stat_values import to_float
from tputui.errors import UserError

__all__ = ["CATEGORIES", "CATEGORY_KEYS", "CATEGORY_NAMES", "SPLIT_KEYS", "PodViewerResult", "analyze", "has_data"]

EMPTY_INTERSECT = (
    "Although there are steps observed on some host(s), the intersection of the steps over all hosts is "
    "empty (because the differences among individual host's step sequences are too big). Consequently, "
    "the overall step time is unknown."
)


SPLIT_METHOD = ("sync wait = a core's collective time beyond the step's shortest one (the last core to arrive "
                "waits for no one); transfer = that shortest time")


@dataclass
class PodViewerResult:
    device_type: str
    cores: list[CoreInfo]
    # one row per (step, core): step, core, total_us, <category>_us..., bottleneck,
    # collective_sync_us / collective_transfer_us (null where the split is not possible),
    # tputui_<split key>_us (pod_split.py; null on host steps)
    steps: pl.DataFrame
    channels: pl.DataFrame
    diagnostics: dict[str, list[str]] = field(default_factory=lambda: {"info": [], "warnings": [], "errors": []})
    topology: Topology | None = None  # chip coordinates, None: the screen draws per-host strips
    split_note: str = ""  # why collectives are not split into sync / transfer ("" when they are)

    @property
    def step_numbers(self) -> list[int]:
        return self.steps["step"].unique(maintain_order=True).to_list() if len(self.steps) else []

    def core_info(self, core: int) -> CoreInfo | None:
        return next((c for c in self.cores if c.core == core), None)

    def core_table(self) -> pl.DataFrame:
        """core, host, chip, core_on_chip and the chip's x, y, z (null without a topology)."""
        coords = self.topology.coords if self.topology else {}
        xyz = [coords.get(c.chip) for c in self.cores]
        return pl.DataFrame({
            "core": [c.core for c in self.cores], "host": [c.host for c in self.cores],
            "chip": [c.chip for c in self.cores], "core_on_chip": [c.core_on_chip for c in self.cores],
            **{axis: [p[i] if p else None for p in xyz] for i, axis in enumerate("xyz")},
        }, schema={"core": pl.Int64, "host": pl.String, "chip": pl.Int64, "core_on_chip": pl.Int64,
                   "x": pl.Int64, "y": pl.Int64, "z": pl.Int64})

    def step_frame(self, step: int) -> pl.DataFrame:
        """Cores of one step joined with their topology, in core order."""
        return self.steps.filter(pl.col("step") == step).join(self.core_table(), on="core", how="left").sort("core")

    def partners(self, cores) -> set[int]:
        """Cores linked to `cores` by a send/recv channel: the receivers of what they send and
        the senders of what they receive (themselves left out)."""
        mine, out = set(cores), set()
        for src, dst in zip(self.channels["src_core_ids"].to_list(), self.channels["dst_core_ids"].to_list()):
            if mine & set(src):
                out |= set(dst)
            if mine & set(dst):
                out |= set(src)
        return out - mine

    def channel_links(self, channel: str) -> list[tuple[int, int]]:
        """(sending chip, receiving chip) pairs of one channel, a chip never paired with itself.
        The profile says which cores ran the channel's send and which its recv-done, not which
        sender fed which receiver: every sending chip is paired with every receiving chip
        (exact for one sender and one receiver; LINKS_NOTE says so)."""
        rows = self.channels.filter(pl.col("channel") == channel)
        if not len(rows):
            return []
        chip = {c.core: c.chip for c in self.cores}
        src = sorted({chip[c] for c in rows["src_core_ids"][0] if c in chip})
        dst = sorted({chip[c] for c in rows["dst_core_ids"][0] if c in chip})
        return [(s, d) for s in src for d in dst if s != d]

    def finer_split_ms(self, step: int, cores) -> dict[str, float] | None:
        """Mean over `cores` of tputui's split (pod_split.SPLIT_KEYS) in ms, None on host steps."""
        df = self.step_frame(step).filter(pl.col("core").is_in(list(cores)))
        if not len(df) or df[f"tputui_{SPLIT_KEYS[0]}_us"].null_count() == len(df):
            return None
        return {k: to_float(df[f"tputui_{k}_us"].mean()) / 1000 for k in SPLIT_KEYS}

    def channel_latency(self) -> list[tuple[str, float]]:
        """(channel id, duration us) longest first: XProf's "Latency of Send and Recv channels"."""
        rows = zip(self.channels["channel"].to_list(), self.channels["duration_us"].to_list())
        return sorted(rows, key=lambda r: -r[1])

    def collective_split(self, step: int, cores) -> tuple[float, float] | None:
        """Mean over `cores` of (sync wait, transfer) in ms in one step, None where not split."""
        df = self.step_frame(step).filter(pl.col("core").is_in(list(cores)) & pl.col("collective_sync_us").is_not_null())
        if not len(df):
            return None
        return to_float(df["collective_sync_us"].mean()) / 1000, to_float(df["collective_transfer_us"].mean()) / 1000

    @property
    def dominant_category(self) -> int:
        """Index (into CATEGORY_KEYS) of the category taking the most time over all steps."""
        totals = [self.steps[f"{k}_us"].sum() for k in CATEGORY_KEYS]
        return max(range(len(totals)), key=lambda i: (totals[i], -i))

    def chip_frame(self, step: int) -> pl.DataFrame:
        """One step per chip, in chip order: chip, host, cores, then the mean over the chip's
        cores of each category with any time in ms (`<key>_ms`), and their sum `total_ms`."""
        per_chip = (self.step_frame(step).group_by("chip", maintain_order=True)
                    .agg(pl.col("host").first(), pl.len().alias("cores"),
                         *[(pl.col(f"{k}_us").mean() / 1000).alias(f"{k}_ms") for k in CATEGORY_KEYS]).sort("chip"))
        empty = [f"{k}_ms" for k in CATEGORY_KEYS if not per_chip[f"{k}_ms"].sum() > 0]
        per_chip = per_chip.drop(empty)
        parts = [c for c in per_chip.columns if c.endswith("_ms")]
        return per_chip.with_columns(pl.sum_horizontal(parts).alias("total_ms") if parts else pl.lit(0.0).alias("total_ms"))

    def cores_mean_ms(self, step: int, cores) -> dict[str, float]:
        """Mean over `cores` in one step of each category and of the step (`total`), in ms."""
        df = self.step_frame(step).filter(pl.col("core").is_in(list(cores)))
        keys = [*CATEGORY_KEYS, "total"]
        return {k: (to_float(df[f"{k}_us"].mean()) / 1000 if len(df) else 0.0) for k in keys}

    def to_json(self) -> dict[str, Any]:
        steps = []
        for step in self.step_numbers:
            cores = []
            for r in self.step_frame(step).iter_rows(named=True):
                ms = lambda v: None if v is None else v / 1000.0  # noqa: E731
                cores.append({
                    "core": r["core"], "chip": r["chip"], "core_on_chip": r["core_on_chip"], "host": r["host"],
                    "x": r["x"], "y": r["y"], "z": r["z"],
                    "total_ms": r["total_us"] / 1000.0, "bottleneck": r["bottleneck"],
                    **{f"{k}_ms": r[f"{k}_us"] / 1000.0 for k in CATEGORY_KEYS},
                    "collective_sync_ms": ms(r["collective_sync_us"]),
                    "collective_transfer_ms": ms(r["collective_transfer_us"]),
                    # tputui's own, beside XProf's unchanged device_compute_ms / device_to_device_ms
                    "tputui_split": None if r[f"tputui_{SPLIT_KEYS[0]}_us"] is None else
                    {f"{k}_ms": r[f"tputui_{k}_us"] / 1000.0 for k in SPLIT_KEYS},
                })
            steps.append({"step": step, "cores": cores})
        return {
            "device_type": self.device_type,
            "categories": [{"id": i, "name": n, "key": k} for i, n, k in CATEGORIES],
            "steps": steps,
            "topology": self.topology.to_json(self.cores) if self.topology else None,
            "channels": self.channels.to_dicts(),
            "channel_db": self.channel_db(),
            "channel_links": [{"channel": ch, "chip_pairs": [list(p) for p in self.channel_links(ch)]}
                              for ch in self.channels["channel"].to_list()],
            "channel_links_note": LINKS_NOTE,
            "tputui_split_definition": DEFINITION,
            "collective_split": {"method": SPLIT_METHOD if not self.split_note else "", "note": self.split_note},
            "diagnostics": self.diagnostics,
        }

    def channel_db(self) -> list[dict[str, Any]]:
        """The channels as XProf's ChannelInfo (pod_viewer.proto) names them, over all steps."""
        out = []
        for r in self.channels.iter_rows(named=True):
            out.append({
                "channelId": int(r["channel"]) if r["channel"].isdigit() else r["channel"],
                "srcCoreIds": r["src_core_ids"], "dstCoreIds": r["dst_core_ids"],
                "dataSize": round(r["data_mib"] * 2**20), "durationUs": r["duration_us"],
                "occurrences": r["occurrences"], "hloNames": r["hlo_names"].split(", "),
                "sendDelayUs": r["send_delay_us"],
            })
        return out

    def tables(self) -> dict[str, pl.DataFrame]:
        per_core = self.steps.join(self.core_table(), on="core", how="left").select(
            "step", "core", "host", "chip", "core_on_chip", "x", "y", "z", "total_us",
            *[f"{k}_us" for k in CATEGORY_KEYS], "collective_sync_us", "collective_transfer_us", "bottleneck",
            *[f"tputui_{k}_us" for k in SPLIT_KEYS])
        ids = [pl.col(c).list.eval(pl.element().cast(pl.String)).list.join(" ") for c in ("src_core_ids", "dst_core_ids")]
        return {"steps": per_core, "channels": self.channels.with_columns(ids)}

    def step_table(self, step: int) -> pl.DataFrame:
        """The CSV `steps` table's rows of one step (what the screen's `x` writes)."""
        return self.tables()["steps"].filter(pl.col("step") == step)


STEP_SCHEMA = {"step": pl.Int64, "core": pl.Int64, "total_us": pl.Float64,
               **{f"{k}_us": pl.Float64 for k in CATEGORY_KEYS}, "bottleneck": pl.String,
               **{f"tputui_{k}_us": pl.Float64 for k in SPLIT_KEYS}}
LINKS_NOTE = ("chip_pairs: every chip that ran the channel's send paired with every chip that ran its recv-done "
              "(the profile does not record which sender fed which receiver; exact for one of each)")
CHANNEL_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "channel": pl.String, "src_cores": pl.String, "dst_cores": pl.String, "data_mib": pl.Float64,
    "latency_us": pl.Float64, "duration_us": pl.Float64, "bandwidth_gibps": pl.Float64,
    "send_delay_us": pl.Float64, "occurrences": pl.Int64, "hlo_names": pl.String,
    "src_core_ids": pl.List(pl.Int64), "dst_core_ids": pl.List(pl.Int64),
}


# --- channels (tputui's own) --------------------------------------------------------------------
def channel_table(events: pl.DataFrame) -> pl.DataFrame:
    """Send -> recv-done pairs by HLO op suffix (send.4 / recv-done.4) over all TensorCores.
    `events`: the hosts' op_stats.send_recv_events with a `core` key column."""
    if not len(events):
        return pl.DataFrame(schema=CHANNEL_SCHEMA)
    sends = events.filter(pl.col("cat") == "send").sort("core", "start")
    recvs = events.filter(pl.col("cat") == "recv-done").sort("core", "start")
    out = []
    for ch in sorted(set(sends["ch"].to_list()) & set(recvs["ch"].to_list()), key=lambda c: (len(c), c)):
        sd, rv = sends.filter(pl.col("ch") == ch), recvs.filter(pl.col("ch") == ch)
        lat = to_float((rv["end"] - rv["start"]).mean()) / 1e6
        nbytes = to_float(rv["bytes"].max())
        # Send delay: from each core's send start to its recv-done start, paired in order.
        pairs = sd.with_columns(i=pl.int_range(pl.len()).over("core")).join(
            rv.with_columns(i=pl.int_range(pl.len()).over("core")), on=["core", "i"], suffix="_r")
        delay = to_float((pairs["start_r"] - pairs["start"]).mean() or 0) / 1e6
        # XProf's ChannelInfo.duration_us: from the send's start to the recv-done's end.
        duration = to_float((pairs["end_r"] - pairs["start"]).mean() or 0) / 1e6
        src, dst = sd["core"].unique().sort().to_list(), rv["core"].unique().sort().to_list()
        out.append({
            "channel": ch.lstrip(".") or "-", "src_cores": _ranges(src),
            "dst_cores": _ranges(dst), "data_mib": nbytes / 2**20,
            "latency_us": lat, "duration_us": duration,
            "bandwidth_gibps": (nbytes / 2**30) / (lat / 1e6) if lat else 0.0,
            "send_delay_us": delay, "occurrences": len(rv),
            "hlo_names": ", ".join(sorted(set(sd["name"].to_list()) | set(rv["name"].to_list()))),
            "src_core_ids": src, "dst_core_ids": dst,
        })
    return pl.DataFrame(out, schema=CHANNEL_SCHEMA)


def _ranges(xs: list[int]) -> str:
    """[0,1,2,5] -> "0-2,5"."""
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


# --- entry points ------------------------------------------------------------------------------
def analyze(run: RunData, host: str | None = None, **_options) -> PodViewerResult:
    if not run.hosts:
        raise UserError("the run has no readable host")
    return from_op_stats(host_map.host_op_stats(run, None))


def from_op_stats(stats: list[op_stats.HostOpStats]) -> PodViewerResult:
    """The reduce: the hosts' per-core step databases intersected, each core's step broken down."""
    hosts = [h.step_db for h in stats]
    combined, cores, empty = combine_hosts(hosts)
    device_type = ""
    for h in hosts:
        if len(hosts) == 1 or h.device_type not in ("CPU", "Device", ""):
            device_type = h.device_type or device_type
    if not device_type:
        device_type = hosts[-1].device_type if hosts else "CPU"
    records = []
    for step, per_core in combined:
        for core, (d, cats, generic) in sorted(per_core.items()):
            if core not in cores:
                continue  # XProf skips cores without CoreDetails
            bd = cats if generic else tpu_breakdown(cats, d)
            # Host (CPU / GPU) steps have no HLO categories to split: null there.
            split = {} if generic else finer_split(cats, bd)
            records.append({"step": step, "core": core, "total_us": d / 1e6,
                            **{f"{k}_us": bd[k] / 1e6 for k in CATEGORY_KEYS}, "bottleneck": bottleneck(bd),
                            **{f"tputui_{k}_us": split[k] / 1e6 if split else None for k in SPLIT_KEYS}})
    steps_df, split_note = split_collectives(pl.DataFrame(records, schema=STEP_SCHEMA),
                                             generic=any(h.generic for h in hosts))
    diag: dict[str, list[str]] = {"info": [], "warnings": [], "errors": []}
    if not combined:
        diag["warnings"].append(EMPTY_INTERSECT if empty else NO_STEP_MARKER)
    events = []
    for i, (h, st) in enumerate(zip(hosts, stats)):
        if len(st.send_recv):
            keys = pl.DataFrame({"plane_id": list(h.cores),
                                 "core": [c if len(hosts) == 1 else i * MAX_DEVICES_PER_HOST + c for c in h.cores]},
                                schema={"plane_id": pl.Int64, "core": pl.Int64})
            events.append(st.send_recv.join(keys, on="plane_id", how="inner", maintain_order="left"))
    channels = channel_table(pl.concat(events) if events else pl.DataFrame())
    if len(channels):
        diag["info"].append("Channels are tputui's pairing of send / recv-done ops (XProf 2.24 reports none).")
    used = set(steps_df["core"].to_list()) if len(steps_df) else set(cores)
    core_list = [cores[k] for k in sorted(cores) if k in used or not len(steps_df)]
    topology = derive(device_type, core_list)
    if topology is not None:
        diag["info"].append(f"Chip coordinates {topology.source}.")
    return PodViewerResult(device_type, core_list, steps_df, channels, diag, topology, split_note)


def split_collectives(steps: pl.DataFrame, generic: bool) -> tuple[pl.DataFrame, str]:
    """Add collective_sync_us / collective_transfer_us (see the module doc) and say why not
    where they stay null: host steps, one core, or no collective time."""
    note = ""
    if generic:
        note = "host (CPU / GPU) steps carry no per-core collective time"
    elif steps["core"].n_unique() < 2:
        note = "one core: no other core to compare its collective time with"
    elif not steps["device_collectives_us"].sum() > 0:
        note = "no device collective time in these steps"
    if note:
        return steps.with_columns(pl.lit(None, pl.Float64).alias("collective_sync_us"),
                                  pl.lit(None, pl.Float64).alias("collective_transfer_us")), note
    coll = pl.col("device_collectives_us")
    took = coll > 0
    # Per step, over the cores that ran collectives: the shortest is the transfer.
    shortest = pl.when(took).then(coll).min().over("step")
    return steps.with_columns(
        pl.when(took).then(coll - shortest).alias("collective_sync_us"),
        pl.when(took).then(shortest).alias("collective_transfer_us"),
    ), ""


def has_data(run: RunData) -> bool:
    return bool(run.hosts)

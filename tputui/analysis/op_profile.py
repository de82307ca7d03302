"""Op profile: XProf's tree of device ops by program or by category.

Levels (op_profile_builder.cc): root -> program (by program only) -> category ->
"<op> and its duplicate(s)" (ops sharing a `deduplicated_name`; a group of one is replaced by its
op) -> op -> fused children. Ops that contain other ops (children time > 0) only add to the
root / program totals. A node's FLOPS utilization is its flop rate over the device's peak
(capped at 1); HBM bandwidth utilization likewise over the peak HBM bandwidth.

Children are sorted by time (fusions' children by flops), as XProf does with std::partial_sort;
the export keeps XProf's top 100 children per node below the grouping levels.

For the card (as XProf's op details): average time per occurrence, arithmetic intensity (FLOPs per
byte accessed) against the device's ridge point (peak FLOP/s over peak HBM bytes/s), and bound-by:
an op's is the roofline's (op_roofline, XProf's SetRooflineMetrics: the resource with the highest
utilization); a grouping node's compares its FLOPS and HBM utilizations. `view` gives the tree
sorted by another key and filtered by name, for the screen.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tputui.analysis import advice_rules, host_map, perf_guide
from tputui.analysis.hlo_ops import IDLE, DeviceOps, FusedChild
from tputui.analysis.op_roofline import roofline_metrics
from tputui.analysis.stdsort import partial_sort
from tputui.data.run_data import RunData

EXPORT_CHILDREN = 100  # XProf's op_profile_limit


@dataclass
class Node:
    name: str
    category: str = ""  # the HLO category of an op node; "" for grouping nodes
    is_op: bool = False  # has XLA facts (op or fused child), as opposed to a grouping node
    raw_time_ps: int = 0
    self_time_ps: int = 0  # for "ops that contain ops" bookkeeping only
    occurrences: int = 0
    flops: int = 0  # XProf's bf16 / normalized flops (used for utilization)
    model_flops: int = 0  # XProf's raw_flops
    bytes_accessed: int = 0
    hbm_rd: int = 0
    hbm_wr: int = 0
    chip_rd: int = 0
    chip_wr: int = 0
    flops_utilization: float = 0.0
    hbm_bandwidth_utilization: float = 0.0
    raw_bytes_hbm: float = 0.0
    # Details (op nodes).
    expression: str = ""
    provenance: str = ""
    program_id: int = 0
    source: str = ""
    source_stack: str = ""
    shape: str = ""
    dedup_key: str = ""
    busy_time_ps: int | None = None  # the root's flop rate is over busy (non-idle) time, as XProf's
    bound_by: str = ""  # "Compute", "HBM", ... (XProf's roofline names); "" without a measured time
    avg_time_ps: float = 0.0  # raw time per occurrence
    arithmetic_intensity: float = 0.0  # FLOPs per byte accessed (XProf's operational intensity)
    children: list[Node] = field(default_factory=list)

    @property
    def padding(self) -> tuple[int, int] | None:
        """(logical, padded) bytes of the op's result under its layout's tiling (perf_guide)."""
        from tputui.analysis.perf_guide import padding_of_text

        return padding_of_text(self.shape) if self.shape else None

    def add_metrics(self, o: Node) -> None:
        """XProf's CombineOpMetrics (grouping nodes sum their ops)."""
        self.raw_time_ps += o.raw_time_ps
        self.occurrences += o.occurrences
        self.flops += o.flops
        self.model_flops += o.model_flops
        self.bytes_accessed += o.bytes_accessed
        self.hbm_rd += o.hbm_rd
        self.hbm_wr += o.hbm_wr
        self.chip_rd += o.chip_rd
        self.chip_wr += o.chip_wr

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()

    def to_json(self, limit: int | None = EXPORT_CHILDREN, level: int = 0, grouping_levels: int = 0) -> dict:
        kids = self.children
        if limit is not None and level >= grouping_levels:
            kids = kids[:limit]
        return {
            "name": self.name, "category": self.category,
            "metrics": {
                "raw_time_ps": self.raw_time_ps, "raw_flops": self.model_flops,
                "raw_bytes_accessed": self.raw_bytes_hbm, "occurrences": self.occurrences,
                "flops_utilization": self.flops_utilization,
                "hbm_bandwidth_utilization": self.hbm_bandwidth_utilization,
            },
            "num_children": len(kids),
            "children": [c.to_json(limit, level + 1, grouping_levels) for c in kids],
        }


def _by_time(x: Node, y: Node) -> bool:
    return x.raw_time_ps > y.raw_time_ps


def _by_flops(x: Node, y: Node) -> bool:
    return x.model_flops > y.model_flops


def _sort_tree(node: Node, k: int, level: int) -> None:
    for c in node.children:
        _sort_tree(c, k, level - 1)
    keep = len(node.children) if level > 0 else k
    if len(node.children) > 1:
        less = _by_flops if node.is_op and node.category.endswith(" fusion") else _by_time
        top = partial_sort(node.children, keep, less)
        # XProf drops the rest; we keep them (sorted) for the screen, the export truncates.
        chosen = {id(c) for c in top}
        rest = [c for c in node.children if id(c) not in chosen]
        key = (lambda c: -c.model_flops) if less is _by_flops else (lambda c: -c.raw_time_ps)
        node.children = top + sorted(rest, key=key)


def _finalize_dedup(node: Node) -> None:
    """A group of one op becomes that op; a bigger group takes its top op's name and details."""
    for i, c in enumerate(node.children):
        if c.children and not c.is_op and all(g.is_op for g in c.children):
            if len(c.children) == 1:
                node.children[i] = c.children[0]
            else:
                top = c.children[0]
                c.name = f"{top.name} and its duplicate(s)"
                c.category = top.category
                c.expression, c.program_id = top.expression, top.program_id
                if not top.category.endswith(" fusion"):
                    c.provenance, c.shape = top.provenance, top.shape
        else:
            _finalize_dedup(c)


@dataclass
class OpProfile:
    by_program: Node
    by_category: Node
    by_program_no_idle: Node
    by_category_no_idle: Node
    device_type: str
    peak_tflops: float
    peak_hbm_gbps: float
    # The Advice tool's first hints (advice_rules.advice_rows: XProf's rules, then the guide's checks),
    # for the root's card; set by analyze
    advice: list[dict[str, Any]] = field(default_factory=list)
    # op name -> the guide's MXU-fit figures for its dots / convolutions (perf_guide's mxu_alignment),
    # for the op's card; set by analyze
    mxu_fit: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte where the roofline turns: below it an op cannot reach peak compute."""
        return self.peak_tflops * 1e12 / (self.peak_hbm_gbps * 1e9) if self.peak_hbm_gbps else 0.0

    def tree(self, by: str = "program", exclude_idle: bool = False) -> Node:
        if by == "program":
            return self.by_program_no_idle if exclude_idle else self.by_program
        return self.by_category_no_idle if exclude_idle else self.by_category

    def view(self, by: str = "program", exclude_idle: bool = False, sort: str = "time", needle: str = "") -> Node:
        """The tree with every node's children in `sort` order, keeping only the nodes whose name
        (or category) holds `needle` (case-insensitive), their ancestors and their subtrees."""
        return view(self.tree(by, exclude_idle), sort, needle)

    def to_json(self) -> dict[str, Any]:
        return {
            "device_type": self.device_type,
            "by_program": self.by_program.to_json(grouping_levels=2),
            "by_category": self.by_category.to_json(grouping_levels=1),
            "by_program_exclude_idle": self.by_program_no_idle.to_json(grouping_levels=2),
            "by_category_exclude_idle": self.by_category_no_idle.to_json(grouping_levels=1),
            "top_advice": [{k: a[k] for k in ("source", "severity", "title", "detail")} for a in self.advice],
            "mxu_fit": self.mxu_fit,
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"by_program": flatten(self.by_program), "by_category": flatten(self.by_category)}


# Sort keys of the screen's `s`: XProf's order (time; fusions' children by flops), then rates, name.
SORTS = ("time", "flops rate", "memory bandwidth", "name")
_SORT_KEYS = {"flops rate": lambda n: -n.flops_utilization, "memory bandwidth": lambda n: -n.hbm_bandwidth_utilization,
              "name": lambda n: n.name.lower()}


def view(root: Node, sort: str = "time", needle: str = "") -> Node:
    """A copy of the tree sorted by `sort` (one of SORTS) and filtered by `needle` (see OpProfile.view)."""
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r} (one of: {', '.join(SORTS)})")
    needle = needle.strip().lower()
    key = _SORT_KEYS.get(sort)

    def matches(n: Node) -> bool:
        return needle in n.name.lower() or (bool(n.category) and needle in n.category.lower())

    def copy(n: Node, keep_all: bool) -> Node | None:
        keep_all = keep_all or not needle or matches(n)
        kids = [k for k in (copy(c, keep_all) for c in n.children) if k is not None]
        if not keep_all and not kids:
            return None
        if key is not None:
            kids.sort(key=key)  # stable: ties keep XProf's order
        return dataclasses.replace(n, children=kids)

    out = copy(root, False)
    return out if out is not None else dataclasses.replace(root, children=[])


def flatten(root: Node) -> pl.DataFrame:
    """The tree as rows (path, depth, metrics) for CSV."""
    rows = []

    def rec(n: Node, path: str, depth: int):
        p = f"{path}/{n.name}" if path else n.name
        rows.append({"path": p, "depth": depth, "name": n.name, "category": n.category,
                     "raw_time_ps": n.raw_time_ps, "raw_flops": n.model_flops, "occurrences": n.occurrences,
                     "flops_utilization": n.flops_utilization,
                     "hbm_bandwidth_utilization": n.hbm_bandwidth_utilization, "bound_by": n.bound_by,
                     "avg_time_ps": n.avg_time_ps, "arithmetic_intensity": n.arithmetic_intensity,
                     "source": n.source})
        for c in n.children:
            rec(c, p, depth + 1)

    rec(root, "", 0)
    return pl.DataFrame(rows)


def _op_node(r: dict, db: DeviceOps) -> Node:
    n = Node(name=r["name"], category=r["category"], is_op=True, raw_time_ps=r["time_ps"],
             self_time_ps=r["self_time_ps"], occurrences=r["occurrences"], flops=r["flops"],
             model_flops=r["model_flops"], bytes_accessed=r["bytes_accessed"], hbm_rd=r["mem_hbm_rd"],
             hbm_wr=r["mem_hbm_wr"], chip_rd=r["mem_chip_rd"], chip_wr=r["mem_chip_wr"],
             expression=r["long_name"], provenance=r["provenance"], program_id=int(r["program_id"]),
             source=f"{r['source_file']}:{r['source_line']}" if r["source_file"] else "",
             source_stack=r["source_stack"], shape=r["shape_with_layout"],
             bound_by=r["bound_by"] if r["time_ps"] > 0 else "")
    n.children = [_fused_node(c) for c in db.fused.get(r["metadata_key"], [])]
    return n


def _fused_node(c: FusedChild) -> Node:
    return Node(name=c.name, category=c.category, is_op=True, occurrences=1, flops=c.flops,
                model_flops=c.model_flops, expression=c.long_name, provenance=c.provenance,
                children=[_fused_node(g) for g in c.children])


def _set_utilization(node: Node, peak_gflops: float, peak_hbm_gibps: float) -> None:
    for n in node.walk():
        t_ns = n.raw_time_ps / 1000.0
        busy_ns = (n.busy_time_ps if n.busy_time_ps is not None else n.raw_time_ps) / 1000.0
        gflops = n.flops / busy_ns if busy_ns else 0.0
        n.flops_utilization = min(gflops / peak_gflops, 1.0) if peak_gflops else 0.0
        gib = (n.hbm_rd / t_ns + n.hbm_wr / t_ns) * (1e9 / (1 << 30)) if t_ns else 0.0
        n.hbm_bandwidth_utilization = min(gib / peak_hbm_gibps, 1.0) if peak_hbm_gibps else 0.0
        n.raw_bytes_hbm = gib / (1e9 / (1 << 30)) * t_ns
        n.avg_time_ps = n.raw_time_ps / n.occurrences if n.occurrences else 0.0
        n.arithmetic_intensity = n.flops / n.bytes_accessed if n.bytes_accessed else 0.0
        if not n.is_op and n.raw_time_ps:  # ops keep the roofline's bound-by
            u_flops, u_hbm = n.flops_utilization, n.hbm_bandwidth_utilization
            n.bound_by = "Unknown" if not (u_flops or u_hbm) else ("Compute" if u_flops >= u_hbm else "HBM")


def build_tree(db: DeviceOps, by: str, exclude_idle: bool) -> Node:
    root = Node(name=f"by_{by}")
    programs: dict[int, Node] = {}
    categories: dict[tuple, Node] = {}
    dedups: dict[tuple, Node] = {}
    root_totals = Node(name="")
    for r in roofline_metrics(db.ops, db.perf).iter_rows(named=True):
        if r["name"].startswith("region"):
            continue
        idle = r["name"] == IDLE and r["program_id"] == 0
        if idle and exclude_idle:
            continue
        op = _op_node(r, db)
        contains_ops = r["time_ps"] - r["self_time_ps"] > 0
        # Root and program totals: self time of every op; flops only of leaf ops.
        tot_nodes = [root_totals]
        prog = None
        if not idle and by == "program":
            pid = int(r["program_id"])
            prog = programs.get(pid)
            if prog is None:
                prog = programs[pid] = Node(name=db.program_name(pid))
                root.children.append(prog)
            tot_nodes.append(prog)
        for t in tot_nodes:
            t.raw_time_ps += r["self_time_ps"]
            if not contains_ops:
                t.flops += op.flops
                t.model_flops += op.model_flops
                t.bytes_accessed += op.bytes_accessed
                t.hbm_rd, t.hbm_wr = t.hbm_rd + op.hbm_rd, t.hbm_wr + op.hbm_wr
                t.chip_rd, t.chip_wr = t.chip_rd + op.chip_rd, t.chip_wr + op.chip_wr
        if contains_ops:
            continue
        if idle:
            root.children.append(op)
            continue
        parent = prog if prog is not None else root
        ckey = (id(parent), r["category"])
        cat = categories.get(ckey)
        if cat is None:
            cat = categories[ckey] = Node(name=r["category"])
            parent.children.append(cat)
        dname = r["deduplicated_name"] or r["name"]
        dkey = (ckey, dname)
        group = dedups.get(dkey)
        if group is None:
            group = dedups[dkey] = Node(name=dname, dedup_key=dname)
            cat.children.append(group)
        group.children.append(op)
        cat.add_metrics(op)
        group.add_metrics(op)
    # XProf resets the root's time to the database total (with or without idle).
    root.raw_time_ps = db.total_time(exclude_idle)
    root.busy_time_ps = db.total_op_time_ps
    for f in ("flops", "model_flops", "bytes_accessed", "hbm_rd", "hbm_wr", "chip_rd", "chip_wr"):
        setattr(root, f, getattr(root_totals, f))
    peak_gflops = db.perf.peak_tflops * 1000.0
    peak_hbm_gibps = db.perf.peak_bws_gbps[0] * (1e9 / (1 << 30))
    _set_utilization(root, peak_gflops, peak_hbm_gibps)
    level = 2 if by == "program" else 1
    _sort_tree(root, EXPORT_CHILDREN, level)
    _sort_tree(root, EXPORT_CHILDREN, level)
    _finalize_dedup(root)
    return root


def from_device_ops(db: DeviceOps) -> OpProfile:
    return OpProfile(
        by_program=build_tree(db, "program", False), by_category=build_tree(db, "category", False),
        by_program_no_idle=build_tree(db, "program", True),
        by_category_no_idle=build_tree(db, "category", True),
        device_type=db.perf.device_type, peak_tflops=db.perf.peak_tflops,
        peak_hbm_gbps=db.perf.peak_bws_gbps[0])


TOP_ADVICE = 3


def analyze(run: RunData, host: str | None = None, **options) -> OpProfile:
    result = from_device_ops(host_map.run_device_ops(run, host))
    try:  # the root card's hints and the ops' MXU fit; never worth failing the op profile for
        checks = perf_guide.checks(run, host)
        rows = advice_rules.advice_rows(advice_rules.suggestions(run, host), checks)
        result.advice = rows[:TOP_ADVICE]
        result.mxu_fit = {f.op: f.figures for c in checks if c.name == "mxu_alignment" for f in c.findings}
    except Exception:  # noqa: BLE001
        result.advice, result.mxu_fit = [], {}
    return result


def has_data(run: RunData) -> bool:
    return host_map.has_device_ops(run)

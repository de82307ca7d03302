"""Graph viewer: one XLA module's HLO as text, and the neighbourhood of one instruction.

XProf's `graph_viewer` tool: `long_txt` is the module printed by XLA (ours: analysis/hlo_text.py,
byte for byte the same); `graph` with `node_name` / `graph_width` draws the instructions within
that many edges of one instruction (ours: analysis/hlo_graph.py, the same node set).

Modules are named as XProf names them, `<module>(<program id>)`, or by program id, or by bare
name when unique. Without a module: the one holding `node`, else the largest module.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from tputui.analysis import host_map
from tputui.analysis.hlo_graph import Neighbourhood, dot_text, neighbourhood
from tputui.analysis.hlo_modules import HloModuleEntry, find_module, hlo_modules
from tputui.analysis.hlo_text import HloModel, computation_spans, instruction_text, module_text, shape_str
from tputui.analysis.module_times import module_times
from tputui.analysis.result import NoDataError
from tputui.data.run_data import RunData
from tputui.errors import UserError

DEFAULT_DEPTH = 3  # XProf's default graph_width
TEXT_FORMATS = ("text", "dot")


@dataclass
class GraphViewerResult:
    module: str
    modules: list[str]
    text: str  # XProf's long_txt
    model: HloModel = field(repr=False)
    computations: pl.DataFrame  # name, first_line, last_line, kind, instructions
    instructions: pl.DataFrame  # name, opcode, computation, shape, line, operands, users
    node: str | None = None
    depth: int = DEFAULT_DEPTH
    hood: Neighbourhood | None = field(default=None, repr=False)
    module_time_ps: dict[str, int] = field(default_factory=dict)  # how long each module ran (0: unknown)
    text_formats = TEXT_FORMATS

    def modules_by_time(self) -> list[tuple[str, int]]:
        """(module, picoseconds) longest first, then by name: the module picker's order."""
        return sorted(((m, self.module_time_ps.get(m, 0)) for m in self.modules), key=lambda mt: (-mt[1], mt[0]))

    def neighbourhood_frame(self) -> pl.DataFrame:
        schema = {"name": pl.String, "opcode": pl.String, "computation": pl.String, "distance": pl.Int64,
                  "drawn_as": pl.String, "shape": pl.String}
        if self.hood is None:
            return pl.DataFrame(schema=schema)
        m, nb = self.model, self.hood
        rows = []
        for iid in sorted(nb.shown(m), key=lambda i: (nb.distance.get(i, nb.depth + 1), m.instrs[i].name)):
            ins = m.instrs[iid]
            rows.append({"name": ins.name, "opcode": ins.opcode, "computation": m.comps[m.comp_of[iid]].name,
                         "distance": nb.distance.get(iid), "drawn_as": nb.kind.get(iid, "in a called computation"),
                         "shape": shape_str(ins.shape)})
        return pl.DataFrame(rows, schema=schema)

    def edges(self) -> list[tuple[str, str]]:
        if self.hood is None:
            return []
        shown = self.hood.shown(self.model)
        m = self.model
        return [(m.instrs[o].name, m.instrs[i].name) for i in sorted(shown)
                for o in m.instrs[i].operand_ids if o in shown]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "module": self.module, "modules": self.modules,
            "computations": self.computations.to_dicts(),
            "long_txt": self.text,
        }
        if self.hood is not None:
            out["neighbourhood"] = {"node": self.node, "graph_width": self.depth,
                                    "nodes": self.neighbourhood_frame().to_dicts(),
                                    "edges": [list(e) for e in self.edges()]}
        return out

    def tables(self) -> dict[str, pl.DataFrame]:
        out = {"instructions": self.instructions, "computations": self.computations}
        if self.hood is not None:
            out = {"neighbourhood": self.neighbourhood_frame(), **out}
        return out

    def render(self, fmt: str) -> str:
        """`--format text`: the module's long_txt, or the neighbourhood's instructions as HLO text;
        `--format dot`: the neighbourhood as Graphviz DOT."""
        if fmt == "dot":
            if self.hood is None:
                raise UserError("--format dot draws a neighbourhood: give --node NAME (and --depth K)")
            return dot_text(self.model, self.hood)
        if self.hood is None:
            return self.text
        m = self.model
        shown = self.hood.shown(m)
        lines = []
        for cid in m.computation_post_order():
            ids = [i for i in m.instruction_order(cid) if i in shown]
            if ids:
                lines.append(f"// {m.comps[cid].name}")
                lines += [instruction_text(m, m.instrs[i]) for i in ids]
        return "\n".join(lines) + "\n"

    def around(self, node: str, depth: int | None = None) -> GraphViewerResult:
        """The same module with the neighbourhood of `node` (the screen's Enter / + / -)."""
        if node not in self.model.by_name:
            raise UserError(f"module {self.module} has no instruction named {node!r}")
        depth = self.depth if depth is None else max(0, depth)
        return replace(self, node=node, depth=depth, hood=neighbourhood(self.model, self.model.by_name[node], depth))

    def instruction(self, name: str) -> dict[str, Any] | None:
        """One row of `instructions` (operands, users, shape, line) plus its HLO text."""
        hit = self.instructions.filter(pl.col("name") == name)
        if not hit.height:
            return None
        row = hit.row(0, named=True)
        ins = self.model.instrs[self.model.by_name[name]]
        row["text"] = instruction_text(self.model, ins)
        row["called"] = [self.model.comps[c].name for c in ins.called_computation_ids if c in self.model.comps]
        return row

    def lines_of(self, name: str) -> int | None:
        """The line of instruction `name` in `text` (0-based)."""
        hit = self.instructions.filter(pl.col("name") == name)
        return int(hit["line"][0]) if hit.height else None


def _tables(model: HloModel) -> tuple[pl.DataFrame, pl.DataFrame]:
    comps, instrs = [], []
    entry = model.proto.entry_computation_id
    for (name, first, last), cid in zip(computation_spans(model),
                                         [c for c in model.computation_post_order() if not model.is_async_computation(c)]):
        comp = model.comps[cid]
        kind = "entry" if cid == entry else ("fusion" if comp.is_fusion_computation else "called")
        comps.append({"name": name, "first_line": first, "last_line": last, "kind": kind,
                      "instructions": len(comp.instructions)})
        for n, iid in enumerate(model.instruction_order(cid)):
            ins = model.instrs[iid]
            instrs.append({"name": ins.name, "opcode": ins.opcode, "computation": name,
                           "shape": shape_str(ins.shape), "line": first + 1 + n,
                           "operands": [model.instrs[o].name for o in ins.operand_ids if o in model.instrs],
                           "users": [model.instrs[u].name for u in model.users.get(iid, [])]})
    comp_schema: dict[str, Any] = {"name": pl.String, "first_line": pl.Int64, "last_line": pl.Int64, "kind": pl.String,
                   "instructions": pl.Int64}
    ins_schema: dict[str, Any] = {"name": pl.String, "opcode": pl.String, "computation": pl.String, "shape": pl.String,
                  "line": pl.Int64, "operands": pl.List(pl.String), "users": pl.List(pl.String)}
    return pl.DataFrame(comps, schema=comp_schema), pl.DataFrame(instrs, schema=ins_schema)


def _pick_module(modules: list[HloModuleEntry], module: str | None, node: str | None,
                 times: dict[str, int]) -> HloModuleEntry:
    """The module named, else the one holding `node`, else the one that ran longest (the training
    step), the largest proto among equals."""
    if module:
        return find_module(modules, str(module))
    if node:
        modules = [m for m in modules if node in HloModel.build(m.parse()).by_name]
        if not modules:
            raise UserError(f"no HLO module has an instruction named {node!r}")
    return max(modules, key=lambda m: (times.get(m.name, 0), len(m.data), m.name))


def has_data(run: RunData) -> bool:
    return host_map.has_hlo_modules(run)


def analyze(run: RunData, host: str | None = None, module: str | None = None, node: str | None = None,
            depth: int | str = DEFAULT_DEPTH, **_options) -> GraphViewerResult:
    modules = hlo_modules(run, host)
    if not modules:
        raise NoDataError("no HLO modules in this profile (the graph viewer needs XLA programs captured "
                          "with HLO protos, e.g. JAX)")
    times = module_times(run, host, modules)
    entry = _pick_module(modules, module, node, times)
    try:
        depth = int(depth)
    except (TypeError, ValueError):
        raise UserError(f"--depth must be a whole number, not {depth!r}") from None
    if depth < 0:
        raise UserError("--depth must be 0 or more")
    model = HloModel.build(entry.parse())
    comps, instrs = _tables(model)
    result = GraphViewerResult(entry.name, [m.name for m in modules], module_text(model.proto, model), model,
                               comps, instrs, depth=depth, module_time_ps=times)
    if node:
        if node not in model.by_name:
            raise UserError(f"module {entry.name} has no instruction named {node!r}")
        result.node = node
        result.hood = neighbourhood(model, model.by_name[node], depth)
    return result

"""The neighbourhood of one HLO instruction, as XProf's graph viewer draws it.

XProf's graph view (`type=graph`, `node_name`, `graph_width`) renders XLA's
RenderNeighborhoodAround: a breadth-first walk from the instruction, `graph_width` edges deep,
over operands (not into a tuple's operands unless the tuple is the start), users (none from a
constant, none past 16 users) and the roots of called computations. Fusion bodies are drawn when
the fusion and all its operands are drawn; other called computations are drawn whole unless
trivial (a binary op of the two parameters, e.g. a reduction's `add`), which XLA inlines.
Constants are always shown beside their users.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from tputui.analysis.hlo_text import HloModel

MAX_USERS_TO_RENDER = 16  # XLA's kMaxUsersToRender

NORMAL, HIGHLIGHT, SOME_USERS_OMITTED, SOME_OPERANDS_OMITTED, ALL_OPERANDS_OMITTED = (
    "normal", "highlight", "some users omitted", "some operands omitted", "operands omitted")


@dataclass
class Neighbourhood:
    """Instructions shown around `center` (ids), their distance and how they are drawn."""

    center: int
    depth: int
    distance: dict[int, int] = field(default_factory=dict)
    kind: dict[int, str] = field(default_factory=dict)
    bodies: list[int] = field(default_factory=list)  # computation ids drawn inside the graph
    members: set[int] = field(default_factory=set)  # instructions of those computations

    home: int = -1  # the center's computation
    hidden: set[int] = field(default_factory=set)  # drawn inside their users' labels instead

    def shown(self, model: HloModel) -> set[int]:
        """Nodes drawn: the walk's nodes in the center's computation plus drawn bodies' members
        (a called root the walk reached is not drawn when its computation is not)."""
        nodes = {i for i in self.distance if model.comp_of[i] == self.home} | self.members
        return nodes - self.hidden


def _trivial(model: HloModel, cid: int) -> bool:
    """XLA's MatchTrivialComputation: two parameters and a root applying one binary op to them."""
    comp = model.comps[cid]
    if len(comp.instructions) != 3:
        return False
    root = model.instrs.get(comp.root_id)
    if root is None or len(root.operand_ids) != 2:
        return False
    ops = [model.instrs[o] for o in root.operand_ids]
    return all(o.opcode == "parameter" for o in ops) and {o.parameter_number for o in ops} == {0, 1}


def neighbourhood(model: HloModel, center: int, depth: int) -> Neighbourhood:
    home = model.comp_of[center]
    nb = Neighbourhood(center, depth, home=home)
    work: deque[tuple[int, int]] = deque([(center, 0)])
    while work:
        iid, d = work.popleft()
        nb.distance.setdefault(iid, d)
        nb.kind[iid] = NORMAL
        ins = model.instrs[iid]
        if d == depth:
            continue
        if iid == center or ins.opcode != "tuple":
            work.extend((o, d + 1) for o in ins.operand_ids if o not in nb.distance)
        for cid in ins.called_computation_ids:
            if cid in model.comps:
                work.append((model.comps[cid].root_id, d + 1))
        if ins.opcode == "constant":
            continue
        users = model.users.get(iid, [])
        if len(users) > MAX_USERS_TO_RENDER:
            nb.kind[iid] = SOME_USERS_OMITTED
            continue
        work.extend((u, d + 1) for u in users if u not in nb.distance)

    def displayed(i: int) -> bool:
        return i in nb.distance or model.instrs[i].opcode == "constant" or model.comp_of[i] != home

    for iid in list(nb.kind):
        ops = list(model.instrs[iid].operand_ids)
        shown_ops = [displayed(o) for o in ops]
        if any(shown_ops) and not all(shown_ops):
            nb.kind[iid] = SOME_OPERANDS_OMITTED
        elif ops and not any(shown_ops):
            nb.kind[iid] = ALL_OPERANDS_OMITTED
        if nb.kind[iid] == SOME_USERS_OMITTED and all(displayed(u) for u in model.users.get(iid, [])):
            nb.kind[iid] = NORMAL
    nb.kind[center] = HIGHLIGHT
    _add_bodies(model, nb, [i for i in nb.distance if model.comp_of[i] == home], set())
    nb.hidden = {i for i in nb.distance.keys() | nb.members if _merged_into_users(model, nb, i)}
    # get-tuple-elements are drawn as labelled edges from the tuple, not as nodes
    nb.hidden |= {i for i in nb.distance.keys() | nb.members if model.instrs[i].opcode == "get-tuple-element"}
    return nb


def _merged_into_users(model: HloModel, nb: Neighbourhood, iid: int) -> bool:
    """Nodes XLA's dumper draws as part of their users' labels, not as nodes: constants,
    broadcasts of scalar constants inside fusions, fusion parameters fed by a constant, and
    tuple parameters read only through more than 3 drawn get-tuple-elements."""
    ins = model.instrs[iid]
    comp = model.comps[model.comp_of[iid]]
    if ins.opcode == "constant":
        return True
    fused = comp.is_fusion_computation
    if fused and ins.opcode == "broadcast" and ins.operand_ids:
        src = model.instrs[ins.operand_ids[0]]
        if src.opcode == "constant" and all(d == 1 for d in src.shape.dimensions):
            return True
    if fused and ins.opcode == "parameter":
        for caller in model.callers.get(comp.id, []):
            ops = model.instrs[caller].operand_ids
            if ins.parameter_number < len(ops) and model.instrs[ops[ins.parameter_number]].opcode == "constant":
                return True
    if ins.opcode == "parameter" and ins.shape.tuple_shapes and not fused:
        users = model.users.get(iid, [])
        drawn = [u for u in users if u in nb.distance or u in nb.members]
        return len(drawn) > 3 and all(model.instrs[u].opcode == "get-tuple-element" for u in drawn)
    return False


def _add_bodies(model: HloModel, nb: Neighbourhood, shown: list[int], seen: set[int]) -> None:
    """The called computations the dumper draws for the shown instructions, recursively."""
    for iid in shown:
        ins = model.instrs[iid]
        for cid in ins.called_computation_ids:
            if cid in seen or cid not in model.comps:
                continue
            comp = model.comps[cid]
            if ins.opcode == "fusion":
                if nb.kind.get(iid, NORMAL) in (SOME_OPERANDS_OMITTED, ALL_OPERANDS_OMITTED):
                    continue
            elif _trivial(model, cid):
                continue
            seen.add(cid)
            nb.bodies.append(cid)
            members = [i.id for i in comp.instructions]
            nb.members.update(members)
            _add_bodies(model, nb, members, seen)


def dot_text(model: HloModel, nb: Neighbourhood, title: str = "") -> str:
    """A Graphviz DOT of the neighbourhood: nodes named by instruction, fusion bodies as clusters."""
    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    center = model.instrs[nb.center]
    lines = ["digraph G {", "rankdir = TB;", "compound = true;",
             f"label = {q(title or f'Neighborhood of {nb.depth} nodes around {center.name}')};"]
    shown = nb.shown(model)
    home = model.comp_of[nb.center]

    def node(iid: int) -> str:
        ins = model.instrs[iid]
        style = ', style=filled, fillcolor="#b71c1c", fontcolor=white' if iid == nb.center else ""
        label = q(ins.name)[:-1] + "\\n" + ins.opcode + '"'
        return f"  {q(ins.name)} [label={label}, shape=rect{style}];"

    for iid in sorted(i for i in shown if model.comp_of[i] == home):
        lines.append(node(iid))
    for cid in nb.bodies:
        comp = model.comps[cid]
        lines.append(f"  subgraph {q('cluster_' + comp.name)} {{")
        lines.append(f"    label = {q(comp.name)};")
        lines += ["  " + node(i.id) for i in comp.instructions]
        lines.append("  }")
    for iid in sorted(shown):
        for op in model.instrs[iid].operand_ids:
            label = ""
            src = model.instrs[op]
            while src.opcode == "get-tuple-element" and src.operand_ids:  # an edge "through" a GTE
                label = f" [label={q(str(src.tuple_index))}]"
                src = model.instrs[src.operand_ids[0]]
            if src.id in shown:
                lines.append(f"  {q(src.name)} -> {q(model.instrs[iid].name)}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"

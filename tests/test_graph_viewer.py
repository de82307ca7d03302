"""The graph viewer against XProf 2.24's own graph_viewer output on the real profiles.

- long_txt: every HLO module of jax_mlp, jax_live_capture, tpu_v6e_inference and the instruction
  zoo (tests/fixtures/graph_viewer/zoo: convolution, gather, scatter, sort, pad, dynamic slices,
  custom calls, conditional, ...) printed by XProf (oracle/graph_viewer/<module>.long_txt) must
  equal ours byte for byte (no tolerance).
- neighbourhoods: XProf's DOT (`type=graph`, `node_name`, `graph_width`) for 11 cases,
  reduced to the instruction names it draws (tests/fixtures/graph_viewer/make_dot.py); our node
  set must be the same set, constants aside (XProf draws them inside their users' labels, which
  name them by value, not by name).
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis import graph_viewer
from tputui.analysis.hlo_modules import hlo_modules
from tputui.analysis.hlo_text import HloModel, lexes_as_json_dict, literal_text, module_text
from tputui.analysis.result import NoDataError
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.errors import UserError
from tputui.export import export_text
from tputui.proto import xla_data_pb2 as xd

WITH_HLO = ["jax_mlp", "jax_live_capture", "tpu_v6e_inference"]
ZOO = FIXTURES / "graph_viewer" / "zoo"
LONG_TXT_PROFILES = {**{p: PROFILES / p for p in WITH_HLO}, "zoo": ZOO}
NEIGHBOURHOODS = json.loads((FIXTURES / "graph_viewer" / "neighbourhoods.json").read_text())


def run_of(profile: str) -> RunData:
    return RunData(open_logdir(str(LONG_TXT_PROFILES.get(profile, PROFILES / profile))).runs[0], use_cache=False)


def long_txt_cases():
    for profile, path in LONG_TXT_PROFILES.items():
        for f in sorted((path / "oracle" / "graph_viewer").glob("*.long_txt")):
            yield pytest.param(profile, f.name[: -len(".long_txt")], id=f"{profile}-{f.stem}")


@pytest.mark.parametrize(("profile", "module"), list(long_txt_cases()))
def test_long_txt_equals_xprof(profile, module):
    want = (LONG_TXT_PROFILES[profile] / "oracle" / "graph_viewer" / f"{module}.long_txt").read_text()
    entry = next(m for m in hlo_modules(run_of(profile)) if m.name == module)
    assert module_text(entry.parse()) == want


def test_every_module_has_an_oracle():
    """XProf lists the same modules we do (so no module goes untested above)."""
    for profile, path in LONG_TXT_PROFILES.items():
        ours = {m.name for m in hlo_modules(run_of(profile))}
        theirs = {f.name[: -len(".long_txt")] for f in (path / "oracle" / "graph_viewer").glob("*.long_txt")}
        assert ours == theirs, profile


@pytest.mark.parametrize("case", sorted(NEIGHBOURHOODS))
def test_neighbourhood_node_set_equals_xprof(case):
    profile, module, node, width = case.split("|")
    result = graph_viewer.analyze(run_of(profile), module=module, node=node, depth=int(width))
    model = result.model
    constants = {i.name for i in model.instrs.values() if i.opcode == "constant"}
    ours = {model.instrs[i].name for i in result.hood.shown(model)} - constants
    theirs = (set(NEIGHBOURHOODS[case]["names"]) & set(model.by_name)) - constants
    assert ours == theirs
    assert node in ours and result.neighbourhood_frame().height == len(result.hood.shown(model))


def test_export_text_is_long_txt_and_dot_draws_the_neighbourhood():
    run = run_of("jax_mlp")
    want = (PROFILES / "jax_mlp" / "oracle" / "graph_viewer" / "jit_train_step(32).long_txt").read_text()
    assert export_text(run, "graph_viewer", "text", module="jit_train_step(32)") == want
    # by program id too, and the bare module name when it is unique
    assert export_text(run, "graph_viewer", "text", module="32") == want
    assert export_text(run, "graph_viewer", "text", module="jit_train_step") == want
    dot = export_text(run, "graph_viewer", "dot", module="jit_train_step(32)", node="dot.2", depth=1)
    assert dot.startswith("digraph G {") and '"add_maximum_fusion" -> "dot.2";' in dot
    assert '"dot.2" -> "multiply_subtract_fusion.1";' in dot
    hood = json.loads(export_text(run, "graph_viewer", "json", node="dot.2", depth=1))["neighbourhood"]
    assert {n["name"] for n in hood["nodes"]} == {"dot.2", "add_maximum_fusion", "multiply_add_fusion",
                                                 "multiply_subtract_fusion.1"}
    assert [n["distance"] for n in hood["nodes"] if n["name"] == "dot.2"] == [0]
    text = export_text(run, "graph_viewer", "text", node="dot.2", depth=1)
    assert text.splitlines()[0] == "// main.16" and len(text.splitlines()) == 5


def test_module_without_name_holds_the_node_or_ran_longest():
    run = run_of("jax_mlp")
    assert graph_viewer.analyze(run, node="wrapped_reduce").module == "jit_train_step(32)"
    assert graph_viewer.analyze(run).module == "jit_train_step(32)"  # ran longest (not the biggest proto, randint)
    with pytest.raises(UserError, match="no HLO module has an instruction named 'nope'"):
        graph_viewer.analyze(run, node="nope")
    with pytest.raises(NoDataError, match="no HLO modules"):
        graph_viewer.analyze(run_of("tf_loop"))
    with pytest.raises(UserError, match="--depth"):
        graph_viewer.analyze(run, node="dot.2", depth="x")


def test_tables_line_numbers_point_into_the_text():
    result = graph_viewer.analyze(run_of("tpu_v6e_inference"), module="jit_f(12190760917235803885)")
    lines = result.text.splitlines()
    for row in result.instructions.iter_rows(named=True):
        assert f"%{row['name']} = " in lines[row["line"]]
    for row in result.computations.iter_rows(named=True):
        assert f"%{row['name']} (" in lines[row["first_line"]] and lines[row["last_line"]] == "}"
    assert result.computations.filter(result.computations["kind"] == "entry")["name"].to_list() == ["main.22_spmd"]


def test_cli_text_and_errors():
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "tputui.cli", "export", str(PROFILES / "tpu_v6e_inference"),
                               "--tool", "graph_viewer", *args], capture_output=True, text=True, timeout=120)

    done = cli("--module", "jit__psum(9646411105960254074)", "--format", "text")
    want = (PROFILES / "tpu_v6e_inference" / "oracle" / "graph_viewer" / "jit__psum(9646411105960254074).long_txt")
    assert done.returncode == 0 and done.stdout == want.read_text()
    bad = cli("--module", "nope", "--format", "text")
    assert bad.returncode == 2 and "not found" in bad.stderr and "Traceback" not in bad.stderr
    nodot = cli("--format", "dot")
    assert nodot.returncode == 2 and "--node" in nodot.stderr


def test_printer_pieces():
    """Rules the real modules do not reach: multi-dimensional literals and non-JSON configs."""
    lit = xd.LiteralProto(s32s=[1, 2, 3, 4])
    shape = xd.ShapeProto(element_type=xd.PrimitiveType.Value("S32"), dimensions=[2, 2])
    assert literal_text(lit, shape) == "{ { 1, 2 }, { 3, 4 } }"
    assert lexes_as_json_dict('{"a":{"b":"}"}}') and not lexes_as_json_dict("{a} b") and not lexes_as_json_dict("x")
    model = HloModel.build(hlo_modules(run_of("jax_mlp"))[0].parse())
    assert model.computation_post_order()[-1] == model.proto.entry_computation_id

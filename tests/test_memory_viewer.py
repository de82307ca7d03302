"""Memory viewer against XProf 2.24's own output, module by module.

Oracle: `oracle/memory_viewer/<module>.json` of each profile (memory space 0) and
`fixtures/memory_viewer/tpu_v6e_inference_spaces.json` (spaces 0, 1, 5). We replay the same
heap-simulator trace with the same integer byte counts and convert to MiB with the same
float operations, so the figures are compared exactly (tolerance 0), except where noted.
"""
from __future__ import annotations

import json
import pathlib

import pytest
from conftest import FIXTURES, PROFILES, oracle_dir

from tputui.analysis import memory_viewer as mv
from tputui.analysis.hlo_shape import shape_text, unpadded_bytes
from tputui.analysis.result import NoDataError
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.errors import UserError
from tputui.export import export_text
from tputui.proto import xla_data_pb2 as xd

PROFILES_WITH_HLO = ["jax_mlp", "tpu_v6e_inference", "jax_live_capture"]


def run_of(profile: str) -> RunData:
    return RunData(open_logdir(str(PROFILES / profile)).runs[0], use_cache=False)


def oracle_modules(profile: str) -> list[str]:
    index = json.loads((oracle_dir(profile) / "index.json").read_text())
    (entry,) = index.values()
    return entry["hlo_modules"]


CASES = [(p, m) for p in PROFILES_WITH_HLO for m in oracle_modules(p)]


@pytest.fixture(scope="module")
def modules():
    return {p: {m.name: m for m in mv.hlo_modules(run_of(p))} for p in PROFILES_WITH_HLO}


def test_module_list_matches_xprof(modules):
    for p in PROFILES_WITH_HLO:
        assert sorted(modules[p]) == oracle_modules(p)


def _heap_object(h: dict) -> tuple:
    return (h.get("logicalBufferId"), h.get("logicalBufferSizeMib"), h.get("unpaddedShapeMib", 0),
            h.get("instructionName", ""), h.get("shapeString", ""), h.get("groupName", ""),
            h.get("tfOpName", ""), h.get("label"), h.get("opCode", ""), h.get("numbered", 0))


def _ours(b: mv.PeakBuffer) -> tuple:
    return (b.logical_buffer_id, b.size_mib, b.unpadded_mib, b.name, b.shape, b.category,
            b.tf_op_name, b.label, b.op_code, b.number)


@pytest.mark.parametrize("profile,module", CASES, ids=[f"{p}:{m}" for p, m in CASES])
def test_module_matches_oracle(modules, profile, module):
    o = json.loads((oracle_dir(profile) / "memory_viewer" / f"{module}.json").read_text())
    r = mv.simulate(modules[profile][module].parse(), 0, name=module)
    # XProf's JSON leaves out zero / empty fields, hence the defaults.
    assert r.module_name == o["moduleName"]
    assert r.entry_computation_name == o["entryComputationName"]
    assert r.peak_heap_mib == o.get("peakHeapMib", 0)
    assert r.peak_unpadded_heap_mib == o.get("peakUnpaddedHeapMib", 0)
    assert r.peak_position == o.get("peakHeapSizePosition", 0)
    assert r.heap_mib == o.get("heapSizes", [])
    assert r.unpadded_heap_mib == o.get("unpaddedHeapSizes", [])
    assert r.instruction_names == o.get("hloInstructionNames", [])
    # The buffers live at the peak, in program order and by size.
    assert [_ours(b) for b in r.buffers] == [_heap_object(h) for h in o["maxHeap"]]
    assert [_ours(b) for b in r.buffers_by_size] == [_heap_object(h) for h in o["maxHeapBySize"]]
    assert r.by_size == o.get("bySizeToMaxHeap", [])
    sources = [(h.get("sourceInfo", {}).get("fileName", ""), h.get("sourceInfo", {}).get("lineNumber", 0),
                h.get("sourceInfo", {}).get("stackFrame", "")) for h in o["maxHeap"]]
    assert [(b.source_file, b.source_line, b.stack_frame) for b in r.buffers] == sources
    spans = {int(k): (v.get("start", 0), v.get("limit", 0)) for k, v in o.get("logicalBufferSpans", {}).items()}
    assert r.buffer_spans == spans
    assert mv.to_mib(r.entry_parameters_bytes) == o.get("entryComputationParametersMib", 0)
    assert mv.to_mib(r.non_reusable_bytes) == o.get("nonReusableMib", 0)
    assert mv.to_mib(r.maybe_live_out_bytes) == o.get("maybeLiveOutMib", 0)
    assert mv.to_mib(r.total_allocation_bytes) == o.get("totalBufferAllocationMib", 0)
    assert mv.to_mib(r.indefinite_bytes) == o.get("indefiniteBufferAllocationMib", 0)


SPACES = json.loads((FIXTURES / "memory_viewer" / "tpu_v6e_inference_spaces.json").read_text())


@pytest.mark.parametrize("key", sorted(SPACES))
def test_memory_spaces_match_oracle(modules, key):
    module, space = key.split("|")
    o = SPACES[key] or {}
    r = mv.simulate(modules["tpu_v6e_inference"][module].parse(), int(space), name=module)
    assert r.peak_heap_mib == o.get("peakHeapMib", 0)
    assert [_ours(b) for b in r.buffers] == [_heap_object(h) for h in o.get("maxHeap", [])]
    assert r.heap_mib == o.get("heapSizes", [])
    assert mv.to_mib(r.indefinite_bytes) == o.get("indefiniteBufferAllocationMib", 0)
    assert mv.to_mib(r.total_allocation_bytes) == o.get("totalBufferAllocationMib", 0)
    assert mv.to_mib(r.max_scoped_vmem_bytes) == o.get("maxScopedVmemAllocationMib", 0)
    assert r.max_scoped_vmem_instruction == o.get("maxScopedVmemInstructionName", "")


def test_export_json_schema_and_values():
    run = run_of("jax_mlp")
    doc = json.loads(export_text(run, "memory_viewer", module="jit_train_step(32)"))
    o = json.loads((oracle_dir("jax_mlp") / "memory_viewer" / "jit_train_step(32).json").read_text())
    assert doc["module"] == "jit_train_step(32)"
    assert doc["peak_heap_mib"] == o["peakHeapMib"]
    assert doc["peak_unpadded_heap_mib"] == o["peakUnpaddedHeapMib"]
    rows = doc["buffers_at_peak"]
    assert [r["size_mib"] for r in rows] == [h["logicalBufferSizeMib"] for h in o["maxHeap"]]
    assert [r["unpadded_size_mib"] for r in rows] == [h.get("unpaddedShapeMib", 0) for h in o["maxHeap"]]
    assert [r["name"] for r in rows] == [h.get("instructionName", h["label"]) for h in o["maxHeap"]]
    for key in ("name", "size_mib", "unpadded_size_mib", "shape", "allocation_type", "framework_op"):
        assert all(key in r for r in rows)
    assert rows[0]["allocation_type"] == "Output" and rows[0]["framework_op"].startswith("jit(train_step)")


def test_module_selection_by_bare_name_and_program_id():
    run = run_of("tpu_v6e_inference")
    by_name = mv.analyze(run, module="jit_f")
    by_id = mv.analyze(run, module="12190760917235803885")
    assert by_name.module == by_id.module == "jit_f(12190760917235803885)"
    # Without --module: the largest module (HBM peak), not XProf's first (most heap-simulator events).
    assert mv.analyze(run).module == "jit_f(12190760917235803885)"
    mlp = mv.hlo_modules(run_of("jax_mlp"))
    assert mv.xprof_default_module(mlp).name == "jit__randint(28)"
    largest = mv.analyze(run_of("jax_mlp"))
    assert largest.module == "jit__normal(8)" and len(largest.modules) == 17  # the picker still lists all
    peaks = {m.name: mv.simulate(m.parse(), 0, name=m.name).peak_heap_mib for m in mlp}
    assert largest.peak_heap_mib == max(peaks.values()) > peaks["jit__randint(28)"]


def test_buffer_lifetimes_are_xprofs_spans():
    """alloc / free program points of the buffers at the peak: XProf's logical buffer spans; the
    buffers that live for the whole program (parameters, outputs) and the small ones have none."""
    module = "jit_train_step(32)"
    o = json.loads((oracle_dir("jax_mlp") / "memory_viewer" / f"{module}.json").read_text())
    spans = {int(k): (v.get("start", 0), v.get("limit", 0)) for k, v in o["logicalBufferSpans"].items()}
    r = mv.analyze(run_of("jax_mlp"), module=module)
    table = r.buffer_table(by_size=True)
    timed = table.filter(table["alloc_point"].is_not_null())
    assert timed.height >= 3
    for row in timed.iter_rows(named=True):
        assert (row["alloc_point"], row["free_point"]) == spans[row["logical_buffer_id"]]
        assert row["alloc_point"] <= r.peak_point <= row["free_point"] + 1  # live at the peak
    whole = table.filter(table["alloc_point"].is_null())
    assert set(whole["category"]) == {"Output", "Parameter", ""}  # "" is the folded small buffers


def test_list_modules_and_csv():
    run = run_of("jax_mlp")
    listed = json.loads(export_text(run, "memory_viewer", list_modules=True))
    assert [m["module"] for m in listed["modules"]] == oracle_modules("jax_mlp")
    csv = export_text(run, "memory_viewer", fmt="csv", module="jit_train_step(32)")
    header, *rows = csv.strip().splitlines()
    assert header.startswith("rank,name,size_mib")
    assert len(rows) == 9  # 8 buffers + the folded small ones, as XProf's maxHeap


def test_memory_space_by_name():
    run = run_of("tpu_v6e_inference")
    r = mv.analyze(run, module="jit_f", memory_space="Host")
    assert r.memory_space == 5 and r.peak_heap_mib == 15360
    assert mv.memory_space_name(1) == "VMEM"


def test_bad_input_is_one_line():
    """Bad input is a UserError (exit 2); a profile without modules is NoDataError (exit 0)."""
    run = run_of("jax_mlp")
    with pytest.raises(UserError, match="jit_nope.*not found"):
        mv.analyze(run, module="jit_nope")
    with pytest.raises(UserError, match="ambiguous"):
        mv.analyze(run, module="jit__normal")
    with pytest.raises(UserError, match="memory space"):
        mv.analyze(run, memory_space="L9")
    with pytest.raises(NoDataError, match="no HLO modules"):
        mv.analyze(run_of("tf_keras"))


def test_shape_text_and_unpadded_size():
    s = xd.ShapeProto(element_type=xd.F32, dimensions=[5, 1024, 1024, 256],
                      layout=xd.LayoutProto(minor_to_major=[3, 2, 1, 0], tiles=[xd.TileProto(dimensions=[8, 128])],
                                            memory_space=1))
    assert shape_text(s) == "f32[5,1024,1024,256]{3,2,1,0:T(8,128)S(1)}"
    assert unpadded_bytes(s) == 5 * 1024 * 1024 * 256 * 4
    scalar = xd.ShapeProto(element_type=xd.S32, layout=xd.LayoutProto())
    assert shape_text(scalar) == "s32[]"
    tup = xd.ShapeProto(element_type=xd.TUPLE, tuple_shapes=[scalar, s])
    assert shape_text(tup).startswith("(s32[], f32[")
    assert unpadded_bytes(tup) == 16  # two pointers
    dyn = xd.ShapeProto(element_type=xd.BF16, dimensions=[4, 8], is_dynamic_dimension=[True, False])
    assert shape_text(dyn) == "bf16[<=4,8]" and unpadded_bytes(dyn) == 64


def test_no_textual_import():
    assert "textual" not in pathlib.Path(mv.__file__).read_text()


@pytest.mark.parametrize("profile", ["jax_mlp", "jax_two_runs", "tpu_v6e_inference", "jax_live_capture"])
def test_default_module_is_the_largest_peak_of_all(profile):
    """The pruned search (total allocation bounds the peak) picks what replaying every module picks."""
    modules = mv.hlo_modules(run_of(profile))
    sizes = {m.name: mv.module_size(m) for m in modules}
    assert all(peak <= total for peak, total in sizes.values())  # the bound the search relies on
    best = max(sizes.values())
    assert sizes[mv.default_module(modules).name] == best


def test_hlo_modules_read_a_loaded_whole_frame_instead_of_decoding_the_plane_again(monkeypatch):
    from tputui.analysis import hlo_modules

    run = RunData(open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0], use_cache=False)
    want = [(m.name, m.program_id, m.data) for m in hlo_modules.hlo_modules(run)]
    run = RunData(run.run, use_cache=False)
    run.frame(run.hosts[0])  # the whole frame, as the op tools load it
    asked = []
    real = RunData.frame
    monkeypatch.setattr(RunData, "frame",
                        lambda self, h=None, planes=None, **kw: asked.append(planes) or real(self, h, planes, **kw))
    got = [(m.name, m.program_id, m.data) for m in hlo_modules.hlo_modules(run)]
    assert got == want and len(got) > 0
    assert asked == []  # no decode of the metadata plane on its own

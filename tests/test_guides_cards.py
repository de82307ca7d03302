"""Issue #31's smaller items: the op profile root card's top Advice hints, the memory viewer buffer
card's op category (XProf's "<opcode> operation"), the CUPTI hint for GPU profiles without device
events (fixture gpu_no_device_events, XProf's overview beside it)."""
from __future__ import annotations

import json

from conftest import FIXTURES, PROFILES, settle

from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import run_tool


def _run(path) -> RunData:
    return RunData(open_logdir(str(path)).run(None), use_cache=False)


def test_op_profile_root_has_the_advice_tools_first_hints():
    for profile in ("tpu_v6e_inference",):
        ours = run_tool(_run(PROFILES / profile), "op_profile").to_json()["top_advice"]
        advice = run_tool(_run(PROFILES / profile), "smart_suggestion").items()
        assert ours and [a["title"] for a in ours] == advice["title"].to_list()[:3]
    pod = FIXTURES / "pod" / "pod_padding_oom"  # the padding check, high: first
    top = run_tool(_run(pod), "op_profile").to_json()["top_advice"]
    assert top[0]["title"] == "Layout padding risks running out of HBM" and top[0]["severity"] == "high"


async def test_op_profile_root_card_shows_them():
    from conftest import make_app
    from rich.console import Console

    from tputui.screens.op_profile import OpProfileScreen

    app = make_app(str(FIXTURES / "pod" / "pod_padding_oom"), "op_profile", use_cache=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OpProfileScreen)
        console = Console(width=200, record=True, color_system=None)
        console.print(screen.card.content)
        card = console.export_text()
        assert "Advice" in card and "Layout padding risks running out of HBM (guide; t → Advice" in card


def test_buffer_op_category_and_xprofs_operation_words():
    d = run_tool(_run(FIXTURES / "guides" / "unfused_elementwise"), "memory_viewer").to_json()
    cats = {b["name"]: (b["op_code"], b["op_category"]) for b in d["buffers_at_peak"]}
    assert cats["wrapped_multiply"] == ("fusion", "loop fusion") and cats["a.1"] == ("parameter", "parameter")
    xprof = json.loads((FIXTURES / "guides" / "unfused_elementwise" / "oracle" / "memory_viewer.json").read_text())
    ops = {b["instructionName"]: b["opCode"] for m in xprof.values() for b in m["maxHeap"] if "instructionName" in b}
    assert {n: c[0] for n, c in cats.items() if n in ops} == ops  # the opcode XProf's card reads "<op> operation"


def test_buffer_card_says_operation_and_category():
    from tputui.analysis.memory_viewer import PeakBuffer
    from tputui.screens.memory_viewer import _buffer_card

    b = PeakBuffer(number=0, label="", logical_buffer_id=3, size_bytes=1 << 20, unpadded_bytes=1 << 20,
                   name="fusion.1", category="Temporary", op_code="fusion", op_category="loop fusion")
    text = _buffer_card(b).plain
    assert "op fusion operation" in text and "category loop fusion" in text
    b = PeakBuffer(number=0, label="", logical_buffer_id=3, size_bytes=1, unpadded_bytes=1, name="copy.1",
                   op_code="copy", op_category="copy")
    assert "category" not in _buffer_card(b).plain  # said once when it adds nothing


def test_cupti_hint_on_a_gpu_profile_without_device_events():
    path = FIXTURES / "gpu_no_device_events"
    ov = run_tool(_run(path), "overview_page").to_json()
    (hint,) = ov["hints"]
    assert "CUPTI" in hint and "LD_LIBRARY_PATH" in hint and "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" in hint
    # XProf's overview shows the profile's warning in its diagnostics: ours too, the hint beside them
    xprof = json.loads((path / "oracle" / "overview_page.json").read_text())
    xmsgs = [r["c"][1]["v"] for t in xprof if isinstance(t, dict) and "rows" in t and t.get("cols")
             and t["cols"][0]["id"] == "severity" for r in t["rows"]]
    assert [d["message"] for d in ov["diagnostics"]] == xmsgs
    for quiet in (FIXTURES / "gpu_kernels", PROFILES / "jax_mlp", PROFILES / "tpu_v6e_inference"):
        assert run_tool(_run(quiet), "overview_page").to_json()["hints"] == []

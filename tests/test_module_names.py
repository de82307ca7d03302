"""XProf's program names, "<module>(<program id>)", parsed in one place (analysis/hlo_ops.py)."""
from __future__ import annotations

from tputui.analysis.hlo_ops import MODULE_NAME, module_program_id


def test_module_program_id():
    assert module_program_id("jit_train_step(4242424242)") == 4242424242
    assert module_program_id("jit_f(jit_g)(12)") == 12  # the last parenthesis holds the id
    assert module_program_id("jit_f") is None
    assert module_program_id("jit_f(12) ") is None
    assert MODULE_NAME.match("jit_f(7)").group(1) == "jit_f"

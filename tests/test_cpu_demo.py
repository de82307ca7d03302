"""The CPU demo reads right: device figures say n/a on CPU (not 0.0% of a peak), the next-step
text points at no missing section, the demo says the TPU run is one `r` away, and the advice
names its findings in words."""
from __future__ import annotations

import inspect
import re

from conftest import settle
from rich.console import Console

from tputui.analysis import advice_rules, suggestion_rules
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.demo import demo_logdir


def plain(widget) -> str:
    """The text a Static draws, as the terminal shows it."""
    console = Console(width=200, record=True, color_system=None)
    console.print(widget.render()._renderable if hasattr(widget.render(), "_renderable") else widget.render())
    return console.export_text()


async def test_cpu_demo_overview_says_n_a_and_the_tpu_run_is_one_r_away():
    app = TputuiApp(open_logdir(demo_logdir()), demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.screen.result.stats.hardware_type == "CPU_ONLY"
        summary = plain(app.screen.query_one("#ov-summary"))
        assert "n/a on CPU" in summary
        assert "of roofline" not in summary and "of HBM peak" not in summary
        rec = plain(app.screen.query_one("#ov-rec"))
        assert "custom input pipeline." in rec and "Section 3" not in rec
        hints = [n.message for n in app._notifications]
        assert any("one [b]r[/b] away" in m for m in hints)


def test_every_xprof_rule_has_a_readable_title():
    rules = set(re.findall(r'_found\("(\w+)"', inspect.getsource(suggestion_rules))) | {"BarrierCoresRule"}
    assert len(rules) == 10 and rules <= set(advice_rules.RULE_TITLES)
    assert all(not t.endswith("Rule") and " " in t or "-" in t for t in advice_rules.RULE_TITLES.values())

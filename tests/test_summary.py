"""The profile summary's figures the screen draws: per-host event counts and line spans."""
from __future__ import annotations

from conftest import PROFILES

from tputui.analysis import summary
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData


def test_line_spans_and_event_counts():
    run = RunData(open_logdir(str(PROFILES / "tpu_v6e_inference")).run(None), use_cache=False)
    r = summary.analyze(run)
    lines = r.line_spans()
    raw = r.tables()["lines"]
    assert lines.columns == ["host", "plane", "line", "events", "span"]
    assert lines["span"].to_list() == (raw["last_end_ps"] - raw["first_ps"]).to_list()
    assert r.num_events == sum(h.num_events for h in r.hosts) == int(raw["events"].sum()) > 0
    for h in r.hosts:
        assert h.planes_with_events.height <= h.planes.height
        assert (h.planes_with_events["events"] > 0).all()

"""The profile summary's figures the screen draws: per-host event counts and line spans."""
from __future__ import annotations

import re

import pytest
from conftest import FIXTURES, PROFILES
from helpers.pane import drawn

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


def test_batch_size_when_the_profile_records_it():
    """tf.data's batching iterator carries a `batch_size` stat: tf_loop batches by 32 and tf_keras
    by 64 (/work/shared/tools/gen/tf_loop.py, tf_keras.py); JAX and the TPU profile record none."""
    def of(profile):
        return summary.analyze(RunData(open_logdir(str(PROFILES / profile)).run(None), use_cache=False))

    for profile, size in (("tf_loop", 32), ("tf_keras", 64)):
        r = of(profile)
        assert r.batch_sizes == [size] and r.to_json()["batch_size"] == size
        assert r.batch_source == "Iterator::Root::Prefetch::MapAndBatch"
    for profile in ("jax_mlp", "tpu_v6e_inference"):
        r = of(profile)
        assert r.batch_sizes == [] and r.to_json()["batch_size"] is None


async def test_summary_screen_shows_the_batch_size_only_when_recorded():
    from conftest import make_app, settle

    for profile, want in (("tf_loop", "Batch size  32  (from"), ("jax_mlp", None)):
        app = make_app(profile, "summary", use_cache=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            text = re.sub(r" {2,}", "  ", drawn(app.screen.query_one("#overview")))
            if want:
                assert want in text
            else:
                assert "Batch size" not in text


@pytest.mark.parametrize("look", ["no_color", "light", "small"])
def test_summary_with_batch_size_looks(snap_compare, monkeypatch, look):
    from conftest import make_app, settle

    env, theme, size = {"no_color": ({"NO_COLOR": "1"}, None, (120, 36)), "light": ({}, "textual-light", (120, 36)),
                        "small": ({}, None, (80, 24))}[look]
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    app = make_app("tf_loop", "summary", use_cache=False)
    if theme:
        app.theme = theme
    assert snap_compare(app, terminal_size=size, run_before=settle)


def test_a_multi_host_summary_holds_one_frame_at_a_time():
    run = RunData(open_logdir(str(FIXTURES / "pod" / "pod_v4_32")).runs[0], use_cache=False)
    got = summary.analyze(run)
    assert not run._frames  # each host's frame was dropped after its summary
    assert len(got.hosts) == 4 and got.device_count == 32
    one = RunData(run.run, use_cache=False)
    want = summary.analyze(one, got.hosts[2].host)
    assert got.hosts[2].num_events == want.hosts[0].num_events > 0
    assert got.hosts[2].lines.equals(want.hosts[0].lines)
    assert len(one._frames) == 1  # a one-host summary keeps its frame for the next tool

"""Progress reaches the analysis call that asked for it, and only that call (no shared state)."""
from __future__ import annotations

import threading

from conftest import PROFILES

from tputui.data.logdir import open_logdir
from tputui.data.progress import current_progress, reporting
from tputui.data.run_data import RunData
from tputui.tools import get_tool


def run_data() -> RunData:
    return RunData(open_logdir(str(PROFILES / "jax_mlp")).run(None), use_cache=False)


def test_the_analysis_call_hears_about_reads_and_decodes():
    said: list[str] = []
    result = get_tool("framework_op_stats").analyze_fn()(run_data(), None, progress=said.append)
    assert result.to_json()  # a real result, not just messages
    assert any(m.startswith("reading ") for m in said) and any(m.startswith("decoding ") for m in said)
    assert current_progress() is None  # nothing left behind after the call


def test_two_threads_keep_their_own_callbacks():
    """Two screens' workers at once: each hears its own frames only, and one finishing first
    does not clear the other's callback (what RunData.progress, set and cleared, could do)."""
    run = run_data()
    hosts = run.hosts
    heard: dict[str, list[str]] = {"a": [], "b": []}
    first_done = threading.Event()

    def worker(name: str, wait: bool) -> None:
        with reporting(heard[name].append):
            if wait:
                first_done.wait(30)
            run.frame(hosts[0], planes=None if name == "a" else ["/host:CPU"])
        if not wait:
            first_done.set()

    threads = [threading.Thread(target=worker, args=("b", True)), threading.Thread(target=worker, args=("a", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert heard["a"] and heard["b"], heard
    assert all("decoding" in m or "reading" in m for m in heard["a"] + heard["b"])


def test_an_explicit_callback_wins_over_the_enclosing_block():
    outer: list[str] = []
    inner: list[str] = []
    with reporting(outer.append):
        run_data().frame(None, progress=inner.append)
    assert inner and not outer

"""RunData.memo (data/run_memo.py) and the reduce memoized in it (analysis/host_map.py)."""
from __future__ import annotations

import threading

from conftest import FIXTURES

from tputui.analysis import host_map, op_stats
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.data.run_memo import MemoKind, RunMemo
from tputui.export import export_text

POD = FIXTURES / "pod" / "pod_v4_32"


def test_memo_keeps_one_value_per_kind_and_part():
    memo = RunMemo()
    a: MemoKind[list[int]] = MemoKind("a")
    b: MemoKind[str] = MemoKind("b")
    assert memo.get(a, None) is None
    first = memo.put(a, None, [1])
    assert memo.put(a, None, [2]) is first  # the first kept value wins
    assert memo.get_or_make(a, "h", lambda: [3]) == [3] and memo.get(a, "h") == [3]
    assert memo.get_or_make(b, None, lambda: "x") == "x" and len(memo) == 3
    calls = []
    assert memo.get_or_make(b, None, lambda: calls.append(1) or "y") == "x" and not calls


def test_memo_from_threads_keeps_one_value():
    memo, kind = RunMemo(), MemoKind[object]("k")
    kept = []
    threads = [threading.Thread(target=lambda: kept.append(memo.get_or_make(kind, None, object))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(k) for k in kept}) == 1


def test_one_overview_combines_the_hosts_once(monkeypatch):
    """The overview, its advice rules and the performance guide read one combine of the hosts
    (three before run_op_stats was memoized)."""
    calls = []
    real = op_stats.combine
    monkeypatch.setattr(op_stats, "combine", lambda hosts: calls.append(len(hosts)) or real(hosts))
    run = RunData(open_logdir(str(POD)).runs[0], use_cache=False, jobs=1)
    export_text(run, "overview_page", "json")
    assert calls == [4]
    assert host_map.run_op_stats(run) is host_map.run_op_stats(run)
    host_map.run_op_stats(run, run.hosts[0])  # another host choice: its own combine
    assert calls == [4, 1]

"""Load two runs' tool results and diff them (export layer: the tools run through `export.run_tool`).

    diff_runs(run_a, run_b, host=None) -> analysis.diff.RunDiff
    resolve_pair(a, b, run_a=None, run_b=None) -> (RunData, label, RunData, label)

A and B are each a logdir, a run folder or a profile file (local or gs://). A name that is not a
path but a run of the other argument's logdir picks that run ("tputui diff ./logs 2026_01_01_00_00_00");
the same logdir twice without --run-a / --run-b compares its previous run (A) with its newest (B).
"""
from __future__ import annotations

import os

from tputui.analysis.diff import RunDiff, Side, diff
from tputui.analysis.result import NoDataError
from tputui.data.logdir import Logdir, open_logdir
from tputui.data.progress import Step
from tputui.data.run_data import RunData
from tputui.errors import UserError
from tputui.export import run_tool

_TOOLS = {"overview": "overview_page", "hlo_stats": "hlo_stats", "framework_op_stats": "framework_op_stats",
          "memory_profile": "memory_profile"}


class DiffStep(Step):
    """One of the diff's own steps (a tool of one side), as against the lines of the tool's own
    loading it passes on: a screen shows the first as the count and the second under it."""


def load_side(run: RunData, label: str, host: str | None = None, progress=None, steps: tuple[int, int] | None = None
              ) -> Side:
    """The tools' results of one run (a tool without data leaves None and a note). `steps`:
    (steps done before this side, steps in all), for the progress lines' count."""
    run.require_hosts()
    if host is not None:
        run.host_file(host)  # one clear line when B lacks A's host
    side = Side(label=label, run=run.name, hosts=[host] if host else run.hosts, path=run.run.path)
    before, total = steps or (0, len(_TOOLS))
    for k, (attr, tool) in enumerate(_TOOLS.items()):
        if progress:
            progress(DiffStep(f"{label}: {tool} ({before + k + 1} of {total})", before + k, total))
        try:
            setattr(side, attr, run_tool(run, tool, host))
        except NoDataError as e:
            side.notes.append(f"no {tool}: {e}")
    side.notes += [f"host {h} left out: {reason}" for h, reason in run.unreadable.items()]
    return side


def diff_runs(a: RunData, b: RunData, host: str | None = None, label_a: str = "A", label_b: str = "B",
              progress=None) -> RunDiff:
    n = len(_TOOLS)
    return diff(load_side(a, label_a, host, progress, (0, 2 * n)), load_side(b, label_b, host, progress, (n, 2 * n)))


def _looks_like_path(text: str) -> bool:
    return text.startswith("gs://") or os.path.exists(text)


def resolve_pair(a: str, b: str, run_a: str | None = None, run_b: str | None = None,
                 use_cache: bool = True) -> tuple[RunData, str, RunData, str]:
    """The two runs `tputui diff A B` compares, with labels that say where each came from."""
    if not _looks_like_path(a) and not _looks_like_path(b):
        raise UserError(f"no such file or directory: {a}")
    if not _looks_like_path(b):  # B names a run of A's logdir
        _check_run_name(b, open_logdir(a))
        run_b, b = run_b or b, a
    elif not _looks_like_path(a):
        _check_run_name(a, open_logdir(b))
        run_a, a = run_a or a, b
    la, lb = open_logdir(a), open_logdir(b)
    if la.root == lb.root and run_a is None and run_b is None:
        if len(la.runs) < 2:
            raise UserError(f"{a} has one run ({la.runs[0].name if la.runs else 'none'}): give two logdirs "
                            "or runs to compare (--run-a / --run-b)")
        run_a, run_b = la.runs[1].name, la.runs[0].name  # newest first: previous vs newest
    ra, rb = la.run(run_a), lb.run(run_b)
    return (RunData(ra, use_cache=use_cache), _label(a, ra.name, la, lb),
            RunData(rb, use_cache=use_cache), _label(b, rb.name, lb, la))


def _check_run_name(name: str, logdir: Logdir) -> None:
    try:
        logdir.run(name)
    except UserError:
        runs = ", ".join(r.name for r in logdir.runs)
        raise UserError(f"no such file or directory: {name} (nor a run of {logdir.root}: {runs})") from None


def _label(path: str, run: str, mine: Logdir, other: Logdir) -> str:
    if mine.root == other.root:
        return run
    base = os.path.basename(path.rstrip("/")) or path
    return run if run.endswith(base) else f"{base} · {run}"  # a run folder names itself

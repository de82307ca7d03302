"""Shared by the op-tool tests: load a fixture run, read XProf DataTable JSON, compare rows."""
from __future__ import annotations

import json
import math

from conftest import FIXTURES, PROFILES, oracle_dir

from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

REL = 1e-9  # relative tolerance for floats (XProf computes in doubles; we do the same operations)


def run_of(profile: str) -> RunData:
    return RunData(open_logdir(str(PROFILES / profile)).runs[0])


def oracle(profile: str, tool: str):
    return json.loads((oracle_dir(profile) / f"{tool}.json").read_text())


def extra_oracle(name: str):
    return json.loads((FIXTURES / "op_tools" / name).read_text())


def datatable_rows(table: dict) -> list[dict]:
    cols = [c["id"] for c in table["cols"]]
    return [{c: cell.get("v") for c, cell in zip(cols, row["c"])} for row in table["rows"]]


def same(ours, theirs) -> bool:
    if isinstance(theirs, float) or isinstance(ours, float):
        return ours is not None and math.isclose(float(ours), float(theirs), rel_tol=REL, abs_tol=1e-12)
    return ours == theirs


def mismatches(ours: list[dict], theirs: list[dict], columns, renames=None) -> list[str]:
    renames = renames or {}
    bad = []
    for i, (a, b) in enumerate(zip(ours, theirs)):
        for c in columns:
            mine = a.get(renames.get(c, c))
            if not same(mine, b[c]):
                bad.append(f"row {i} {c}: ours {mine!r} xprof {b[c]!r}")
    return bad

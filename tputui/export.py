"""Headless export: any tool's result as JSON or CSV (for scripts, CI and our tests).

A result writes JSON through `write_json(fp)` when it has one (large documents such as the
trace stream out), else `to_json()` is dumped; CSV writes one of `tables()` (the first unless
`table` names another). A result listing `text_formats` (the graph viewer: text, dot) writes
those through `render(fmt)`.
"""
from __future__ import annotations

import io
import json
import math
from typing import IO, Any, cast

import polars as pl

from tputui.analysis.result import NoDataError, TextResult, ToolResult
from tputui.data.logdir import Logdir
from tputui.data.run_data import RunData
from tputui.errors import UserError
from tputui.tools import TOOLS, get_tool, tools_with_data

FORMATS = ("json", "csv", "text", "dot")


class ExportError(UserError):
    """Bad export arguments (unknown tool, table or format): one line for the user."""


def _clean(obj: Any) -> Any:
    """JSON has no NaN/Infinity: write them as null, like XProf's tables do."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def run_tool(run: RunData, tool: str, host: str | None = None, **options) -> ToolResult:
    try:
        t = get_tool(tool)
    except KeyError:
        raise ExportError(f"unknown tool {tool!r} (tools: {', '.join(t.name for t in TOOLS)})") from None
    accepted = t.option_names()
    for key in options:
        if key not in accepted:
            known = f" (its options: {', '.join(accepted)})" if accepted else ""
            raise ExportError(f"{tool} takes no option {key!r}{known}")
    return t.analyze_fn()(run, host, **options)


def write_result(result: ToolResult, fmt: str, out: IO[str], table: str | None = None) -> dict | None:
    """Write `result` to `out`; for CSV, return the tables it was given (callers reuse them)."""
    if fmt == "json":
        if hasattr(result, "write_json"):
            result.write_json(out)
        else:
            json.dump(_clean(result.to_json()), out, indent=1, default=str)
            out.write("\n")
    elif fmt == "csv":
        tables = result.tables()
        if not tables:
            raise NoDataError("this tool has no table to write as CSV; use --format json")
        name = table or next(iter(tables))
        if name not in tables:
            raise ExportError(f"no table {name!r} (tables: {', '.join(tables)})")
        out.write(csv_text(tables[name]))
        return tables
    elif fmt in getattr(result, "text_formats", ()):
        out.write(cast(TextResult, result).render(fmt))
    elif fmt in FORMATS:
        raise ExportError(f"--format {fmt} is for the graph viewer; use json or csv")
    else:
        raise ExportError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")
    return None


def csv_text(frame: pl.DataFrame) -> str:
    """A table as CSV, nested cells as JSON text (the screens' `x` writes the same)."""
    return _flat(frame).write_csv()


def _flat(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV has no nested values: lists and structs are written as JSON text in their cell."""
    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Array, pl.Struct))]
    if not nested:
        return frame
    return frame.with_columns(
        pl.Series(c, [None if v is None else json.dumps(_clean(v), default=str) for v in frame[c].to_list()],
                  dtype=pl.String)
        for c in nested)


def export_text(run: RunData, tool: str, fmt: str = "json", host: str | None = None,
                table: str | None = None, **options) -> str:
    """The export as a string (tests and small documents)."""
    buf = io.StringIO()
    write_result(run_tool(run, tool, host, **options), fmt, buf, table)
    return buf.getvalue()


def listing(logdir: Logdir, use_cache: bool = True) -> dict[str, Any]:
    """Runs, hosts and the tools with data in each run (`tputui export LOGDIR --list`).

    Every host file is checked first; unreadable ones are listed under "unreadable" with the
    reason (and left out when finding tools). `readable_hosts` counts the rest, over all runs."""
    runs = []
    readable = 0
    for r in logdir.runs:
        rd = RunData(r, use_cache=use_cache)
        rd.check_hosts()
        entry: dict[str, Any] = {"run": r.name, "path": r.path, "hosts": [h.host for h in r.hosts]}
        if rd.hosts:
            entry["tools"] = tools_with_data(rd)
        if rd.unreadable:  # after the tools: finding them may decode and meet more damage
            entry["unreadable"] = dict(rd.unreadable)
        readable += len(rd.hosts)
        runs.append(entry)
    return {"logdir": logdir.root, "runs": runs, "readable_hosts": readable}

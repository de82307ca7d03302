"""`tputui sql`: SQL over a run's named tables, with Polars' SQL engine (lazy).

Export layer: the derived tables come from the tools' results through `export.run_tool`.

Tables (`TABLES`):
  events    one row per event, XProf's events-db columns (see analysis/events_table.py); built
            column by column, only the columns a query names, only for the hosts asked for
  ops       the framework op stats rows (host and device ops with XProf's figures)
  hlo_ops   the HLO stats rows (TPU / GPU profiles)
  steps     the per-step time breakdown of the overview page (empty without step markers)

`ops`, `hlo_ops` and `steps` come from the tools' public results (`run_tool`), computed only when a
query names them. Errors (unknown table or column, syntax, a table without data) are one line.
"""
from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import polars as pl
from polars.io.plugins import register_io_source

from tputui.analysis.events_table import SCHEMA as EVENTS_SCHEMA
from tputui.analysis.events_table import EventColumns
from tputui.analysis.result import NoDataError
from tputui.data.run_data import RunData
from tputui.errors import UserError
from tputui.export import run_tool

TABLES = {
    "events": "one row per event (XProf's events-db columns, plus host, plane, line, name, duration_ns)",
    "ops": "framework op stats rows (host and device ops)",
    "hlo_ops": "HLO stats rows (TPU / GPU device ops)",
    "steps": "per-step time breakdown (overview page)",
}
# Which tool and table each derived table comes from.
_TOOL_TABLES = {"ops": ("framework_op_stats", "framework_op_stats"), "hlo_ops": ("hlo_stats", "hlo_stats"),
                "steps": ("overview_page", "steps")}
_STEPS_WITHOUT_DATA = {"step": pl.Int64(), "name": pl.String(), "step_time_ms": pl.Float64()}
_STATEMENT = re.compile(r"^\s*(\(\s*)*(select|with|explain|show)\b", re.IGNORECASE)
_TABLE_REFS = re.compile(r"\b(?:from|join)\s+([A-Za-z_][\w]*)", re.IGNORECASE)
# Polars SQL's table functions read files and URLs (read_csv, read_parquet, read_ipc, read_json;
# scan_* for any later ones): off unless asked for, as Perfetto's trace processor keeps them off.
_FILE_FUNCTION = re.compile(r'(?<![\w.$])"?((?:read|scan)_\w*)"?\s*\(', re.IGNORECASE)
_LITERALS = re.compile(r"'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/", re.DOTALL)
ALLOW_FLAG = "--allow-file-access"


class SqlError(UserError):
    """A query Polars cannot run, said in one line."""


# One EventColumns per decoded frame: a second query reuses the columns the first one built.
_columns_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_columns_lock = threading.Lock()


def _event_columns(run: RunData, host: str) -> EventColumns:
    frame = run.frame(host)
    with _columns_lock:
        cols = _columns_of.get(frame)
        if cols is None:
            cols = _columns_of[frame] = EventColumns(frame, host)
    return cols


@dataclass
class Catalog:
    """The named tables of one run (or one host of it), as LazyFrames."""

    run: RunData
    host: str | None = None
    _failures: dict[str, UserError] = field(default_factory=dict)
    _tool_frames: dict[str, pl.DataFrame] = field(default_factory=dict)

    @property
    def hosts(self) -> list[str]:
        if self.host is not None:
            self.run.host_file(self.host)  # a clear error for an unknown host
            return [self.host]
        self.run.check_hosts()  # unreadable host files are left out, as the tools leave them out
        return self.run.require_hosts()

    def frames(self) -> dict[str, pl.LazyFrame]:
        return {"events": self._events(), **{name: self._tool_table(name) for name in _TOOL_TABLES}}

    def _events(self) -> pl.LazyFrame:
        hosts = self.hosts

        def source(with_columns, predicate, n_rows, batch_size):
            wanted = list(with_columns) if with_columns is not None else list(EVENTS_SCHEMA)
            need = list(dict.fromkeys(wanted + (predicate.meta.root_names() if predicate is not None else [])))
            left = n_rows
            for h in hosts:
                if left is not None and left <= 0:
                    return
                df = _event_columns(self.run, h).frame_of(need)
                if predicate is not None:
                    df = df.filter(predicate)
                df = df.select(wanted)
                if left is not None:
                    df = df.head(left)
                    left -= df.height
                yield df

        return register_io_source(source, schema=EVENTS_SCHEMA, explain_name="tputui events")

    def _tool_table(self, name: str) -> pl.LazyFrame:
        def frame() -> pl.DataFrame:
            if name not in self._tool_frames:
                self._tool_frames[name] = self._load_tool_table(name)
            return self._tool_frames[name]

        def schema():
            return frame().schema

        def source(with_columns, predicate, n_rows, batch_size):
            df = frame()
            if predicate is not None:
                df = df.filter(predicate)
            if with_columns is not None:
                df = df.select(with_columns)
            yield df.head(n_rows) if n_rows is not None else df

        return register_io_source(source, schema=schema, explain_name=f"tputui {name}")

    def _load_tool_table(self, name: str) -> pl.DataFrame:
        tool, table = _TOOL_TABLES[name]
        try:
            return run_tool(self.run, tool, self.host).tables()[table]
        except NoDataError as e:
            if name == "steps":  # a run without steps has an empty steps table, not an error
                return pl.DataFrame(schema=_STEPS_WITHOUT_DATA)
            self._failures[name] = NoDataError(f"table {name} has no data in this run: {e}")
            raise
        except UserError as e:
            self._failures[name] = e
            raise


@dataclass
class QueryResult:
    """The rows a query returned (`tables()["result"]`), with the query and its run time."""

    query: str
    frame: pl.DataFrame
    seconds: float = 0.0
    run: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "run": self.run, "columns": self.frame.columns, "rows": self.rows()}

    def rows(self) -> list[dict[str, Any]]:
        return self.frame.to_dicts()

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"result": self.frame}


def check_statement(query: str, allow_file_access: bool = False) -> str:
    q = query.strip().rstrip(";").strip()
    if not q:
        raise SqlError("empty query (try: SELECT name, count(*) FROM events GROUP BY name)")
    if not _STATEMENT.match(q):
        raise SqlError("only SELECT queries are answered (tables: " + ", ".join(TABLES) + ")")
    if not allow_file_access and (m := _FILE_FUNCTION.search(_LITERALS.sub("''", q))):
        raise _no_file_access(m.group(1))
    return q


def _no_file_access(what: str) -> SqlError:
    return SqlError(f"{what} reads files or URLs, which queries may not by default "
                    f"(tables: {', '.join(TABLES)}; {ALLOW_FLAG} allows it)")


def _outside_scans(lf: pl.LazyFrame) -> list[str]:
    """The plan's scans that are not our tables (a file or URL a table function reads)."""
    return [line.strip() for line in lf.explain(optimized=False).splitlines()
            if "SCAN" in line and "PYTHON[tputui " not in line]


def run_query(run: RunData, query: str, host: str | None = None, allow_file_access: bool = False) -> QueryResult:
    """Run one SELECT over the run's tables (all hosts, or `host`). Unless `allow_file_access`,
    a query that would read a file or URL is refused before anything is read: by the names of
    the SQL functions that do, then (whatever the spelling) by the scans in its plan."""
    q = check_statement(query, allow_file_access)
    catalog = Catalog(run, host)
    frames = catalog.frames()
    t0 = perf_counter()
    try:
        ctx = pl.SQLContext(frames=frames, eager=False)
        lazy = ctx.execute(q)
        if not allow_file_access and (outside := _outside_scans(lazy)):
            raise _no_file_access(outside[0])
        frame = lazy.collect()
    except UserError:
        raise
    except Exception as e:  # noqa: BLE001 - Polars' errors become one line that names what is wrong
        raise _explain(e, q, frames, catalog) from None
    return QueryResult(q, frame, perf_counter() - t0, run.name)


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _explain(e: Exception, query: str, frames: dict[str, pl.LazyFrame], catalog: Catalog) -> UserError:
    for name, failure in catalog._failures.items():
        if name in _TABLE_REFS.findall(query) or name in str(e):
            return failure
    msg = _first_line(e)
    m = re.search(r"relation '([^']+)' was not found", msg)
    if m:
        return SqlError(f"unknown table {m.group(1)!r} (tables: {', '.join(TABLES)})")
    m = re.search(r'unable to find column "([^"]+)"', msg)
    if m:
        column = m.group(1)
        refs = [t for t in _TABLE_REFS.findall(query) if t in frames] or ["events"]
        table = next((t for t in refs if column not in _columns(frames[t])), refs[0])
        return SqlError(f"unknown column {column!r} in table {table} (its columns: {', '.join(_columns(frames[table]))})")
    return SqlError(f"SQL: {msg}")


def _columns(lf: pl.LazyFrame) -> list[str]:
    try:
        return list(lf.collect_schema())
    except Exception:  # noqa: BLE001 - a table whose tool fails has no columns to list
        return []


def table_help() -> str:
    """The tables and the events columns, for `--help` and the SQL prompt."""
    lines = [f"  {name:8} {text}" for name, text in TABLES.items()]
    return "\n".join(lines) + "\n  events columns: " + ", ".join(EVENTS_SCHEMA)

"""`tputui sql LOGDIR QUERY [--run R] [--host H] [--format table|csv|json] [-o FILE]`."""
from __future__ import annotations

import argparse
import sys

from tputui.query import table_help
from tputui.text_output import write_text

EXAMPLES = """tables:
{tables}

examples:
  tputui sql ./logs "SELECT name, count(*) AS n, sum(duration_ns) / 1e6 AS ms FROM events
                     GROUP BY name ORDER BY ms DESC LIMIT 10"
  tputui sql ./logs "SELECT hlo_op, sum(self_time_ns) FROM events WHERE category = 'XLA Ops' GROUP BY hlo_op"
  tputui sql ./logs "SELECT * FROM steps" --format csv > steps.csv
  tputui sql ./logs "SELECT op_name, total_self_time_us FROM ops ORDER BY 2 DESC" --format json"""


def sql_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tputui sql", description="Answer a SQL query (Polars SQL) over a profile's tables.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES.format(tables=table_help()))
    p.add_argument("logdir", help="logdir, plugins/profile folder, run folder, .xplane.pb file or gs:// URL")
    p.add_argument("query", help="one SELECT statement")
    p.add_argument("--run", help="run to query (default: newest)")
    p.add_argument("--host", help="host to query (default: all hosts)")
    p.add_argument("--format", default="table", choices=("table", "csv", "json"),
                   help="table (default: aligned text), csv, or json (an array of row objects)")
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the decode cache")
    p.add_argument("--allow-file-access", action="store_true",
                   help="let the query read files and URLs (read_csv, read_parquet, ...): off by default")
    return p


def render(result, fmt: str) -> str:
    """The query's rows as the terminal table, CSV or a JSON array of row objects."""
    if fmt == "json":  # Polars writes NaN / inf as null, as JSON needs
        return result.frame.write_json() + "\n"
    if fmt == "csv":
        from tputui.export import csv_text

        return csv_text(result.frame)
    from tputui.text_table import text_table

    return text_table(result.frame)


def main(argv: list[str]) -> int:
    from tputui.data.logdir import open_logdir
    from tputui.data.run_data import RunData
    from tputui.query import check_statement, run_query

    a = sql_parser().parse_args(argv)
    check_statement(a.query, a.allow_file_access)  # a bad statement fails before anything is read
    logdir = open_logdir(a.logdir)
    run = RunData(logdir.run(a.run), use_cache=not a.no_cache)
    result = run_query(run, a.query, a.host, a.allow_file_access)
    text = render(result, a.format)
    write_text(text, a.output)
    for host, reason in run.unreadable.items():
        print(f"tputui: note: host {host} left out: {reason}", file=sys.stderr)
    return 0

"""Time `tputui sql` on a big profile against XProf's events db (create_events_db + a DuckDB query).

usage: python bench/sql.py [LOGDIR] [--repeat N]

LOGDIR defaults to bench/_work/big (made with ../shared/tools/gen/big_trace.py when missing: ~2M
events). For each query: ours in a fresh process with an empty cache dir (decode + the columns the
query names + Polars SQL; the whole `tputui sql` command also timed), and again with the decode
cache warm; XProf's side is its events-db conversion of the same file (xspace_to_parquet, what
`xprof create_events_db` runs, conversion alone) plus DuckDB answering the same query over the
Parquet file, in the python with xprof (XPROF_PYTHON). Best of N alternating runs (shared machine).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from overview import ensure_profile  # bench/overview.py: makes the big profile when it is missing

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEV_PY = sys.executable
ORACLE_PY = os.environ.get("XPROF_PYTHON", "/opt/venvs/oracle/bin/python")
QUERIES = [
    # XProf's column names only, so DuckDB answers the same query over XProf's events db.
    "SELECT kernel_name, count(*) AS n, sum(end_ns - start_ns) AS ns FROM events GROUP BY kernel_name "
    "ORDER BY ns DESC LIMIT 10",
    "SELECT thread_name, count(*) AS n, sum(self_time_ns) AS ns FROM events GROUP BY thread_name ORDER BY ns DESC",
    "SELECT count(*) AS n FROM events WHERE kernel_name LIKE 'ThunkExecutor%' AND self_time_ns > 1000",
]

OURS = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.query import run_query
run = RunData(open_logdir(sys.argv[1]).run(None))
t1 = time.perf_counter()
frame = run.frame()
t2 = time.perf_counter()
res = run_query(run, sys.argv[2])
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "decode_s": t2 - t1, "query_s": t3 - t2, "rows": res.frame.height,
                  "events": frame.num_events, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# XProf's converter and DuckDB run in separate processes: loading both into one crashed here.
XPROF_CONVERT = r"""
import json, pathlib, sys, time
from xprof.convert.events_db.python import pywrap_events_db_c_api as db
t0 = time.perf_counter()
db.xspace_to_parquet(input_path=pathlib.Path(sys.argv[1]), output_path=pathlib.Path(sys.argv[2]),
                     options=db.ParquetExportOptions(compression_type=db.ArrowCompressionType.ZSTD,
                                                     compression_level=3))
print(json.dumps({"convert_s": time.perf_counter() - t0}), flush=True)
"""
XPROF_QUERY = r"""
import json, sys, time
import duckdb
t0 = time.perf_counter()
con = duckdb.connect()
con.execute(f"CREATE VIEW events AS SELECT * FROM read_parquet('{sys.argv[1]}')")
rows = con.execute(sys.argv[2]).fetchall()
print(json.dumps({"query_s": time.perf_counter() - t0, "rows": len(rows)}), flush=True)
"""


def _last_json(text: str) -> dict:
    return json.loads([ln for ln in text.splitlines() if ln.startswith("{")][-1])


def ours(logdir: pathlib.Path, query: str, cache: str) -> tuple[dict, float]:
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    env = dict(env, PYTHONPATH=str(ROOT))  # this checkout's tputui, whatever the venv has installed
    out = subprocess.run([DEV_PY, "-c", OURS, str(logdir), query], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True)
    t = time.perf_counter()
    subprocess.run([DEV_PY, "-m", "tputui.cli", "sql", str(logdir), query, "-o", os.devnull],
                   cwd=ROOT, env=dict(env, PYTHONPATH=str(ROOT)), check=True, capture_output=True)
    return _last_json(out.stdout), time.perf_counter() - t


def xprof(xplane: pathlib.Path, query: str) -> dict:
    # XProf's library may crash while its interpreter exits, after printing: read what it printed.
    with tempfile.TemporaryDirectory() as tmp:
        pq = str(pathlib.Path(tmp) / "events.parquet")
        conv = subprocess.run([ORACLE_PY, "-c", XPROF_CONVERT, str(xplane), pq], capture_output=True, text=True)
        query_out = subprocess.run([ORACLE_PY, "-c", XPROF_QUERY, pq, query], capture_output=True, text=True)
        return {**_last_json(conv.stdout), **_last_json(query_out.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("logdir", nargs="?", default=str(ROOT / "bench" / "_work" / "big"))
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    logdir = pathlib.Path(a.logdir)
    ensure_profile(logdir)
    xplane = next(logdir.rglob("*.xplane.pb"))
    for q in QUERIES:
        cold, warm, xp = {"decode_s": 1e9, "query_s": 0}, {"decode_s": 1e9, "query_s": 0}, {"convert_s": 1e9, "query_s": 0}
        cold_whole = warm_whole = 1e9
        for _ in range(a.repeat):
            with tempfile.TemporaryDirectory() as cache:
                c, cw = ours(logdir, q, cache)  # empty cache: decode from the file
                w, ww = ours(logdir, q, cache)  # the decode cache the first run wrote
            cold = min(cold, c, key=lambda d: d["decode_s"] + d["query_s"])
            warm = min(warm, w, key=lambda d: d["decode_s"] + d["query_s"])
            cold_whole, warm_whole = min(cold_whole, cw), min(warm_whole, ww)
            xp = min(xp, xprof(xplane, q), key=lambda d: d["convert_s"] + d["query_s"])
        assert cold["rows"] == xp["rows"], (cold["rows"], xp["rows"])
        x_total = xp["convert_s"] + xp["query_s"]
        print(f"query: {q}")
        print(f"  profile: {xplane.stat().st_size / 1e6:.1f} MB, {cold['events']:,} events; {cold['rows']} result rows")
        print(f"  XProf create_events_db {xp['convert_s']:.2f} s + DuckDB query {xp['query_s']:.3f} s = {x_total:.2f} s")
        print(f"  tputui, cold: decode {cold['decode_s']:.2f} s + query {cold['query_s']:.3f} s "
              f"(peak RSS {cold['rss_mb']:.0f} MB)  ratio {(cold['decode_s'] + cold['query_s']) / x_total:.2f}x; "
              f"whole `tputui sql` {cold_whole:.2f} s")
        print(f"  tputui, warm decode cache: decode {warm['decode_s']:.2f} s + query {warm['query_s']:.3f} s  "
              f"ratio {(warm['decode_s'] + warm['query_s']) / x_total:.2f}x; whole `tputui sql` {warm_whole:.2f} s")


if __name__ == "__main__":
    sys.exit(main())

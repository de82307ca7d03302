"""XProf's events db for every fixture profile, reduced to a small JSON the `events` table tests read.

For each `.xplane.pb` under tests/fixtures (profiles, pod, gpu_kernels) it runs XProf 2.24's own
converter (`xprof.convert.events_db...xspace_to_parquet`, what `xprof create_events_db` calls) in a
python that has xprof, reads the Parquet file and keeps: the row count; per category the row count
and the sums of self_time_ns, flops, memory_accessed, start_ns and end_ns; and per column the count
of rows for each distinct value (columns with at most MAX_DISTINCT values).

    XPROF_PYTHON=/work/xvenv/bin/python python scripts/make_events_db_oracle.py
    -> tests/fixtures/events_db/oracle.json
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

import polars as pl

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
OUT = FIXTURES / "events_db" / "oracle.json"
XPROF_PYTHON = os.environ.get("XPROF_PYTHON", "/opt/venvs/oracle/bin/python")
MAX_DISTINCT = 400
VALUE_COLUMNS = ("device", "thread_name", "kernel_name", "tf_op_name", "tf_op_type", "hlo_op", "hlo_module",
                 "step", "thread_id", "stream_id", "source_line")
SUMMED = ("self_time_ns", "flops", "memory_accessed", "start_ns", "end_ns")

CONVERT = """
import pathlib, sys
from xprof.convert.events_db.python import pywrap_events_db_c_api as db
db.xspace_to_parquet(input_path=pathlib.Path(sys.argv[1]), output_path=pathlib.Path(sys.argv[2]),
                     options=db.ParquetExportOptions())
print("ok", flush=True)
"""


def convert(xplane: pathlib.Path, parquet: pathlib.Path) -> None:
    # XProf's library can crash while the interpreter exits, after the file is written: check the file.
    out = subprocess.run([XPROF_PYTHON, "-c", CONVERT, str(xplane), str(parquet)], capture_output=True, text=True)
    if "ok" not in out.stdout or not parquet.exists():
        sys.exit(f"conversion failed for {xplane}: {out.stderr[-2000:]}")


def summarize(frame: pl.DataFrame) -> dict:
    cats = frame.group_by("category").agg(pl.len().alias("rows"), *[pl.col(c).sum() for c in SUMMED]).sort("category")
    values = {}
    for c in VALUE_COLUMNS:
        counts = frame.group_by(c).len().sort(c, nulls_last=True)
        if counts.height <= MAX_DISTINCT:
            values[c] = [[v, n] for v, n in counts.iter_rows()]
    return {"rows": frame.height, "categories": {r["category"]: {k: v for k, v in r.items() if k != "category"}
                                                 for r in cats.iter_rows(named=True)}, "values": values}


def main() -> None:
    files = sorted(p for p in FIXTURES.rglob("*.xplane.pb"))
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, f in enumerate(files):
            pq = pathlib.Path(tmp) / f"{i}.parquet"
            convert(f, pq)
            result[str(f.relative_to(FIXTURES))] = summarize(pl.read_parquet(pq))
            print(f"{f.relative_to(FIXTURES)}: {result[str(f.relative_to(FIXTURES))]['rows']} rows", file=sys.stderr)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

"""`tputui sql` reads no file and no URL unless asked (issue #33 item 10): Polars SQL's table
functions (read_csv, read_parquet, ...) are refused in one line before anything is read, whatever
their spelling; `--allow-file-access` allows them."""
from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import FIXTURES

from tputui.cli import main
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.query import SqlError, run_query

POD = str(FIXTURES / "pod" / "pod_v5e_single")


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret.csv"
    path.write_text("token\nhunter2\n")
    return path


@pytest.mark.parametrize("call", ["read_csv('{p}')", "READ_CSV ('{p}')", '"read_csv"(\'{p}\')',
                                  "read_parquet('{p}.parquet')", "read_json('{p}')", "read_ipc('{p}')",
                                  "read_csv('http://127.0.0.1:9/secret.csv')"])
def test_file_functions_are_refused_by_default(secret, capsys, call):
    query = f"SELECT * FROM {call.format(p=secret)}"
    assert main(["sql", POD, query, "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "hunter2" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("tputui: error: ") and "reads files or URLs" in line and "--allow-file-access" in line
    with pytest.raises(SqlError, match="reads files or URLs"):
        run_query(RunData(open_logdir(POD).runs[0]), query)  # the app's SQL prompt: the same refusal


def test_allow_file_access_reads_the_file(secret, capsys):
    assert main(["sql", POD, f"SELECT * FROM read_csv('{secret}')", "--format", "json",
                 "--allow-file-access"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"token": "hunter2"}]


def test_words_in_strings_and_comments_are_not_calls(capsys):
    assert main(["sql", POD, "SELECT 'read_csv(x)' AS s FROM steps LIMIT 1 -- read_parquet(y)",
                 "--format", "json"]) == 0
    assert capsys.readouterr().out.strip() in ("[]", '[{"s":"read_csv(x)"}]')


def test_a_plan_that_scans_a_file_is_caught_whatever_called_it(secret):
    """The second guard: the plan's scans, for a spelling the name check would miss."""
    from tputui.query import _outside_scans

    assert _outside_scans(pl.scan_csv(secret).join(pl.LazyFrame({"token": ["x"]}), on="token"))
    assert not _outside_scans(pl.LazyFrame({"a": [1]}).select(pl.col("a") + 1))

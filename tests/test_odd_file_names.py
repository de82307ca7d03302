"""A host file or run folder whose name is not UTF-8 (issue #33 item 3): its name is shown with
the byte escaped (\\xNN) and every command goes on, the file itself still read through its real
name."""
from __future__ import annotations

import json
import os
import sys

import pytest
from conftest import FIXTURES, settle

from tputui.cli import main

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that takes any byte in names")
POD = FIXTURES / "pod" / "pod_v4_32" / "plugins" / "profile" / "2026_11_23_10_00_00"


def odd_logdir(tmp_path) -> str:
    """Two hosts of pod_v4_32, one named with a 0xff byte, in a run folder ending with 0xfe."""
    run = os.path.join(os.fsencode(tmp_path), b"plugins", b"profile", b"2026_11_23_10_00_00\xfe")
    os.makedirs(run)
    for name, source in ((b"v4-w-0.xplane.pb", "v4-w-0"), (b"v4-w-\xff.xplane.pb", "v4-w-1")):
        with open(os.path.join(run, name), "wb") as f:
            f.write((POD / f"{source}.xplane.pb").read_bytes())
    return str(tmp_path)


def test_list_export_and_sql_name_the_odd_host_escaped(tmp_path, capsys):
    logdir = odd_logdir(tmp_path)
    assert main(["export", logdir, "--list"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["run"] == "2026_11_23_10_00_00\\xfe" and run["path"].endswith("2026_11_23_10_00_00\\xfe")
    assert run["hosts"] == ["v4-w-0", "v4-w-\\xff"] and "unreadable" not in run and run["tools"]
    assert main(["export", logdir, "--tool", "overview_page"]) == 0
    assert json.loads(capsys.readouterr().out)["hosts"] == ["v4-w-0", "v4-w-\\xff"]
    assert main(["export", logdir, "--tool", "trace_viewer", "--host", "v4-w-\\xff", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["traceEvents"]
    assert main(["sql", logdir, "SELECT host, count(*) AS n FROM events GROUP BY host ORDER BY host",
                 "--format", "json"]) == 0
    assert [r["host"] for r in json.loads(capsys.readouterr().out)] == ["v4-w-0", "v4-w-\\xff"]


async def test_the_app_offers_the_odd_host(tmp_path):
    from tputui.app import PickerScreen, TputuiApp
    from tputui.data.logdir import open_logdir

    app = TputuiApp(open_logdir(odd_logdir(tmp_path)), tool="overview_page")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert getattr(app.screen, "error", None) is None
        await pilot.press("h")
        assert isinstance(app.screen, PickerScreen)
        assert [c[0] for c in app.screen.choices] == ["", "v4-w-0", "v4-w-\\xff"]  # "": all hosts

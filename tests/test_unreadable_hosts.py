"""Honest exit codes: a run with no readable host is exit 2 with one line; `--list` marks
unreadable hosts (with the reason) and exits 2 only when no host anywhere is readable."""
from __future__ import annotations

import json

import pytest
from conftest import PROFILES

from tputui.cli import main
from tputui.data.logdir import LogdirError, open_logdir
from tputui.data.run_data import RunData
from tputui.tools import TOOLS, tools_with_data

GOOD = next((PROFILES / "jax_mlp").rglob("*.xplane.pb"))


def damaged(kind: str) -> bytes:
    data = GOOD.read_bytes()
    return {"empty": b"", "truncated": data[: len(data) // 3], "garbage": b"\xff" * 64,
            "zeros": b"\0" * 4096}[kind]


def make_run(root, name, hosts: dict[str, bytes]):
    run = root / "plugins" / "profile" / name
    run.mkdir(parents=True)
    for host, data in hosts.items():
        (run / f"{host}.xplane.pb").write_bytes(data)
    return run


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", ["empty", "truncated", "garbage", "zeros"])
def test_list_of_only_unreadable_hosts_exits_2(capsys, tmp_path, kind):
    make_run(tmp_path, "r", {"h": damaged(kind)})
    code, out, err = run_cli(capsys, "export", str(tmp_path), "--list")
    assert code == 2
    assert err.splitlines() == [f"tputui: error: no readable host profile under {tmp_path} "
                                "(1 unreadable or unsupported: see the listing)"]
    doc = json.loads(out)
    assert doc["readable_hosts"] == 0
    (run,) = doc["runs"]
    assert "tools" not in run  # no tool is listed for a file nobody can read
    assert list(run["unreadable"]) == ["h"] and run["unreadable"]["h"].startswith(str(tmp_path))


def test_list_marks_the_bad_host_and_keeps_the_good_ones(capsys, tmp_path):
    make_run(tmp_path, "2026_01_01_00_00_00", {"bad": damaged("truncated"), "vm": GOOD.read_bytes()})
    make_run(tmp_path, "2026_01_02_00_00_00", {"h": b""})
    code, out, err = run_cli(capsys, "export", str(tmp_path), "--list")
    assert code == 0
    assert err == "tputui: note: 2 host file(s) unreadable or unsupported (see the listing)\n"
    doc = json.loads(out)
    assert doc["readable_hosts"] == 1
    empty, mixed = doc["runs"]
    assert "tools" not in empty and empty["unreadable"]["h"].endswith("empty file (0 bytes; the capture wrote nothing)")
    assert mixed["hosts"] == ["bad", "vm"] and list(mixed["unreadable"]) == ["bad"]
    assert "length runs past the end" in mixed["unreadable"]["bad"]
    # The same tools as the good host alone has.
    alone = RunData(open_logdir(str(GOOD)).runs[0])
    assert mixed["tools"] == tools_with_data(alone)


def test_zero_byte_profile_is_not_an_all_zero_overview(capsys, tmp_path):
    """It gave device type "CPU", all zeros and exit 0."""
    run = make_run(tmp_path, "r", {"h": b""})
    code, out, err = run_cli(capsys, "export", str(tmp_path), "--tool", "overview_page")
    assert (code, out) == (2, "")
    assert err == f"tputui: error: {run / 'h.xplane.pb'}: empty file (0 bytes; the capture wrote nothing)\n"


def test_require_hosts_after_a_check_names_the_reason(tmp_path):
    make_run(tmp_path, "r", {"a": b"", "b": damaged("garbage")})
    rd = RunData(open_logdir(str(tmp_path)).runs[0])
    assert sorted(rd.check_hosts()) == ["a", "b"]
    assert rd.hosts == []
    with pytest.raises(LogdirError) as e:
        rd.require_hosts()
    assert str(e.value).startswith("run r has no readable host: ") and str(e.value).endswith("(and 1 more unreadable)")


def test_a_tool_is_not_available_on_a_host_that_fails_to_decode(tmp_path):
    """A file whose top level is intact but whose planes are damaged fails only when decoded:
    the tool is not listed (it was listed on any exception before) and the host is recorded."""
    event = b"\x00\x00"  # field number 0: invalid, but only a full decode looks this deep
    line = b"\x22" + bytes([len(event)]) + event
    plane = b"\x12\x03bad" + b"\x1a" + bytes([len(line)]) + line
    make_run(tmp_path, "r", {"h": GOOD.read_bytes() + b"\x0a" + bytes([len(plane)]) + plane})
    rd = RunData(open_logdir(str(tmp_path)).runs[0])
    assert rd.check_hosts() == {}
    hlo = next(t for t in TOOLS if t.name == "hlo_stats")
    assert hlo.available(rd) is False
    assert list(rd.unreadable) == ["h"] and "truncated or corrupt XSpace" in rd.unreadable["h"]
    assert [t.name for t in TOOLS if t.available(rd)] == []  # nothing left to read


def test_list_output_keeps_its_shape_for_good_logdirs(capsys):
    code, out, err = run_cli(capsys, "export", str(PROFILES / "jax_two_runs"), "--list")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["readable_hosts"] == 2 and all("unreadable" not in r for r in doc["runs"])


def test_unreadable_copy_is_left_untouched(capsys, tmp_path):
    run = make_run(tmp_path, "r", {"h": damaged("truncated")})
    before = (run / "h.xplane.pb").read_bytes()
    run_cli(capsys, "export", str(tmp_path), "--list")
    assert (run / "h.xplane.pb").read_bytes() == before
    assert sorted(p.name for p in run.iterdir()) == ["h.xplane.pb"]


def test_an_all_hosts_export_leaves_the_unreadable_host_out_and_says_so(capsys, tmp_path):
    run = make_run(tmp_path, "r", {"bad": damaged("truncated"), "vm": GOOD.read_bytes()})
    code, out, err = run_cli(capsys, "export", str(tmp_path), "--tool", "overview_page")
    assert code == 0
    assert json.loads(out)["hosts"] == ["vm"]
    (line,) = err.splitlines()
    assert line.startswith(f"tputui: note: 1 unreadable host file(s) left out: {run / 'bad.xplane.pb'}: "
                           "truncated or corrupt XSpace")
    # The same figures as the good host alone.
    code, alone, _ = run_cli(capsys, "export", str(GOOD), "--tool", "overview_page")
    strip = lambda doc: {k: v for k, v in json.loads(doc).items() if k != "run"}
    assert strip(out) == strip(alone)


def test_a_run_of_only_unreadable_hosts_is_one_line_for_every_tool(capsys, tmp_path):
    make_run(tmp_path, "r", {"a": b"", "b": damaged("zeros")})
    for tool in [t.name for t in TOOLS]:
        code, out, err = run_cli(capsys, "export", str(tmp_path), "--tool", tool)
        assert (code, out) == (2, ""), tool
        assert err.startswith("tputui: error: run r has no readable host: ") and err.count("\n") == 1, (tool, err)


def test_a_host_that_fails_to_decode_does_not_hide_the_others_data(tmp_path):
    tpu = next((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb")).read_bytes()
    event = b"\x00\x00"
    line = b"\x22" + bytes([len(event)]) + event
    plane = b"\x12\x03bad" + b"\x1a" + bytes([len(line)]) + line
    make_run(tmp_path, "r", {"a_bad": tpu + b"\x0a" + bytes([len(plane)]) + plane, "tpu": tpu})
    rd = RunData(open_logdir(str(tmp_path)).runs[0])
    hlo = next(t for t in TOOLS if t.name == "hlo_stats")
    assert hlo.available(rd) is True  # a_bad (first) failed to decode, then tpu was asked
    assert list(rd.unreadable) == ["a_bad"] and rd.hosts == ["tpu"]

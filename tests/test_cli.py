"""The command line: export and --list, and every bad input -> one line, exit code 2."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest
from conftest import FIXTURES, PROFILES, ROOT

from tputui.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, pattern):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tputui: error: ")
    assert pattern in lines[0], lines[0]
    assert "Traceback" not in err


def test_list_shows_runs_hosts_and_tools(capsys):
    code, out, _ = run_cli(capsys, "export", str(PROFILES / "jax_two_runs"), "--list")
    assert code == 0
    doc = json.loads(out)
    assert [r["run"] for r in doc["runs"]] == ["2026_11_22_12_58_50", "2026_11_22_12_58_45"]
    assert all(r["hosts"] == ["vm"] and "summary" in r["tools"] for r in doc["runs"])


def test_summary_export_json_and_csv(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "export", str(PROFILES / "tpu_v6e_inference"), "--tool", "summary")
    assert code == 0
    doc = json.loads(out)
    assert doc["device_type"] == "TPU v6 Lite" and doc["device_count"] == 4
    planes = {p["name"]: p["events"] for p in doc["hosts"][0]["planes"]}
    assert planes["/device:TPU:0"] == 2317 and planes["/host:CPU"] == 19270
    target = tmp_path / "lines.csv"
    code, _, _ = run_cli(capsys, "export", str(PROFILES / "tpu_v6e_inference"), "--tool", "summary",
                         "--format", "csv", "-o", str(target))
    assert code == 0
    rows = target.read_text().splitlines()
    assert rows[0] == "host,plane_name,line,name,events,first_ps,last_end_ps"
    assert len(rows) == 1 + 4 * 5 + 122


def test_missing_path(capsys, tmp_path):
    code, _, err = run_cli(capsys, "export", str(tmp_path / "nope"), "--list")
    assert_one_line_error(code, err, "no such file or directory")


def test_empty_logdir(capsys, tmp_path):
    code, _, err = run_cli(capsys, "export", str(tmp_path), "--tool", "summary")
    assert_one_line_error(code, err, "no profiles under")
    assert "expected plugins/profile/<run>/<host>.xplane.pb" in err


@pytest.mark.parametrize("damage", ["truncate", "garbage", "json"])
def test_corrupt_or_foreign_file(capsys, tmp_path, damage):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    data = next((PROFILES / "jax_mlp").rglob("*.xplane.pb")).read_bytes()
    bad = {"truncate": data[: len(data) // 2], "garbage": bytes(range(256)) * 40,
           "json": b'{"traceEvents": [1, 2, 3]}'}[damage]
    target = run / "vm.xplane.pb"
    target.write_bytes(bad)
    code, _, err = run_cli(capsys, "export", str(tmp_path), "--tool", "summary")
    assert_one_line_error(code, err, str(target))
    assert target.read_bytes() == bad  # nothing the user owns is modified


def test_unreadable_file(tmp_path):
    """A profile the user may not read. Root reads anything, so as root the CLI runs without
    the capabilities that bypass file permissions (setpriv), i.e. as an ordinary user would."""
    drop: list[str] = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        caps = "-dac_override,-dac_read_search"
        drop = ["setpriv", "--bounding-set", caps, "--inh-caps", caps, "--"]
    shutil.copytree(PROFILES / "jax_mlp", tmp_path / "p")
    target = next((tmp_path / "p").rglob("*.xplane.pb"))
    target.chmod(0)
    try:
        proc = subprocess.run([*drop, sys.executable, "-m", "tputui.cli", "export", str(tmp_path / "p"),
                               "--tool", "summary", "--no-cache"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
    finally:
        target.chmod(0o644)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"tputui: error: {target}: permission denied"


def test_unknown_tool_run_host(capsys):
    p = str(PROFILES / "jax_mlp")
    assert_one_line_error(*run_cli(capsys, "export", p, "--tool", "nope")[::2], "unknown tool 'nope'")
    assert_one_line_error(*run_cli(capsys, "export", p, "--tool", "summary", "--run", "x")[::2], "no run 'x'")
    assert_one_line_error(*run_cli(capsys, "export", p, "--tool", "summary", "--host", "x")[::2], "no host 'x'")


def test_real_process_exit_code_and_no_traceback(tmp_path):
    """The installed entry point, as a user runs it."""
    (tmp_path / "plugins" / "profile" / "r").mkdir(parents=True)
    (tmp_path / "plugins" / "profile" / "r" / "h.xplane.pb").write_bytes(b"\xff" * 100)
    proc = subprocess.run([sys.executable, "-m", "tputui.cli", "export", str(tmp_path), "--tool", "summary"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "truncated or corrupt" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_app_rejects_bad_logdir_before_the_screen(capsys, tmp_path):
    code, _, err = run_cli(capsys, str(tmp_path / "missing"))
    assert_one_line_error(code, err, "no such file or directory")
    code, _, err = run_cli(capsys, str(PROFILES / "jax_mlp"), "--tool", "nope")
    assert_one_line_error(code, err, "unknown tool")


def test_output_into_a_missing_folder_is_one_line_and_leaves_nothing(capsys, tmp_path):
    target = tmp_path / "missing" / "out.json"
    code, _, err = run_cli(capsys, "export", str(PROFILES / "jax_mlp"), "--tool", "summary", "-o", str(target))
    assert_one_line_error(code, err, f"cannot write {target}: no such file or directory")
    assert ".part" not in err and not (tmp_path / "missing").exists()


def test_failed_write_leaves_no_partial_file(capsys, tmp_path):
    target = tmp_path / "hlo.csv"
    code, _, err = run_cli(capsys, "export", str(PROFILES / "tpu_v6e_inference"), "--tool", "hlo_stats",
                           "--format", "csv", "--table", "nope", "-o", str(target))
    assert_one_line_error(code, err, "no table 'nope'")
    assert list(tmp_path.iterdir()) == []


def test_options_a_tool_does_not_take_are_refused(capsys):
    p = str(PROFILES / "jax_mlp")
    code, _, err = run_cli(capsys, "export", p, "--tool", "summary", "--option", "bogus=1")
    assert_one_line_error(code, err, "summary takes no option 'bogus'")
    code, _, err = run_cli(capsys, "export", p, "--tool", "trace_viewer", "--module", "x")
    assert_one_line_error(code, err, "trace_viewer takes no option 'module' (its options: args)")
    with pytest.raises(SystemExit) as exc:  # argparse: usage + one error line, exit 2
        main(["export", p, "--tool", "megascale_stats", "--dcn-gbps", "-3"])
    assert exc.value.code == 2 and "must be more than 0" in capsys.readouterr().err


def test_csv_of_nested_values_is_json_in_the_cell(capsys):
    import csv
    import io

    code, out, err = run_cli(capsys, "export", str(PROFILES / "tpu_v6e_inference"), "--tool", "memory_viewer",
                             "--list-modules", "--format", "csv")
    assert code == 0, err
    doc = json.loads(run_cli(capsys, "export", str(PROFILES / "tpu_v6e_inference"), "--tool", "memory_viewer",
                             "--list-modules")[1])
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(doc["modules"])
    assert [json.loads(r["memory_spaces"]) for r in rows] == [m["memory_spaces"] for m in doc["modules"]]


def test_empty_main_table_says_which_tables_have_rows(capsys):
    code, out, err = run_cli(capsys, "export", str(PROFILES / "jax_mlp"), "--tool", "overview_page", "--format", "csv")
    assert code == 0 and out.count("\n") == 1  # the header only
    assert err.startswith("tputui: note: table 'top_device_ops' has no rows") and "steps (" in err
    code, out, err = run_cli(capsys, "export", str(PROFILES / "jax_mlp"), "--tool", "overview_page", "--format", "csv",
                             "--table", "steps")
    assert code == 0 and err == "" and out.count("\n") > 1


def test_demo_with_a_logdir_and_a_mistyped_subcommand(capsys):
    code, _, err = run_cli(capsys, str(PROFILES / "jax_mlp"), "--demo")
    assert_one_line_error(code, err, "give a LOGDIR or --demo, not both")
    code, _, err = run_cli(capsys, "exprot")
    assert_one_line_error(code, err, "no such file or directory: exprot (subcommands: export, capture, monitor, sql, diff)")


def test_export_help_names_every_tool(capsys):
    from tputui.tools import tool_names

    with pytest.raises(SystemExit) as exc:
        main(["export", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert all(name in out for name in tool_names()) and "examples:" in out
    for flag in ("--run RUN", "--host HOST", "--no-cache"):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(flag))
        assert len(line.split()) > 2, line  # every option says what it does


def test_app_help_names_the_subcommands_and_shows_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    for sub in ("export", "capture", "monitor"):
        assert any(ln.split()[:1] == [sub] and len(ln.split()) > 2 for ln in out.splitlines()), sub
    assert "tputui --demo" in out and "examples:" in out


def test_output_to_a_special_file_writes_through_it(capsys, tmp_path):
    """`-o /dev/null` or a FIFO: written in place, never replaced by a regular file."""
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    code, _, err = run_cli(capsys, "export", str(PROFILES / "jax_mlp"), "--tool", "summary", "-o", str(fifo))
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got[0])["hosts"][0]["host"] == "vm"


def test_export_flags_come_from_the_registry(capsys):
    """Every keyword option of every tool's analysis is an export flag naming its tools, and a
    flag reaches the analysis (memory_profile's --max-snapshots thins the timeline)."""
    from tputui.tools import TOOLS

    with pytest.raises(SystemExit):
        main(["export", "--help"])
    out = capsys.readouterr().out
    for t in TOOLS:
        for name in t.option_names():
            flag = "--" + name.replace("_", "-")
            help_text = out.split("\n  " + flag, 1)[1].split("\n  --", 1)[0]  # its line(s) under options
            assert t.name in help_text, (flag, help_text)
    p = str(PROFILES / "tf_keras")
    code, text, _ = run_cli(capsys, "export", p, "--tool", "memory_profile", "--max-snapshots", "50")
    assert code == 0
    doc = json.loads(text)
    timelines = [a["timeline"] for a in doc["allocators"].values()]
    assert timelines and all(len(tl) <= 50 for tl in timelines) and max(len(tl) for tl in timelines) > 10


def test_demo_offers_a_cpu_and_a_tpu_profile_each_under_1_mb():
    from tputui.data.logdir import open_logdir
    from tputui.data.run_data import RunData
    from tputui.demo import demo_logdir
    from tputui.export import run_tool

    runs = open_logdir(demo_logdir()).runs
    assert len(runs) == 2 and all(h.size < 1 << 20 for r in runs for h in r.hosts)
    kinds = {r.name: run_tool(RunData(r), "summary", None).device_type for r in runs}
    assert any("TPU" in (k or "") for k in kinds.values()), kinds


def test_declared_tool_options_equal_the_analysis_signatures():
    """The registry declares each tool's options so `tputui export` need not import every tool
    to build its flags; a tool whose analysis takes a new option must declare it in tputui/tools.py."""
    from tputui.tools import TOOLS

    for t in TOOLS:
        assert t.options() == t.signature_options(), (t.name, "update declared_options in tputui/tools.py")


def test_export_imports_only_the_tool_it_runs(tmp_path):
    """A whole `tputui export` process loads the one tool's analysis, not the registry's others."""
    probe = ("import sys; sys.argv = ['tputui', 'export', sys.argv[1], '--tool', 'summary'];\n"
             "from tputui.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             "print('\\nLOADED', sorted(m for m in sys.modules if m.startswith('tputui.analysis.')), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", probe, str(PROFILES / "tf_keras")], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    loaded = out.stderr.rsplit("LOADED", 1)[1]
    assert "tputui.analysis.summary" in loaded
    for other in ("tputui.analysis.graph_viewer", "tputui.analysis.memory_viewer", "tputui.analysis.perf_counters"):
        assert other not in loaded, other


def test_memory_profile_export_loads_neither_the_map_nor_the_guide(tmp_path):
    """The memory profile reads only allocator events: finding the TPU runtime log's folder
    (every export does) must not load the performance guide and the host map with it, nor the
    signal handling asyncio. (A giant host's pieces bring op_stats: memory_profile imports it.)"""
    probe = ("import sys; from tputui.cli import main\n"
             "code = main(['export', sys.argv[1], '--tool', 'memory_profile', '-o', sys.argv[2]])\n"
             "print('\\nLOADED', sorted(m for m in sys.modules if m.startswith('tputui.analysis.') or m == 'asyncio'),"
             " file=sys.stderr)\n"
             "sys.exit(code)")
    out = subprocess.run([sys.executable, "-c", probe, str(PROFILES / "tpu_v6e_inference"), str(tmp_path / "o.json")],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    loaded = out.stderr.rsplit("LOADED", 1)[1]
    assert "tputui.analysis.memory_profile" in loaded and "tputui.analysis.tpu_log_files" in loaded
    for other in ("tputui.analysis.tpu_runtime_log", "tputui.analysis.perf_guide", "tputui.analysis.host_map",
                  "'asyncio'"):  # asyncio: only the app's signal handler needs it
        assert other not in loaded, other
    assert json.loads((tmp_path / "o.json").read_text())["allocators"]


def test_export_starts_map_workers_before_loading_the_analysis(tmp_path):
    """On a multi-host run the map's worker processes start before this process imports numpy,
    Polars or the analysis: they get ready while it loads (analysis/map_pool.py)."""
    probe = ("import sys\nfrom tputui.analysis import map_pool\nreal = map_pool.start\n"
             "def spy(n):\n    print('LOADED', n, sorted(m for m in ('numpy', 'polars', 'tputui.analysis.op_stats')"
             " if m in sys.modules), file=sys.stderr)\n    real(n)\n"
             "map_pool.start = spy\nfrom tputui.cli import main\n"
             "sys.exit(main(['export', sys.argv[1], '--tool', 'overview_page', '--jobs', '2', '-o', sys.argv[2]]))")
    out = subprocess.run([sys.executable, "-c", probe, str(FIXTURES / "pod" / "pod_v4_32"), str(tmp_path / "o.json")],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "LOADED 1 []" in out.stderr
    assert json.loads((tmp_path / "o.json").read_text())


def test_registry_marks_the_tools_that_reduce_over_op_stats():
    """Tool.op_stats (export starts the map's workers for these) names exactly the tools whose
    analysis reads the per-host op stats (host_map); the data checks (has_data) read them in
    every tool and do not count."""
    import importlib
    import inspect

    from tputui.tools import TOOLS

    for t in TOOLS:
        module = importlib.import_module(t.analysis.split(":")[0])
        source = inspect.getsource(module)
        if hasattr(module, "has_data"):
            source = source.replace(inspect.getsource(module.has_data), "")
        assert t.op_stats == ("host_map." in source), (t.name, "set op_stats in tputui/tools.py")


def test_export_ends_without_teardown_after_what_an_exit_must_do(tmp_path):
    """`tputui export` skips the interpreter's teardown (freeing every array at exit), not what a
    normal exit does first: the cache's writer threads finish their entries, atexit handlers run,
    the output is complete and the exit code kept."""
    probe = ("import atexit, json, os, sys\nmarks = sys.argv[3]\n"
             "class Freed:  # freed when the teardown clears the modules\n"
             "    def __init__(self, opener, path, flags):\n        self.opener, self.path, self.flags = opener, path, flags\n"
             "    def __del__(self):\n        self.opener(self.path, self.flags)\n"
             "json.kept = Freed(os.open, marks + '/freed', os.O_CREAT | os.O_WRONLY)\n"
             "atexit.register(lambda: open(marks + '/atexit', 'w').close())\n"
             "sys.argv = ['tputui', 'export', sys.argv[1], '--tool', 'overview_page', '-o', sys.argv[2]]\n"
             "from tputui.cli import entry\nsys.exit(entry())")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    tpu = PROFILES / "tpu_v6e_inference"
    out = subprocess.run([sys.executable, "-c", probe, str(tpu), str(tmp_path / "o.json"), str(tmp_path)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "o.json").read_text())
    assert (tmp_path / "atexit").exists() and not (tmp_path / "freed").exists()
    from tputui.data.cache import has_entry
    from tputui.data.logdir import open_logdir

    os.environ["XDG_CACHE_HOME"], old = str(tmp_path / "cache"), os.environ.get("XDG_CACHE_HOME")
    try:
        assert has_entry(open_logdir(str(tpu)).runs[0].hosts[0])  # the frame's entry, written by a thread
    finally:
        if old is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = old
    bad = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "absent"), str(tmp_path / "p.json"), str(tmp_path)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert bad.returncode == 2 and "no such file" in bad.stderr


@pytest.mark.parametrize("tool,fmt", [("kernel_stats", "json"), ("kernel_stats", "csv"), ("perf_counters", "json"),
                                      ("megascale_stats", "json"), ("megascale_stats", "csv")])
def test_no_data_of_this_kind_is_exit_0_with_one_note_for_every_tool(capsys, tool, fmt):
    """A CPU profile has no GPU kernels, counters or DCN collectives: every tool answers the same
    way, exit 0 and one note line on stderr (kernel_stats was exit 2 where megascale was 0)."""
    code, out, err = run_cli(capsys, "export", str(PROFILES / "tf_loop"), "--tool", tool, "--format", fmt,
                             "--no-cache")
    assert code == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tputui: note: "), err
    if tool == "megascale_stats":  # XProf's empty result on stdout, as before
        assert out and "MegaScale" in lines[0]
    else:
        assert out == "" and lines[0].startswith("tputui: note: no data: ")


def test_bad_input_to_a_tool_stays_exit_2(capsys):
    p = str(PROFILES / "jax_mlp")
    assert_one_line_error(*run_cli(capsys, "export", p, "--tool", "graph_viewer", "--option", "depth=x",
                                   "--no-cache")[::2], "--depth must be a whole number")
    assert_one_line_error(*run_cli(capsys, "export", p, "--tool", "memory_viewer", "--option", "module=jit_nope",
                                   "--no-cache")[::2], "not found")

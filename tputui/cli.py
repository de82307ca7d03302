"""Command line: the app, headless export, capture and monitor.

  tputui [LOGDIR] [--run R] [--host H] [--tool T] [--no-cache]
  tputui --demo
  tputui export LOGDIR --tool T [--run R] [--host H] [--format json|csv|text|dot] [-o FILE]
  tputui export LOGDIR --list
  tputui capture ADDRESS LOGDIR ...      tputui monitor ADDRESS ...
  tputui sql LOGDIR QUERY ...            tputui diff A B ...

Every error the user can cause ends in one line on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports the data layer only once it knows what to run (start-up time)
    from tputui.data.run_data import RunData
    from tputui.data.runs import Run
    from tputui.export import OutputCache

EXIT_USAGE = 2
SUBCOMMANDS = ("export", "capture", "monitor", "sql", "diff")


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    from tputui.signals import say

    say(f"tputui: error: {message}")  # dropped, not a traceback, when the terminal is gone (SIGHUP)
    return code


def app_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tputui", description="Terminal UI for XProf / TensorBoard profiles.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="subcommands (tputui SUBCOMMAND --help):\n"
               "  export   write a tool's result as JSON or CSV, no screen\n"
               "  capture  grab a profile from a running profiler server into a logdir\n"
               "  monitor  live TPU figures: libtpu runtime metrics per chip, step time per worker\n"
               "  sql      answer a SQL query over a profile's events, ops and steps\n"
               "  diff     compare two runs: step time, KPIs, op deltas (a CI gate)\n\n"
               "examples:\n"
               "  tputui ./logs                          the newest run; t tool, r run, h host, ? help\n"
               "  tputui ./logs --tool trace_viewer      open a tool directly\n"
               "  tputui gs://bucket/logs --run RUN      a run in Cloud Storage\n"
               "  tputui --demo                          a bundled profile to try the keys on")
    p.add_argument("logdir", nargs="?", help="logdir, plugins/profile folder, run folder, .xplane.pb file or gs:// URL")
    p.add_argument("--run", help="run to open (default: newest)")
    p.add_argument("--host", help="host to open (default: all hosts / the first)")
    p.add_argument("--tool", help="tool to open directly (e.g. overview_page, trace_viewer)")
    p.add_argument("--demo", action="store_true",
                   help="open the bundled demo profiles (a JAX CPU run; r switches to a TPU v6e run)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the decode cache")
    p.add_argument("--tpu-logs", metavar="DIR", help=TPU_LOGS_HELP)
    _add_scale_arguments(p)
    _add_timeout(p)
    p.add_argument("--watch", type=_positive, metavar="SECONDS",
                   help="rescan the logdir every SECONDS for runs captured meanwhile (R / F5 rescans once)")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    return p


def _add_scale_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=_positive_int, metavar="N",
                   help="worker processes for the per-host analysis of multi-host runs (default: one per core)")
    p.add_argument("--dask", metavar="ADDRESS", default=os.environ.get("TPUTUI_DASK"),
                   help="run the per-host analysis on this Dask scheduler, e.g. tcp://10.0.0.5:8786 "
                        "(default: $TPUTUI_DASK; needs pip install 'tputui[dask]')")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def export_parser() -> argparse.ArgumentParser:
    from tputui.tools import tool_names

    p = argparse.ArgumentParser(
        prog="tputui export", description="Write a tool's result as JSON or CSV (no screen; for scripts and CI).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="tools: " + ", ".join(tool_names()) + "\n\nexamples:\n"
               "  tputui export ./logs --list\n"
               "  tputui export ./logs --tool overview_page > overview.json\n"
               "  tputui export ./logs --tool hlo_stats --format csv -o hlo_stats.csv\n"
               "  tputui export ./logs --tool trace_viewer --run 2026_01_01_00_00_00 --host worker0")
    p.add_argument("logdir", help="logdir, plugins/profile folder, run folder, .xplane.pb file or gs:// URL")
    p.add_argument("--tool", help="tool id (see the list below; --list shows which have data)")
    p.add_argument("--list", action="store_true", help="list runs, hosts and tools with data (JSON)")
    p.add_argument("--run", help="run to export (default: newest)")
    p.add_argument("--host", help="host to export (default: all hosts, or the first where a tool takes one)")
    p.add_argument("--format", default="json", choices=("json", "csv", "text", "dot"),
                   help="json (default: the whole result), csv (one table); graph_viewer also text (HLO) and dot")
    p.add_argument("--table", help="CSV: which table (default: the tool's main table)")
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the decode cache")
    _add_scale_arguments(p)
    _add_timeout(p)
    # Tool options, from the registry: every keyword option a tool's analysis takes.
    for name, (tools, default) in tool_options().items():
        what = f"{', '.join(tools)}: {OPTION_HELP.get(name, name.replace('_', ' '))}"
        flag = "--" + name.replace("_", "-")
        if isinstance(default, bool):
            p.add_argument(flag, action="store_true", default=None, help=what)
        else:
            p.add_argument(flag, type=OPTION_TYPES.get(name, str), help=what)
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="other tool options")
    return p


TPU_LOGS_HELP = ("the TPU runtime log's folder (tpu_driver.INFO): init time, premapped buffer size and its "
                 "allocation failures in the overview and Advice (default: /tmp/tpu_logs when it exists)")
# Words and checks for the tools' options (which options exist comes from the registry).
OPTION_HELP = {"tpu_logs": TPU_LOGS_HELP,
               "module": "HLO module name or program id", "memory_space": "memory space (0 = HBM, or a name)",
               "list_modules": "list the HLO modules", "dcn_gbps": "DCN bandwidth per host, Gbps",
               "max_snapshots": "snapshots on the memory timeline", "args": "every event's args in the JSON",
               "node": "the instruction whose neighbourhood to draw",
               "device": "the TPU of the host, /device:TPU:N or N (default /device:TPU:0, as XProf)",
               "depth": "how many edges around --node (default 3)"}


def tool_options() -> dict[str, tuple[list[str], object]]:
    """option -> (the tools taking it, its default), in registry order."""
    from tputui.tools import TOOLS

    out: dict[str, tuple[list[str], object]] = {}
    for t in TOOLS:
        for name, default in t.options().items():
            out.setdefault(name, ([], default))[0].append(t.name)
    return out


def _add_timeout(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="gs://: give up listing the logdir after this long (default 30; 0 waits forever)")


class _Status:
    """Progress while opening a gs:// logdir: one line on a terminal's stderr, rewritten in place
    and wiped before anything else is printed (nothing when stderr is a file or pipe)."""

    def __init__(self, label: str) -> None:
        self.label, self.on = label, sys.stderr.isatty()
        self.shown = False

    def __call__(self, msg: str) -> None:
        if self.on:
            import shutil

            width = shutil.get_terminal_size().columns - 1  # one line: \r can only rewrite that
            print(f"\r\033[K{f'tputui: {self.label}: {msg}'[:width]}", end="", file=sys.stderr, flush=True)
            self.shown = True

    def clear(self) -> None:
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def _open_logdir(path: str, timeout: float):
    from tputui.data.waiting import open_logdir_waiting

    status = _Status(f"listing {path}")
    try:
        return open_logdir_waiting(path, timeout, status)
    finally:
        status.clear()


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


OPTION_TYPES = {"dcn_gbps": _positive}


def _tool_options(a: argparse.Namespace) -> dict:
    from tputui.errors import UserError

    opts = {key: getattr(a, key) for key in tool_options() if getattr(a, key, None) is not None}
    for kv in a.option:
        key, sep, value = kv.partition("=")
        if not sep:
            raise UserError(f"--option expects KEY=VALUE, got {kv!r}")
        opts[key.replace("-", "_")] = value
    tpu_logs = tpu_logs_dir(opts.get("tpu_logs"))
    if tpu_logs and a.tool in tool_options()["tpu_logs"][0]:
        opts["tpu_logs"] = tpu_logs
    return opts


def tpu_logs_dir(given: str | None) -> str | None:
    """The TPU runtime log folder to read: the one given (which must hold a log: else one line and
    exit 2), or libtpu's default folder when it exists on this machine."""
    from tputui.analysis.tpu_log_files import DEFAULT_DIR, require_log

    if given:
        require_log(given)
        return given
    return DEFAULT_DIR if os.path.isdir(DEFAULT_DIR) else None


def run_export(argv: list[str]) -> int:
    import json

    a = export_parser().parse_args(argv)
    logdir = _open_logdir(a.logdir, a.timeout)
    if a.tool and not a.list and not a.host and _is_op_stats_tool(a.tool):
        # First, before the analysis modules load: the map's workers import them meanwhile.
        _start_map_workers(logdir.run(a.run), a.jobs, a.dask, not a.no_cache)

    from tputui.analysis.result import NoDataError
    from tputui.data.run_data import RunData
    from tputui.export import OutputCache, listing, run_tool, write_result

    if a.list:
        found = listing(logdir, use_cache=not a.no_cache)
        _emit(json.dumps(found, indent=1) + "\n", a.output)
        bad = sum(len(r.get("unreadable", ())) for r in found["runs"])
        if not found["readable_hosts"]:  # the listing still says which file failed and why
            return _fail(f"no readable host profile under {a.logdir} ({bad} unreadable or unsupported: "
                         "see the listing)")
        if bad:
            print(f"tputui: note: {bad} host file(s) unreadable or unsupported (see the listing)", file=sys.stderr)
        return 0
    if not a.tool:
        return _fail("export needs --tool TOOL (or --list)")
    run = RunData(logdir.run(a.run), use_cache=not a.no_cache, jobs=a.jobs, dask=a.dask)
    options = _tool_options(a)
    cache = None if a.no_cache else OutputCache(run, a.tool, a.host, options, a.format, a.table,
                                                extra=_input_stamps(options))
    notes = cache.notes() if cache else None
    if cache is not None and notes is not None:  # the same export of the same files: its output again, no analysis
        _replay_decode_notes(run, a.host)
        return _write_output(a.output, cache.replay) or _print_notes(notes)
    _prefetch(run, a.tool, a.host)
    try:
        result = run_tool(run, a.tool, a.host, **options)  # checks the host, names the hosts
    except NoDataError as e:  # no data of this kind is an answer, not a failure: every tool says it so
        return _no_data(str(e), cache)
    written: dict | None = None

    def write(out) -> None:
        nonlocal written
        written = write_result(result, a.format, cache.tee(out) if cache else out, a.table)

    try:
        failed = _write_output(a.output, write)
    except BaseException:
        if cache:
            cache.abandon()
        raise
    if failed:
        if cache:
            cache.abandon()
        return failed
    notes = []
    no_data = getattr(result, "no_data_note", None)  # an empty result, written as XProf writes it
    if no_data:
        notes.append(f"tputui: note: {no_data}")
    elif written is not None and not a.table:
        notes += _empty_table_notes(written)
    if run.unreadable:  # left out of an all-hosts result: say so, with the first reason
        first = next(iter(run.unreadable.values()))
        notes.append(f"tputui: note: {len(run.unreadable)} unreadable host file(s) left out: {first}")
    if cache:
        cache.commit(notes)
    _replay_decode_notes(run, a.host)  # cached op stats or trace index stood in for a decode
    return _print_notes(notes)


def _no_data(reason: str, cache: OutputCache | None) -> int:
    """The profile has no data for the tool: one note on stderr, nothing on stdout, exit 0 (the
    same for every tool; bad input is exit 2)."""
    if cache:
        cache.abandon()
    print(f"tputui: note: no data: {reason}", file=sys.stderr)
    return 0


def _replay_decode_notes(run: RunData, host: str | None) -> None:
    """The warnings decoding the export's host files gave (a damaged riegeli region), said again
    when cached results stood in for the decode (a line said already is not repeated)."""
    if not run.use_cache:
        return
    from tputui.data import decode_notes

    for hf in run.run.hosts:
        if host is None or hf.host == host:
            decode_notes.replay(hf)


def _input_stamps(options: dict) -> list:
    """Files outside the run that the export reads (the TPU runtime log): part of its cache key."""
    if not options.get("tpu_logs"):
        return []
    from tputui.analysis.tpu_log_files import stamp

    return [stamp(options["tpu_logs"])]


def _is_op_stats_tool(tool: str) -> bool:
    from tputui.tools import get_tool

    try:
        return get_tool(tool).op_stats
    except KeyError:
        return False  # run_tool says so


def _prefetch(run: RunData, tool: str, host: str | None) -> None:
    """A one-host run whose tool reads the whole frame and whose frame is not cached yet: decode
    it in the background while the tool's modules import (~0.2 s overlapped). (A multi-host
    run's map workers were started before: _start_map_workers.)"""
    from tputui.data.cache import has_entry
    from tputui.data.storage import is_remote
    from tputui.tools import get_tool

    try:
        t = get_tool(tool)
    except KeyError:
        return  # run_tool says so
    if not t.whole_frame or len(run.run.hosts) != 1 or host not in (None, run.run.hosts[0].host):
        return
    hf = run.run.hosts[0]
    from tputui.analysis.host_pieces import read_in_pieces

    if read_in_pieces(hf):  # a giant host is read in pieces: its whole frame would not fit in memory
        return
    if not is_remote(hf.path) and not (run.use_cache and has_entry(hf)):
        run.prefetch(hf.host)


def _start_map_workers(run: Run, jobs: int | None, dask: str | None, use_cache: bool) -> None:
    """On a multi-host run with hosts whose op stats are not cached, start the map's worker
    processes now (analysis/map_pool.py; ~0.3 s each to start and import the map): they get
    ready while this process loads the rest."""
    if len(run.hosts) < 2 or dask:
        return
    from tputui.analysis import map_pool

    lanes = map_pool.lanes(map_pool.uncached(run.hosts) if use_cache else run.hosts, jobs)
    if lanes > 1:
        map_pool.start(lanes - 1)


def _write_output(output: str | None, write) -> int:
    """Run write(stream) on the output (stdout, a special file written in place, or a file
    replaced atomically); 0, or the exit code after a one-line error."""
    if output and _is_special_file(output):  # /dev/null, a FIFO: write in place, never replace
        with open(output, "w", encoding="utf-8", newline="") as f:
            write(f)
    elif output:
        from tputui.data.files import atomic_open

        try:  # no half-written file is ever left behind
            with atomic_open(output, "w", encoding="utf-8", newline="") as f:
                write(f)
        except OSError as e:
            return _fail(f"cannot write {output}: {(e.strerror or str(e)).lower()}")
    else:
        write(sys.stdout)
    return 0


def _print_notes(notes: list[str]) -> int:
    for note in notes:
        print(note, file=sys.stderr)
    return 0


def _is_special_file(path: str) -> bool:
    from tputui.text_output import is_special_file

    return is_special_file(path)


def _empty_table_notes(tables: dict) -> list[str]:
    """A CSV with a header and no row is easy to mistake for a failure: say which tables have rows."""
    name = next(iter(tables), None)
    if name is None or tables[name].height:
        return []
    others = [f"{n} ({t.height:,} rows)" for n, t in tables.items() if t.height]
    hint = f" (pick another with --table: {', '.join(others)})" if others else ""
    return [f"tputui: note: table {name!r} has no rows in this profile{hint}"]


def _emit(text: str, output: str | None) -> int:
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def run_live(command: str, argv: list[str]) -> int:
    if command == "monitor":
        return run_monitor(argv)
    try:
        from tputui.live import capture_cli as mod
        add, main = mod.add_capture_arguments, mod.main
    except (ImportError, AttributeError):
        return _fail(f"'{command}' is not available in this build")
    p = argparse.ArgumentParser(prog=f"tputui {command}")
    add(p)
    return main(p.parse_args(argv)) or 0


def monitor_parser() -> argparse.ArgumentParser:
    from tputui.live.runtime_metrics import METRICS_ADDRESS
    from tputui.live.tpu_resolve import add_tpu_arguments

    p = argparse.ArgumentParser(
        prog="tputui monitor", usage="%(prog)s [ADDRESS[,ADDRESS...] | --tpu NAME] [options]",
        description="Live TPU figures: libtpu's runtime metrics per chip (on a TPU VM), and step time, idle "
                    "and top ops from profile windows of each worker.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  tputui monitor                         on a TPU VM: this VM's chips and its profiler server\n"
               "  tputui monitor --tpu my-pod            every worker of a multi-host TPU\n"
               "  tputui monitor localhost:9012 --plain  lines instead of the pane")
    p.add_argument("address", nargs="?", metavar="ADDRESS",
                   help="profiler server(s) as host:port or grpc://host:port, comma-separated for several "
                        "workers (default on a TPU VM: --tpu local)")
    p.add_argument("--duration-ms", type=int, default=1000, help="length of each profile window (default 1000)")
    p.add_argument("--profile-every", type=float, metavar="SECONDS",
                   help="seconds from one profile window to the next (default: 10 when runtime metrics are "
                        "followed, else back to back)")
    p.add_argument("--runtime-metrics", metavar="ADDRESS",
                   help=f"libtpu's runtime-metrics service (default on a TPU VM and with --tpu local: "
                        f"{METRICS_ADDRESS}; 'off' to skip)")
    p.add_argument("--metrics-interval", type=float, default=1.0, metavar="SECONDS",
                   help="seconds between runtime-metrics reads (default 1)")
    p.add_argument("--monitoring-level", type=int, default=2, choices=[1, 2],
                   help="--plain detail: 1 device and utilization, 2 adds cores, idle, step time, infeed (default 2)")
    p.add_argument("--num-queries", type=int, default=None, metavar="N",
                   help="stop after N cycles: runtime-metrics reads when followed, else windows of each worker "
                        "(default: --plain 100, the pane runs until you quit)")
    p.add_argument("--plain", action="store_true",
                   help="print lines instead of the live pane (the default when stdout is not a terminal)")
    p.add_argument("--save-windows", metavar="LOGDIR",
                   help="also write every profile window as a run in LOGDIR (opens with tputui LOGDIR)")
    add_tpu_arguments(p)
    return p


def run_monitor(argv: list[str]) -> int:
    from tputui.errors import UserError
    from tputui.live.feed import LiveFeed
    from tputui.live.monitor import MonitorSession
    from tputui.live.runtime_metrics import METRICS_ADDRESS, RuntimePoller
    from tputui.live.tpu_resolve import addresses_from, on_tpu_vm

    a = monitor_parser().parse_args(argv)
    if a.num_queries is not None and a.num_queries < 1:
        raise UserError("--num-queries must be at least 1")

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    tpu = a.tpu
    if not a.address and not tpu and on_tpu_vm():
        say("on a TPU VM: following this VM's chips and profiler server (--tpu local)")
        tpu = "local"
    addresses = addresses_from(a.address, tpu, a.zone, a.project, a.profiler_port, say=say)
    # libtpu serves this VM's chips to local clients only: followed on a TPU VM, whoever is profiled
    metrics = a.runtime_metrics or (METRICS_ADDRESS if tpu == "local" or on_tpu_vm() else None)
    poller = None if metrics in (None, "off") else RuntimePoller(metrics, a.metrics_interval)
    every = a.profile_every if a.profile_every is not None else (10.0 if poller else 0.0)
    sessions = [MonitorSession(x, a.duration_ms, a.monitoring_level, interval_s=every) for x in addresses]
    feed = LiveFeed(sessions, poller)
    if len(addresses) > 1:
        say(f"monitoring {len(addresses)} workers: {', '.join(addresses)}")
    plain = a.plain or not sys.stdout.isatty()
    if plain and not a.plain:
        say("stdout is not a terminal: printing --plain lines")
    if plain:
        from tputui.live.plain import run_plain

        return run_plain(feed, a.num_queries or 100, save_windows=a.save_windows)
    from tputui.monitor_app import run_monitor_app

    return run_monitor_app(feed, a.duration_ms, num_queries=a.num_queries, save_windows=a.save_windows)


def run_app(argv: list[str]) -> int:
    a = app_parser().parse_args(argv)
    if a.version:
        from tputui import __version__

        print(f"tputui {__version__}")
        return 0
    if a.demo and a.logdir:
        return _fail("give a LOGDIR or --demo, not both")
    if a.demo:
        from tputui.demo import demo_logdir

        path = demo_logdir()
    elif a.logdir:
        path = a.logdir
    else:
        app_parser().print_usage(sys.stderr)
        return _fail("give a LOGDIR (or --demo)")
    if not os.path.exists(path) and not any(c in path for c in "/.:"):  # a mistyped subcommand, most likely
        return _fail(f"no such file or directory: {path} (subcommands: {', '.join(SUBCOMMANDS)})")
    logdir = _open_logdir(path, a.timeout)  # bad paths fail here, before the screen takes over
    run = logdir.run(a.run)
    if a.host:
        run.host(a.host)
    if a.tool:
        from tputui.tools import get_tool

        try:
            first = get_tool(a.tool)
        except KeyError:
            from tputui.tools import tool_names

            return _fail(f"unknown tool {a.tool!r} (tools: {', '.join(tool_names())})")
    if not a.host and (not a.tool or first.op_stats):  # the app opens on the overview by default
        _start_map_workers(run, a.jobs, a.dask, not a.no_cache)
    from tputui.app import TputuiApp
    from tputui.signals import exiting_app

    app = TputuiApp(logdir, run=run.name, host=a.host, tool=a.tool, use_cache=not a.no_cache,
                    jobs=a.jobs, dask=a.dask, watch=a.watch, demo=a.demo,
                    tpu_logs=tpu_logs_dir(a.tpu_logs))
    with exiting_app(app):  # SIGTERM / SIGHUP: the app quits as on q (a capture in flight is ended)
        app.run()
    from tputui.quick_exit import leave

    return leave(app.return_code or 0)  # decodes still running are not waited for (a capture is)


def _warnings_to_stderr() -> None:
    """Warnings the data layer logs (a damaged .xplane.riegeli region skipped) as one stderr line
    each; the app replaces this with notifications while it runs."""
    import logging

    class ToStderr(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.seen: set[str] = set()  # a file read again (another tool's planes) warns once

        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if message not in self.seen:
                self.seen.add(message)
                print(f"tputui: warning: {message}", file=sys.stderr, flush=True)  # stderr of the moment

    log = logging.getLogger("tputui")
    for h in [h for h in log.handlers if type(h).__name__ == "ToStderr"]:
        log.removeHandler(h)  # once per command: a second command in one process warns again
    log.addHandler(ToStderr())
    log.propagate = False


def entry() -> int:
    """The `tputui` command: main(), with a one-shot command's freed memory kept for reuse
    (see data/allocator.py; the long-lived app leaves glibc's defaults alone); an export ends
    without the interpreter's teardown (quick_exit.end_without_teardown)."""
    if sys.argv[1:2] and sys.argv[1] in ("export", "sql", "diff"):
        from tputui.data.allocator import keep_freed_memory

        keep_freed_memory()
    code = main()
    if sys.argv[1:2] == ["export"]:
        from tputui.quick_exit import end_without_teardown

        end_without_teardown(code)
    return code


C_EXTENSIONS = ("tputui.data._wire", "tputui.data._columns", "tputui.analysis._nesting", "tputui.analysis._derive",
                "tputui.data._highway", "tputui.analysis._trace_json")


def missing_c_extensions() -> list[str]:
    import importlib.util

    return [m for m in C_EXTENSIONS if importlib.util.find_spec(m) is None]


def _warn_without_c_extensions() -> None:
    """Once per install: pip built tputui without a C compiler, so it decodes with the pure-Python
    fallbacks (exact, 15-20x slower on big profiles): say so, with the fix."""
    missing = missing_c_extensions()
    if not missing:
        return
    from tputui import __version__
    from tputui.userdirs import load_settings, save_setting

    key = "warned_no_c_extensions"
    if load_settings().get(key) == __version__:
        return
    print(f"tputui: note: built without its C extensions ({', '.join(m.rsplit('.', 1)[1] for m in missing)}): "
          "big profiles decode 15-20x slower. Install a C compiler (e.g. apt install build-essential) and "
          "reinstall: pip install --force-reinstall --no-deps --no-cache-dir tputui", file=sys.stderr)
    try:
        save_setting(key, __version__)
    except OSError:  # a read-only home: say it again next time rather than fail
        pass


def main(argv: list[str] | None = None) -> int:
    import signal

    from tputui import signals

    # SIGTERM / SIGHUP unwind like Ctrl+C (a capture's window ended on the server, a part file
    # removed); the handlers in place before are back when main returns.
    previous = {sig: signal.getsignal(sig) for sig in signals.ENDING}
    signals.raise_on_ending_signals()
    try:
        return _main(argv)
    except signals.Terminated as e:  # outside _main's own handling (while it reported an error)
        signals.quiet_streams()
        return e.exit_code
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _main(argv: list[str] | None) -> int:
    from tputui.errors import UserError
    from tputui.signals import Terminated, quiet_streams, say

    argv = sys.argv[1:] if argv is None else argv
    _warn_without_c_extensions()
    if argv and argv[0] in ("export", "capture", "monitor"):  # the app shows them as notifications
        _warnings_to_stderr()
    try:
        if argv and argv[0] == "export":
            return run_export(argv[1:])
        if argv and argv[0] in ("capture", "monitor"):
            return run_live(argv[0], argv[1:])
        if argv and argv[0] == "sql":
            from tputui.sql_command import main as sql_main

            return sql_main(argv[1:])
        if argv and argv[0] == "diff":
            from tputui.diff_command import main as diff_main

            return diff_main(argv[1:])
        return run_app(argv)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except Terminated as e:
        say(f"tputui: ended by {e}")
        quiet_streams()
        return e.exit_code
    except BrokenPipeError:  # `tputui export ... | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as e:  # noqa: BLE001 - the one place that turns errors into one line
        if isinstance(e, UserError):
            return _fail(str(e))
        if os.environ.get("TPUTUI_DEBUG"):
            raise
        return _fail(f"{type(e).__name__}: {e} (set TPUTUI_DEBUG=1 for a traceback)")


if __name__ == "__main__":
    sys.exit(entry())

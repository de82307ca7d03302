"""The registry of tools: one entry per XProf tool, imported lazily.

Each tool is an analysis function `analyze(run: RunData, host: str | None, **options)`
returning a result object with `to_json() -> dict` and `tables() -> dict[str, DataFrame]`
(see tputui/analysis/result.py), plus an optional Textual screen class that draws it.
A tool added here shows up in the app's tool picker, `tputui export --tool` and `--list`.
"""
from __future__ import annotations

import importlib
import inspect
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tputui.data.progress import reporting
from tputui.errors import UserError

if TYPE_CHECKING:  # the registry stays cheap to import: `tputui export` starts workers before numpy
    from tputui.data.run_data import RunData


@dataclass(frozen=True)
class Tool:
    name: str  # XProf's tool id, used by --tool and in export file names
    title: str  # what the tool picker shows
    analysis: str  # "module:function" -> analyze(run, host, **options)
    screen: str | None = None  # "module:Class" (a ToolScreen subclass)
    has_data: str | None = None  # "module:function" -> bool(run); None: always listed
    key: str | None = None  # optional shortcut key in the app
    # The keyword options the analysis takes, with their defaults. Declared here rather than read
    # from the analysis' signature so that `tputui export` builds its flags without importing every
    # tool (~0.15 s); tests/test_cli.py checks each equals the signature.
    declared_options: tuple[tuple[str, object], ...] = ()
    # Whether the analysis reads the host's whole decoded frame (False: one plane, e.g. the HLO
    # metadata): `tputui export` then starts that decode while it imports the tool.
    whole_frame: bool = True
    # Whether the analysis reduces over the per-host op stats (host_map): on a multi-host run
    # `tputui export` then starts the map's worker processes while it imports the tool.
    op_stats: bool = False

    def analyze_fn(self):
        """The tool's analysis, after a check that the run (or host) has a readable profile,
        so every tool says the same clear thing about a run or host it cannot read; over
        all hosts, host files that cannot be read are left out (and listed in run.unreadable).
        `progress` (a callable taking one short message) hears about slow reads and decodes."""
        analyze = _load(self.analysis)

        def checked(run: RunData, host=None, progress=None, **options):
            if host is None:  # all hosts: the readable ones (the others are in run.unreadable)
                run.check_hosts()
                run.require_hosts()
            else:
                run.host_file(host)
            with reporting(progress):
                return analyze(run, host, **options)

        return checked

    def options(self) -> dict[str, object]:
        """The keyword options the analysis takes, with their defaults (anything else it would
        silently ignore)."""
        return dict(self.declared_options)

    def signature_options(self) -> dict[str, object]:
        """The options as the analysis function's signature names them (imports the tool)."""
        params = inspect.signature(_load(self.analysis)).parameters.values()
        return {p.name: p.default for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and p.name not in ("run", "host")}

    def option_names(self) -> list[str]:
        return list(self.options())

    def screen_class(self):
        return _load(self.screen) if self.screen else None

    def screen_imported(self) -> bool:
        """Whether the screen's module is imported already (its widgets bring Polars: ~0.5 s)."""
        return not self.screen or self.screen.partition(":")[0] in sys.modules

    def check_imported(self) -> bool:
        """Whether has_data's module is imported already (asking costs no import)."""
        return self.has_data is None or self.has_data.partition(":")[0] in sys.modules

    def available(self, run: RunData) -> bool:
        """Whether the run has data for this tool. A host file that cannot be read is left out
        (the run records it in `run.unreadable`) and the others asked again; another UserError
        means no data; any other failure is a bug and is raised."""
        if self.has_data is None:
            return bool(run.hosts)
        while run.hosts:
            failed = len(run.unreadable)
            try:
                return bool(_load(self.has_data)(run))
            except UserError:
                if len(run.unreadable) == failed:  # not a host file that failed: no data
                    return False
            # else that host is now left out of run.hosts: ask again about the others
        return False


def _load(path: str):
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


# Order = the tool picker's order (XProf's order where it has one).
TOOLS: list[Tool] = [
    Tool("summary", "Profile summary", "tputui.analysis.summary:analyze",
         "tputui.screens.summary:SummaryScreen"),
    Tool("overview_page", "Overview page", "tputui.analysis.overview:analyze",
         "tputui.screens.overview:OverviewScreen", op_stats=True,
         declared_options=(('tpu_logs', None),)),
    Tool("input_pipeline_analyzer", "Input pipeline analyzer", "tputui.analysis.input_pipeline:analyze",
         "tputui.screens.input_pipeline:InputPipelineScreen", op_stats=True),
    Tool("trace_viewer", "Trace viewer", "tputui.analysis.trace_export:analyze",
         "tputui.screens.trace_viewer:TraceViewerScreen",
         declared_options=(('args', False),)),
    Tool("memory_profile", "Memory profile", "tputui.analysis.memory_profile:analyze",
         "tputui.screens.memory_profile:MemoryProfileScreen", has_data="tputui.analysis.memory_profile:has_data",
         whole_frame=False, declared_options=(('max_snapshots', 1000),)),
    Tool("memory_viewer", "Memory viewer", "tputui.analysis.memory_viewer:analyze",
         "tputui.screens.memory_viewer:MemoryViewerScreen", has_data="tputui.analysis.memory_viewer:has_data",
         whole_frame=False, declared_options=(('module', None), ('memory_space', 0), ('list_modules', False))),
    Tool("framework_op_stats", "Framework op stats", "tputui.analysis.framework_op_stats:analyze",
         "tputui.screens.framework_op_stats:FrameworkOpStatsScreen", op_stats=True),
    Tool("op_profile", "Op profile", "tputui.analysis.op_profile:analyze",
         "tputui.screens.op_profile:OpProfileScreen", has_data="tputui.analysis.op_profile:has_data", op_stats=True),
    Tool("hlo_stats", "HLO stats", "tputui.analysis.hlo_stats:analyze",
         "tputui.screens.hlo_stats:HloStatsScreen", has_data="tputui.analysis.hlo_stats:has_data", op_stats=True),
    Tool("roofline_model", "Roofline model", "tputui.analysis.roofline:analyze",
         "tputui.screens.roofline:RooflineScreen", has_data="tputui.analysis.roofline:has_data", op_stats=True),
    Tool("kernel_stats", "GPU kernel stats", "tputui.analysis.kernel_stats:analyze",
         "tputui.screens.kernel_stats:KernelStatsScreen", has_data="tputui.analysis.kernel_stats:has_data", op_stats=True),
    Tool("pod_viewer", "Pod viewer", "tputui.analysis.pod_viewer:analyze",
         "tputui.screens.pod_viewer:PodViewerScreen", op_stats=True),
    Tool("megascale_stats", "Megascale stats", "tputui.analysis.megascale:analyze",
         "tputui.screens.megascale:MegascaleScreen", has_data="tputui.analysis.megascale:has_data",
         declared_options=(('dcn_gbps', None), ('device', None))),
    Tool("graph_viewer", "Graph viewer", "tputui.analysis.graph_viewer:analyze",
         "tputui.screens.graph_viewer:GraphViewerScreen", has_data="tputui.analysis.graph_viewer:has_data",
         whole_frame=False, declared_options=(('module', None), ('node', None), ('depth', 3))),
    Tool("smart_suggestion", "Advice (smart suggestions)", "tputui.analysis.smart_suggestion:analyze",
         "tputui.screens.advice:AdviceScreen", op_stats=True, declared_options=(('tpu_logs', None),)),
    Tool("perf_counters", "Performance counters", "tputui.analysis.perf_counters:analyze",
         "tputui.screens.perf_counters:PerfCountersScreen", has_data="tputui.analysis.perf_counters:has_data"),
    Tool("utilization_viewer", "Utilization viewer", "tputui.analysis.utilization_viewer:analyze",
         "tputui.screens.utilization_viewer:UtilizationViewerScreen",
         has_data="tputui.analysis.utilization_viewer:has_data"),
    Tool("tf_data_bottleneck_analysis", "tf.data bottleneck", "tputui.analysis.tf_data_bottleneck:analyze",
         "tputui.screens.tf_data:TfDataScreen", has_data="tputui.analysis.tf_data_bottleneck:has_data"),
]


def get_tool(name: str) -> Tool:
    for t in TOOLS:
        if t.name == name:
            return t
    raise KeyError(name)


def tools_with_data(run: RunData) -> list[str]:
    """Names of the tools with data in `run` (may run the op-stats map: call it off the UI thread)."""
    return [t.name for t in TOOLS if t.available(run)]


def tools_known(run: RunData, imports: bool = False) -> dict[str, bool | None]:
    """Which tools have data as far as is known now, without reading a host file: every tool's
    has_data answers from the file list or the hosts' op stats, so once the op stats are in this
    process (the overview computed them) all answer at once; before that, the tools needing them
    are None (still to check). Cheap enough for the UI thread."""
    # Imported here, not at the top: `tputui export` imports this module on every start and
    # most exports never ask (~0.1 s of numpy / polars imports saved).
    from tputui.analysis.host_map import known_op_stats

    hosts = run.hosts
    mapped = bool(hosts) and len(known_op_stats(run, hosts, from_disk=False)) == len(hosts)
    # A check whose module is not imported yet is left to the caller's worker too (importing a
    # tool's analysis can take a tenth of a second), unless `imports`.
    return {t.name: t.available(run) if t.has_data is None or (mapped and (imports or t.check_imported())) else None
            for t in TOOLS}


def warm_up_checks() -> None:
    """Import every tool's data check (from a background thread), so tools_known answers all."""
    for t in TOOLS:
        if t.has_data:
            _load(t.has_data)


def tool_names() -> list[str]:
    return [t.name for t in TOOLS]

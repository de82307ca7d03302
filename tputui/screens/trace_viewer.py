"""The trace viewer screen: XProf's timeline in the terminal, for any number of events.

Keys (XProf's browser keys kept): w/s zoom in/out around the cursor, a/d pan, f zoom to the
selection, m mark the selection's interval, arrows move the selection (←/→ previous/next event
on the track, ↑/↓ next track), Enter expands/collapses a section, / search names (n/N next/previous
match), * select every match, g go to a time, 1-4 selection / pan / zoom / timing modes
(timing: ←/→ move the time cursor, space sets a mark; two marks measure the interval).
H picks several hosts (space toggles, Enter shows) and stacks them on one time axis
(trace_hosts: aligned by each host's absolute profile start). Flows: a selected event's flow
partners (trace_flows) are highlighted, joined to it by a connector and listed in the details;
y / Y jump to the next / previous one (l is the graph viewer's). z sets a range mark
at the cursor (the selection, or the time cursor in timing mode); the second closes the range,
shaded, and the details sum its events per name (trace_selection.range_stats); Z clears it.
One end of a marked interval moves: E picks its start or its end, `.` moves that end to the
time cursor (timing mode) or to the selected event's matching edge, < / > nudge it a column.
Counter tracks (trace_counters) sit under their process's header as sparklines; on one, the
status line gives its value at the time cursor.

"Show in trace viewer" from other screens (the API other tools call):

    from tputui.screens.trace_viewer import TraceFocus, show_in_trace_viewer
    show_in_trace_viewer(self.app, TraceFocus(names=("fusion.3",)))          # an op's events
    show_in_trace_viewer(self.app, TraceFocus(frame_rows=rows))             # rows of frame.events
    show_in_trace_viewer(self.app, TraceFocus(start_ps=a, end_ps=b))        # a step's time range
    show_in_trace_viewer(self.app, TraceFocus(search="all-reduce"))         # highlight a name

`frame_rows` are rows of the host's `XSpaceFrame.events` table (what analyses hold); `names` are
exact event names as the trace viewer shows them (e.g. "train 5", an HLO op name); the matching
events are selected and the view zooms to them (or to `start_ps`..`end_ps` when given). Times
are picoseconds from the profile start, like `XSpaceFrame.events.start_ps`.
It opens the trace viewer for the app's current run and host.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Static

from tputui import format as fmt
from tputui.analysis.collective_wait import CollectiveWait, wait_for_slowest
from tputui.analysis.result import NoDataError
from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_cache import finish_index, open_index
from tputui.analysis.trace_flows import FLOW_KINDS
from tputui.analysis.trace_hosts import stacked_index
from tputui.analysis.trace_selection import earliest, events_of, range_stats, selection_stats, self_share
from tputui.data.progress import Progress
from tputui.data.run_data import RunData
from tputui.screens.app_api import ToolsApp
from tputui.screens.base import ContextBar, ToolScreen
from tputui.screens.host_stack_picker import HostStackPicker
from tputui.tools import Tool
from tputui.widgets.timeline import Timeline, fmt_tick, parse_time
from tputui.widgets.type_ahead import text_is_typed


class DetailsBox(VerticalScroll, can_focus=False):
    """The details pane: scrolls (ctrl+↑ ↓, the wheel) but never takes the timeline's focus."""


@dataclass(frozen=True)
class TraceFocus:
    """What another screen wants the trace viewer to show (see the module docstring)."""

    frame_rows: tuple[int, ...] = ()
    names: tuple[str, ...] = ()
    search: str | None = None
    start_ps: int | None = None
    end_ps: int | None = None


def show_in_trace_viewer(app: App[Any], focus: TraceFocus) -> None:
    """Open the trace viewer (current run and host) with `focus` selected and in view."""
    if not isinstance(app, ToolsApp):
        raise TypeError(f"the trace viewer opens in tputui's app, not {type(app).__name__}")
    app.open_tool("trace_viewer", focus=focus)


MAX_STATS = 40
MAX_NAMES = 8  # names listed for a multi-event selection
MAX_FLOWS = 12  # flow partners listed for one event
MAX_RANGE_NAMES = 30  # names listed for a marked range (the pane scrolls)
NO_MARK = "no marked interval: m marks the selection, z twice a range, 4 then space twice a timed one"
HINT = "Select an event: arrows, click, / to search, n / N for matches."
CAPTURE_EDGE_NOTE = ("Events that cross the capture's start or end are missing: the profiler keeps only what begins "
                     "and ends inside it, so a step cut by an edge is not shown.")


class TraceViewerScreen(ToolScreen[TraceIndex]):
    DEFAULT_CSS = """
    TraceViewerScreen #status { height: auto; background: $boost; padding: 0 1; }
    TraceViewerScreen #details-box { height: auto; max-height: 30%; border-top: solid $foreground 55%;
                                     padding: 0 1; }
    TraceViewerScreen #details { height: auto; }
    TraceViewerScreen #prompt { dock: bottom; display: none; }
    TraceViewerScreen #prompt.visible { display: block; }
    """

    ZOOM, PAN, MATCH = Binding.Group("Zoom"), Binding.Group("Pan"), Binding.Group("Match")
    FLOW = Binding.Group("Flow")
    BINDINGS = [  # short words for the footer; the tooltip is what `?` says
        Binding("w", "zoom(0.5)", "Zoom in", id="trace.zoom_in", group=ZOOM, tooltip="zoom in (around the selection)"),
        Binding("s", "zoom(2.0)", "Zoom out", id="trace.zoom_out", group=ZOOM, tooltip="zoom out"),
        Binding("a", "pan(-0.25)", "Pan left", id="trace.pan_left", group=PAN, tooltip="pan left"),
        Binding("d", "pan(0.25)", "Pan right", id="trace.pan_right", group=PAN, tooltip="pan right"),
        Binding("f", "fit", "Fit", id="trace.fit", tooltip="zoom to the selection"),
        Binding("m", "mark", "Mark", id="trace.mark", tooltip="mark the selection's interval on the time axis"),
        Binding("left", "arrow('left')", "Previous event / pan", show=False, id="trace.left",
                tooltip="previous event on the track (pan / zoom modes: pan; timing: move the cursor)"),
        Binding("right", "arrow('right')", "Next event / pan", show=False, id="trace.right",
                tooltip="next event on the track (pan / zoom modes: pan; timing: move the cursor)"),
        Binding("up", "arrow('up')", "Previous track", show=False, id="trace.up",
                tooltip="line above (pan mode: scroll; zoom mode: zoom in)"),
        Binding("down", "arrow('down')", "Next track", show=False, id="trace.down",
                tooltip="line below (pan mode: scroll; zoom mode: zoom out)"),
        Binding("enter", "fold_or_fit", "Fold / fit", id="trace.toggle",
                tooltip="on a section line: expand / collapse it; on a selected event: fit it"),
        # Enter in timing mode: its own binding, so the footer says what Enter does there.
        Binding("enter", "timing_enter", "Set mark", id="trace.timing_enter",
                tooltip="set a timing mark at the time cursor (two marks measure the interval)"),
        Binding("space", "timing_mark", "Set a timing mark", show=False, id="trace.timing_mark",
                tooltip="set a timing mark at the time cursor (two marks measure the interval)"),
        Binding("slash", "prompt('search')", "Search", id="trace.search", tooltip="search event names", priority=True),
        Binding("n", "next_match(1)", "Next match", id="trace.next", group=MATCH, tooltip="next match"),
        Binding("N", "next_match(-1)", "Previous match", id="trace.prev", group=MATCH, tooltip="previous match"),
        Binding("asterisk", "select_matches", "Select all matches", show=False, id="trace.select_matches",
                tooltip="select every match (the details pane sums them)"),
        Binding("g", "prompt('goto')", "Go to", id="trace.goto", tooltip="go to a time, e.g. 12.5ms", priority=True),
        Binding("y", "flow(1)", "Next flow partner", show=False, id="trace.flow_next", group=FLOW,
                tooltip="jump to the selected event's next flow partner (host launch -> device op, producer -> consumer)"),
        Binding("Y", "flow(-1)", "Previous flow partner", show=False, id="trace.flow_prev", group=FLOW,
                tooltip="jump to the previous flow partner"),
        Binding("E", "mark_end", "Start / end of the mark", show=False, id="trace.mark_end",
                tooltip="pick which end of the marked interval moves: its start or its end"),
        Binding("full_stop", "move_mark_end", "Move the mark's end here", show=False, id="trace.move_mark_end",
                tooltip="move the picked end of the marked interval to the time cursor (timing mode) or to the "
                        "selected event's edge (its start for the start, its end for the end)"),
        Binding("less_than_sign", "nudge_mark_end(-1)", "Nudge the mark's end left", show=False,
                id="trace.nudge_mark_left", tooltip="move the picked end of the marked interval one column left"),
        Binding("greater_than_sign", "nudge_mark_end(1)", "Nudge the mark's end right", show=False,
                id="trace.nudge_mark_right", tooltip="move the picked end of the marked interval one column right"),
        Binding("z", "range_mark", "Range mark", show=False, id="trace.range_mark",
                tooltip="range mark at the cursor (the selection, or the time cursor in timing mode); the second "
                        "closes the range: shaded, and its events summed per name"),
        Binding("H", "stack_hosts", "Stack hosts", show=False, id="trace.stack_hosts",
                tooltip="pick several hosts (space toggles, Enter shows): their processes one under another "
                        "on one time axis, aligned by absolute time"),
        Binding("Z", "clear_range", "Clear range", show=False, id="trace.clear_range", tooltip="clear the marked range"),
        Binding("1", "mode('select')", "Selection mode", show=False, id="trace.mode_select",
                tooltip="selection mode (arrows move between events)"),
        Binding("2", "mode('pan')", "Pan mode", show=False, id="trace.mode_pan", tooltip="pan mode (arrows pan)"),
        Binding("3", "mode('zoom')", "Zoom mode", show=False, id="trace.mode_zoom",
                tooltip="zoom mode (↑ ↓ zoom, ← → pan)"),
        Binding("4", "mode('timing')", "Timing mode", show=False, id="trace.mode_timing",
                tooltip="timing mode (← → move a time cursor, space / Enter set marks)"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="trace.page_up", tooltip="scroll the tracks a page up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="trace.page_down",
                tooltip="scroll the tracks a page down"),
        Binding("home", "page(-1e9)", "Top", show=False, id="trace.top", tooltip="scroll to the first track"),
        Binding("end", "page(1e9)", "Bottom", show=False, id="trace.bottom", tooltip="scroll to the last track"),
        Binding("ctrl+down", "scroll_details(1)", "Details down", show=False, id="trace.details_down",
                tooltip="scroll the details pane down"),
        Binding("ctrl+up", "scroll_details(-1)", "Details up", show=False, id="trace.details_up",
                tooltip="scroll the details pane up"),
        Binding("escape", "clear", "Clear selection / prompt", show=False, id="trace.clear",
                tooltip="clear the selection, then the marked range (or close the search / go-to line)"),
    ]
    help_notes = ("[b]Like XProf's trace viewer[/b]: w a s d zoom and pan, 1-4 pick what the arrows do, "
                  "f fits the selection, m marks it. A selected event's flow partners are highlighted and joined "
                  "by a connector; y / Y jump between them. z twice marks a range (per-name summary below). "
                  "E picks the marked interval's start or end, . moves it to the cursor / selected event, "
                  "< > nudge it. H stacks several hosts on one time axis. "
                  "Times are from the profile start. The mouse works too: "
                  "click selects, the wheel zooms at the pointer, shift+wheel pans. " + CAPTURE_EDGE_NOTE)

    def __init__(self, run: RunData, host: str | None, tool: Tool, **options: Any) -> None:
        self.focus_request: TraceFocus | None = options.pop("focus", None)
        self.stack_hosts: list[str] | None = options.pop("hosts", None)  # several hosts stacked (H)
        # One host's timeline unless hosts are stacked: "all hosts" opens the first and says so.
        self.first_of = len(run.hosts) if host is None and len(run.hosts) > 1 else 0
        if self.first_of:
            host = run.hosts[0]
        super().__init__(run, host, tool, **options)
        self.index: TraceIndex | None = None
        self.timeline: Timeline | None = None
        self.lod_note = ""
        self._prompt_kind = ""

    def host_label(self) -> str:
        if self.stack_hosts:
            names = ", ".join(self.stack_hosts)
            return f"[b]{len(self.stack_hosts)} hosts stacked[/b] [dim]({names}; H picks)[/dim]"
        if self.first_of:
            return f"[b]{self.host}[/b] [dim](1 of {self.first_of}; H stacks several, h picks one)[/dim]"
        return super().host_label()

    # --- loading ----------------------------------------------------------------------------
    def analyze(self, progress: Progress) -> TraceIndex:
        if self.stack_hosts:
            return stacked_index(self.run_data, self.stack_hosts, progress)
        # The saved index, else the quick first pass (drawn at once); build_lod finishes and swaps it.
        index = open_index(self.run_data, self.host, progress)
        if index.num_events == 0 and index.partial:
            index = finish_index(self.run_data, self.host, index)  # derived lines may be all there is
        if index.num_events == 0:
            host = self.host or self.run_data.hosts[0]
            raise NoDataError(f"no trace events on host {host} ({len(index.tracks)} thread / device line(s), "
                              "all empty; capture a longer window or raise the tracer levels)")
        return index

    def show(self, index: TraceIndex) -> None:
        self.index = index
        self.timeline = Timeline(index, id="timeline")
        if index.deferred:  # their events come with the final index: folded until then
            self.timeline.collapsed.update(index.deferred)
            self.timeline.rebuild_lines()
        self.body.mount(Vertical(
            self.timeline,
            Static("", id="status"),
            DetailsBox(Static(Text(HINT, style="dim"), id="details"), id="details-box"),
            id="trace"))
        self.body.mount(Input(placeholder="", id="prompt"))
        self.timeline.focus()
        if self.focus_request is not None:
            self.apply_focus(self.focus_request)
        # After the mount: a saved index has no background work whose progress would draw it later.
        self.call_after_refresh(self.update_status)
        if not index.complete:
            self.lod_note = "in the background: building the level of detail…"
            self.build_lod()

    @work(thread=True, exclusive=True, group="trace-lod", description="level of detail")
    def build_lod(self) -> None:
        ix = self.index
        if ix is None:  # the screen moved on (hosts stacked) before the worker started
            return

        def report(msg: str) -> None:
            self.post_message(self.LodProgress(msg))

        self.post_message(self.LodDone(finish_index(self.run_data, self.host, ix, report), first=ix))

    @work(thread=True, exclusive=True, group="trace-frame", description="event details")
    def load_details_frame(self, event: int) -> None:
        if self.index is None:
            return
        try:
            self.index.prepare_details(event)
        except Exception as e:  # noqa: BLE001 - the view works without details; say why
            self.post_message(self.DetailsFrameFailed(f"cannot read the event's details: {e}"))
            return
        self.post_message(self.DetailsFrameLoaded())

    # The workers' news, as messages: a screen the user left drops them.
    class LodProgress(Message, bubble=False):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class DetailsFrameLoaded(Message, bubble=False):
        pass

    def on_trace_viewer_screen_details_frame_loaded(self, _event: DetailsFrameLoaded) -> None:
        self.update_details()

    class DetailsFrameFailed(Message, bubble=False):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def on_trace_viewer_screen_details_frame_failed(self, event: DetailsFrameFailed) -> None:
        self.notify(event.text, severity="warning")

    class LodDone(Message, bubble=False):
        def __init__(self, index: TraceIndex, first: TraceIndex | None = None) -> None:
            super().__init__()
            self.index, self.first = index, first  # first: the index it finishes

    def on_trace_viewer_screen_lod_progress(self, event: LodProgress) -> None:
        self.lod_note = f"in the background: {event.text}"  # the view already works; say this is extra
        self.update_status()

    def on_trace_viewer_screen_lod_done(self, event: LodDone) -> None:
        if event.first is not None and event.first is not self.index:
            return  # finishes an index this screen has replaced since (another host, stacked hosts)
        if self.index is not None and event.index is not self.index:
            was_partial, deferred, self.index = self.index.partial, self.index.deferred, event.index
            if self.timeline is not None:
                self.timeline.collapsed.difference_update(deferred)  # their events are here now
                self.timeline.set_index(event.index)
                f = self.focus_request
                if was_partial and f is not None and (f.names or f.frame_rows):  # derived lines' and host
                    self.apply_focus(f)  # threads' events exist only now
        self.lod_note = ""
        if self.timeline is not None:
            self.timeline.invalidate()
        self.update_status()

    # --- focus from other screens ----------------------------------------------------------
    def apply_focus(self, f: TraceFocus) -> None:
        ix, tl = self.index, self.timeline
        if ix is None or tl is None:  # nothing shown yet: show() applies the request
            return
        picked = events_of(ix, f.frame_rows, f.names)
        if f.search:
            tl.set_search(f.search)
            if not len(picked):
                picked = tl.matches
        if len(picked):
            tl.select(picked, current=earliest(ix, picked))
        if f.start_ps is not None and f.end_ps is not None:
            tl.set_window(f.start_ps, f.end_ps)
        elif len(picked):
            tl.zoom_to_selection()

    # --- actions -----------------------------------------------------------------------------
    def _ready(self) -> Timeline | None:
        """The timeline, when keys act on it (loaded, and no prompt has the focus)."""
        tl = self.timeline
        return tl if tl is not None and not self.query_one("#prompt", Input).has_focus else None

    def action_zoom(self, factor: float) -> None:
        if (tl := self._ready()) is not None:
            tl.zoom(float(factor))

    def action_pan(self, fraction: float) -> None:
        if (tl := self._ready()) is not None:
            tl.pan(float(fraction))

    def action_fit(self) -> None:
        if (tl := self._ready()) is not None:
            tl.zoom_to_selection()

    def action_mark(self) -> None:
        if (tl := self._ready()) is not None:
            tl.mark_selection()

    def action_arrow(self, key: str) -> None:
        if (tl := self._ready()) is None:
            return
        mode = tl.mode
        if mode == "select":
            {"left": lambda: tl.step_event(-1), "right": lambda: tl.step_event(1),
             "up": lambda: tl.step_line(-1), "down": lambda: tl.step_line(1)}[key]()
        elif mode == "pan":
            {"left": lambda: tl.pan(-0.1), "right": lambda: tl.pan(0.1),
             "up": lambda: tl.scroll_lines(-1), "down": lambda: tl.scroll_lines(1)}[key]()
        elif mode == "zoom":
            {"left": lambda: tl.pan(-0.1), "right": lambda: tl.pan(0.1),
             "up": lambda: tl.zoom(0.8), "down": lambda: tl.zoom(1.25)}[key]()
        else:  # timing
            {"left": lambda: tl.timing_move(-1), "right": lambda: tl.timing_move(1),
             "up": lambda: tl.step_line(-1), "down": lambda: tl.step_line(1)}[key]()

    def action_fold_or_fit(self) -> None:
        if (tl := self._ready()) is None:
            return
        if tl.mode == "timing":
            tl.timing_mark()
            self.update_details()
        elif tl._lines and tl._lines[tl.focus_line][0] == "section":
            tl.toggle_section()
            if tl.mark is not None and not len(tl.selection):
                self.update_details()  # the range summary counts the tracks shown
        elif len(tl.selection):  # on an event: fit it (folding its whole process hid what was picked)
            tl.zoom_to_selection()

    def action_stack_hosts(self) -> None:
        hosts = self.run_data.hosts
        if len(hosts) < 2:
            self.notify("this run has one host: nothing to stack", timeout=3)
            return
        chosen = self.stack_hosts or [self.host or hosts[0]]
        self.app.push_screen(HostStackPicker(hosts, chosen), self.stack_picked)

    def stack_picked(self, picked: list[str] | None) -> None:
        if picked is None:
            return
        if not picked:
            self.notify("no host picked: space toggles a host, Enter shows them", severity="warning", timeout=4)
            return
        self.focus_request = None  # rows of one host's file mean nothing in the stacked view
        self.stack_hosts = picked if len(picked) > 1 else None
        self.host, self.first_of = picked[0], 0
        self.index = self.timeline = None
        self.query_one("#context", ContextBar).update(self.context_text())
        self.load()

    def action_flow(self, step: int) -> None:
        if (tl := self._ready()) is None:
            return
        if tl.current < 0:
            self.notify("select an event first: y jumps to its flow partners", timeout=3)
        elif not tl.next_flow_partner(int(step)):
            note = "" if tl.ix.complete else " (flows come with the full index, being built)"
            self.notify(f"no flow arrows to or from {tl.ix.event_name(tl.current)!r}{note}", timeout=3)

    def action_range_mark(self) -> None:
        if (tl := self._ready()) is not None:
            tl.range_mark()
            self.update_details()

    def action_clear_range(self) -> None:
        if (tl := self._ready()) is not None:
            tl.clear_range()
            self.update_details()

    def action_mark_end(self) -> None:
        if (tl := self._ready()) is not None:
            if tl.switch_mark_end() is None:
                self.notify(NO_MARK, timeout=3)

    def action_move_mark_end(self) -> None:
        if (tl := self._ready()) is None:
            return
        target = tl.mark_end_target()
        if tl.mark is None:
            self.notify(NO_MARK, timeout=3)
        elif target is None:
            self.notify("nothing to move it to: select an event, or press 4 for a time cursor", timeout=3)
        else:
            tl.move_mark_end(target)
            self.update_details()

    def action_nudge_mark_end(self, cols: int) -> None:
        if (tl := self._ready()) is None:
            return
        if tl.nudge_mark_end(int(cols)):
            self.update_details()
        else:
            self.notify(NO_MARK, timeout=3)

    def action_timing_mark(self) -> None:
        if (tl := self._ready()) is not None:
            tl.timing_mark()
            self.update_details()

    def action_next_match(self, step: int) -> None:
        if (tl := self._ready()) is None:
            return
        if not tl.search_text:
            self.notify("nothing searched yet: / searches event names", timeout=3)
            return
        tl.next_match(int(step))

    def action_select_matches(self) -> None:
        if (tl := self._ready()) is not None:
            tl.select_all_matches()

    def action_mode(self, mode: str) -> None:
        if (tl := self._ready()) is not None:
            tl.mode = mode
            if mode == "timing" and tl.time_cursor is None:
                tl.time_cursor = int(tl.zoom_anchor())
            tl.view_changed()
            self.refresh_bindings()  # Enter's footer label follows the mode

    def action_timing_enter(self) -> None:
        self.action_fold_or_fit()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        timeline = getattr(self, "timeline", None)
        timing = timeline is not None and timeline.mode == "timing"
        if action == "fold_or_fit":
            return not timing
        if action == "timing_enter":
            return timing
        if action == "prompt":  # a priority key: while text is typed, it is text
            return not text_is_typed(self)
        return super().check_action(action, parameters)

    def action_page(self, step: float) -> None:
        if (tl := self._ready()) is not None:
            lines = step * max(tl.body_height - 1, 1)
            tl.scroll_lines(int(max(min(lines, 1e9), -1e9)))

    def action_scroll_details(self, step: int) -> None:
        for box in self.query("#details-box"):
            box.scroll_relative(y=int(step) * max(box.size.height - 1, 1), animate=False)

    def action_clear(self) -> None:
        prompt = self.query("#prompt")
        if prompt and prompt.first().has_focus:
            self.hide_prompt()
        elif self.timeline is not None and len(self.timeline.selection):
            self.timeline.select([])
        elif self.timeline is not None and self.timeline.mark is not None:
            self.timeline.clear_range()
            self.update_details()
        else:
            raise SkipAction()  # nothing to clear: Esc goes on to the app (back)

    def action_prompt(self, kind: str) -> None:
        if self.timeline is None:
            return
        prompt = self.query_one("#prompt", Input)
        self._prompt_kind = kind
        if kind == "search":
            prompt.placeholder = "search event names (substring; Enter to search, Esc to cancel)"
            prompt.value = self.timeline.search_text
        else:
            prompt.placeholder = "go to time from the profile start, e.g. 12.5ms, 300us, 2s (Enter, Esc)"
            prompt.value = ""
        prompt.add_class("visible")
        prompt.focus()

    def hide_prompt(self) -> None:
        prompt = self.query_one("#prompt", Input)
        prompt.remove_class("visible")
        if self.timeline is not None:
            self.timeline.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "prompt" or self.timeline is None:
            return
        text = event.value
        self.hide_prompt()
        if self._prompt_kind == "search":
            n = self.timeline.set_search(text)
            if text:
                self.notify(f"{n:,} event(s) match {text!r}" + ("  (n / N to step through)" if n else ""),
                            timeout=3)
                if n:
                    self.timeline.next_match(1)
        else:
            t = parse_time(text)
            if t is None:
                self.notify(f"not a time: {text!r} (try 12.5ms, 300us, 2s)", severity="warning")
            else:
                self.timeline.go_to(t)

    # --- status and details -----------------------------------------------------------------
    def on_timeline_view_changed(self, _: Timeline.ViewChanged) -> None:
        self.update_status()

    def on_timeline_selection_changed(self, _: Timeline.SelectionChanged) -> None:
        self.update_details()

    def update_status(self) -> None:
        tl = self.timeline
        if tl is None:
            return
        ix = tl.ix
        step = max(tl.span / 1000, 1)  # as many decimals as the window needs: deep zoom keeps them
        parts = [f"{fmt_tick(int(tl.t0), step)} – {fmt_tick(int(tl.t1), step)} ({fmt.time_ps(tl.span)})",
                 f"{ix.num_events:,} events"]
        if tl.mark is not None:
            parts.append(f"mark {fmt.time_ps(tl.mark.end - tl.mark.start)} ({tl.mark_end} moves: E . < >)")
        elif len(tl.timing) == 1:
            parts.append("range: 1 mark (z again closes it)")
        if len(tl.flow_partners):
            parts.append(f"{len(tl.flow_partners):,} flow partner(s) (y)")
        counter = tl.focused_counter()
        if counter is not None:
            name, t, value, unit = counter
            shown = ("-" if value is None else fmt.bytes_binary(value) if unit == "bytes"
                     else f"{int(value):,}" if float(value).is_integer() else f"{value:,.6g}")
            parts.append(f"{name} = {shown} at {fmt.time_ps(t)}")
        if tl.mode == "timing":
            cur = tl.time_cursor
            parts.append(f"cursor {fmt.time_ps(cur) if cur is not None else '-'}"
                         f" · marks {len(tl.timing)}/2 (space)")
        if tl.search_text:
            pos = f"{tl.match_pos + 1}/" if tl.match_pos >= 0 else ""
            parts.append(f"/{tl.search_text}: {pos}{len(tl.matches):,}")
        if self.lod_note:
            parts.append(self.lod_note)
        status = self.query("#status")
        if status:
            status.first(Static).update(Text("  ·  ".join(parts), no_wrap=True, overflow="ellipsis"))

    def update_details(self) -> None:
        tl = self.timeline
        details = self.query("#details")
        if tl is None or not details:
            return
        if len(tl.selection) == 1 and not tl.ix.details_ready(int(tl.selection[0])):
            # An index read from the cache (or a giant host's, piece by piece) has no frame yet: the
            # event's stats come from one, read off the UI thread.
            details.first(Static).update(Text("reading the event's details…", style="dim"))
            self.load_details_frame(int(tl.selection[0]))
            return
        details.first(Static).update(self.details_renderable())
        for box in self.query("#details-box"):
            box.scroll_home(animate=False)  # a new selection reads from its top

    def details_renderable(self) -> RenderableType:
        tl = self.timeline
        if tl is None:
            return Text(HINT, style="dim")
        ix = tl.ix
        sel = tl.selection
        if not len(sel):
            if tl.mark is not None:
                return self.range_summary(tl, tl.mark.start, tl.mark.end)
            return Text(HINT, style="dim")  # one line: the note on the capture's edges is in `?`
        if len(sel) > 1:
            return self.selection_summary(ix, sel)
        i = int(tl.current if len(sel) == 1 and tl.current == sel[0] else sel[0])
        track = ix.tracks[int(ix.row_track[int(ix.event_row[i])])]
        sec = ix.sections[track.section]
        s, e = int(ix.start[i]), int(ix.end[i])
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold", no_wrap=True)
        t.add_column(overflow="fold")
        t.add_row("Name", ix.event_name(i))
        t.add_row("Where", f"{sec.name} › {track.name} (depth {int(ix.row_depth[int(ix.event_row[i])])})")
        t.add_row("Start", fmt.time_ps(s, 6) + " from the profile start")
        t.add_row("Duration", fmt.time_ps(e - s, 6) if e > s else "instant")
        own, share = self_share(ix, i)
        if own != e - s:  # only events with children: a leaf's self time is its duration
            t.add_row("Self time", f"{fmt.time_ps(own, 6) if own else '0'} ({fmt.fraction_percent(share, 1)} of its duration)")
        long_name = ix.metadata_name(i)
        if len(long_name) > len(ix.event_name(i)):  # e.g. an XLA op's full HLO text
            t.add_row("Full name", long_name)
        if int(ix.kind[i]) != 0:
            t.add_row("Derived", "synthesized by XProf's rules (from the op / region it covers)")
        wait = self.collective_wait(ix, i)
        if wait is not None:  # an all-reduce: how long this core waited for the slowest one
            t.add_row("Waited", wait.text(lambda ps: fmt.time_ps(ps, 3)))
        flows = self.flow_rows(ix, i)
        if flows is not None:
            t.add_row("Flows", flows)
        for k, v in list(ix.stats(i).items())[:MAX_STATS]:
            if isinstance(v, bytes):
                v = f"<{len(v):,} bytes>"
            t.add_row(k, str(v))
        return t

    @staticmethod
    def collective_wait(ix: TraceIndex, i: int) -> CollectiveWait | None:
        at = ix.detail_row(i)
        return wait_for_slowest(*at) if at is not None else None

    @staticmethod
    def flow_rows(ix: TraceIndex, i: int) -> Table | None:
        """The event's flow partners: direction, name, where, how long after / before."""
        partners, rows, outgoing = ix.flows.partners(i)
        if not len(partners):
            return None
        t = Table.grid(padding=(0, 1))
        for _ in range(4):
            t.add_column(no_wrap=True, overflow="ellipsis")
        for p, r, out in list(zip(partners.tolist(), rows.tolist(), outgoing.tolist()))[:MAX_FLOWS]:
            track = ix.tracks[int(ix.row_track[int(ix.event_row[p])])]
            where = f"{ix.sections[track.section].name} › {track.name}"
            dt = int(ix.start[p]) - int(ix.start[i])
            t.add_row("→ to" if out else "← from", ix.event_name(p), where,
                      f"{'+' if dt >= 0 else '-'}{fmt.time_ps(abs(dt))} · {FLOW_KINDS[int(ix.flows.kind[r])]}")
        if len(partners) > MAX_FLOWS:
            t.add_row("", Text(f"… {len(partners) - MAX_FLOWS:,} more (y walks them all)", style="dim"), "", "")
        return t

    @staticmethod
    def range_summary(tl: Timeline, a: int, b: int) -> Group:
        """The marked range: its length, then per name (XProf's selection table) what happens in it."""
        folded = bool(tl.collapsed)  # like XProf's selection, only the tracks shown count
        rows = np.array([v for kind, v in tl._lines if kind == "row"], np.int64) if folded else None
        st = range_stats(tl.ix, a, b, rows)
        head = Table.grid(padding=(0, 2))
        head.add_column(style="bold")
        head.add_column()
        note = " (folded processes left out)" if folded else ""
        head.add_row("Range", f"{fmt.time_ps(st.start_ps)} – {fmt.time_ps(st.end_ps)} ({fmt.time_ps(st.span_ps)}), "
                              f"{st.count:,} events{note}, {len(st.per_name):,} name(s)   [dim](Z or Esc clears)[/dim]")
        per_name = Table(box=None, padding=(0, 2, 0, 0), show_edge=False, header_style="bold")
        per_name.add_column("Name", overflow="ellipsis", no_wrap=True, max_width=50)
        for col in ("Count", "Total", "Average", "Min", "Max", "% of range"):
            per_name.add_column(col, justify="right", no_wrap=True)
        for n in st.per_name[:MAX_RANGE_NAMES]:
            per_name.add_row(n.name, f"{n.count:,}", fmt.time_ps(n.total_ps), fmt.time_ps(n.average_ps),
                             fmt.time_ps(n.min_ps), fmt.time_ps(n.max_ps), fmt.fraction_percent(n.share, 1))
        if len(st.per_name) > MAX_RANGE_NAMES:
            per_name.add_row(Text(f"… {len(st.per_name) - MAX_RANGE_NAMES:,} more names", style="dim"), *[""] * 6)
        return Group(head, Text(""), per_name)

    @staticmethod
    def selection_summary(ix: TraceIndex, sel: np.ndarray) -> Group:
        """Several events: totals, then per name (as XProf's selection table) the biggest first."""
        st = selection_stats(ix, sel)
        head = Table.grid(padding=(0, 2))
        head.add_column(style="bold")
        head.add_column()
        head.add_row("Selected", f"{st.count:,} events, {len(st.per_name):,} name(s)")
        head.add_row("Total duration", f"{fmt.time_ps(st.total_ps)}  (average {fmt.time_ps(st.average_ps)})")
        head.add_row("Span", f"{fmt.time_ps(st.start_ps)} – {fmt.time_ps(st.end_ps)} ({fmt.time_ps(st.span_ps)})")
        per_name = Table(box=None, padding=(0, 2, 0, 0), show_edge=False, header_style="bold")
        per_name.add_column("Name", overflow="ellipsis", no_wrap=True, max_width=60)
        for col in ("Count", "Total", "Average"):
            per_name.add_column(col, justify="right", no_wrap=True)
        for n in st.per_name[:MAX_NAMES]:
            per_name.add_row(n.name, f"{n.count:,}", fmt.time_ps(n.total_ps), fmt.time_ps(n.average_ps))
        if len(st.per_name) > MAX_NAMES:
            per_name.add_row(Text(f"… {len(st.per_name) - MAX_NAMES:,} more names", style="dim"), "", "", "")
        return Group(head, Text(""), per_name)

"""Timeline: a Line-API widget drawing a TraceIndex as a zoomable, keyboard-driven timeline.

Lines: two axis lines (time labels relative to the profile start, ticks and the marked
interval), then one line per visible row: section headers ("▼ /device:TPU:0"), and per track
one line per nesting depth with the track name in a left gutter. Events are coloured blocks
(colour by name, as XProf does) labelled with their names where they fit; zero-duration
events are ticks. A frame is computed once per view change (numpy, O(rows x columns) via the
index's level-of-detail pyramid) and render_line only hands out the cached strips.

The widget holds the view state (time window, first row, selection, marks, search) and
exposes small methods the screen binds keys to; it never computes analyses.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.events import Click, MouseScrollDown, MouseScrollUp
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from tputui import format as fmt
from tputui.analysis.trace import Level, TraceIndex
from tputui.analysis.trace_selection import move_interval_end
from tputui.widgets.legible import ANSI_PALETTE, label_on, standing_out

AXIS_LINES = 2
SPARK = "▁▂▃▄▅▆▇█"  # a known value is never blank: the lowest is ▁
MAX_CONNECTORS = 16  # flow partners a connector is drawn to (all are highlighted)
PALETTE = ["#31688e", "#8e4b31", "#3f7f3f", "#7d3f7d", "#7d7a2f", "#2f7d7a", "#a06a2a", "#5a5aa8",
           "#a84f72", "#4f8f6e", "#6e6e6e", "#8f4a4a", "#3a5f9e", "#9e7d3a", "#5d8f2f", "#8f2f5d"]
MATCH_BG = "#e0c000"
FIT_INSTANT_PS = 10**6  # `f` on instant events shows 1 us around them
UNITS = (*fmt.TIME_UNITS_PS, ("ps", 1))


def parse_time(text: str) -> int | None:
    """ "12.5ms", "300 us", "1.2s", "42" (ms) -> picoseconds; None if unreadable."""
    t = text.strip().lower().replace(" ", "").replace("µs", "us")
    for unit, size in (("ms", 10**9), ("us", 10**6), ("ns", 10**3), ("ps", 1), ("s", 10**12)):  # noqa: B007 (size is read after the loop)
        if t.endswith(unit):
            num = t[: -len(unit)]
            break
    else:
        num, size = t, 10**9
    try:
        return int(round(float(num) * size))
    except ValueError:
        return None


def fmt_tick(t: int, step: float) -> str:
    """A tick label with as many decimals as the tick step needs: 215.02 ms, 215.04 ms, ..."""
    if t == 0:
        return "0"
    unit, size = next(((u, z) for u, z in UNITS if abs(t) >= z), UNITS[-1])
    decimals = max(0, math.ceil(-math.log10(step / size) - 1e-9)) if step < size else 0
    return f"{t / size:.{decimals}f} {unit}"


def nice_step(ps: float) -> int:
    """A 1/2/5 x 10^k ps step >= ps."""
    if ps <= 1:
        return 1
    k = 10 ** math.floor(math.log10(ps))
    for m in (1, 2, 5, 10):
        if m * k >= ps:
            return int(m * k)
    return int(10 * k)


@dataclass
class Mark:
    start: int
    end: int


class Timeline(Widget, can_focus=True):
    """The trace timeline. Keys are bound by the screen; see TraceViewerScreen."""

    # Everything but the event blocks takes its colours from the theme (the blocks carry their own
    # background, so they read on dark and light themes alike).
    DEFAULT_CSS = """
    Timeline { height: 1fr; }
    Timeline > .timeline--axis { color: $text-muted; }
    Timeline > .timeline--axis-label { color: $foreground; }
    Timeline > .timeline--gutter { color: $text-muted; }
    Timeline > .timeline--gutter-focus { color: $foreground; text-style: bold reverse; }
    Timeline > .timeline--section { color: $foreground; background: $panel; text-style: bold; }
    Timeline > .timeline--section-focus { color: $foreground; background: $panel; text-style: bold reverse; }
    Timeline > .timeline--mark { color: $background; background: $accent; text-style: bold; }
    Timeline > .timeline--cursor { color: $warning; text-style: bold; }
    Timeline > .timeline--selected { color: $background; background: $foreground; text-style: bold; }
    Timeline > .timeline--flow { color: $background; background: $success; text-style: bold; }
    Timeline > .timeline--connector { color: $success; text-style: bold; }
    Timeline > .timeline--range { background: $boost; }
    Timeline > .timeline--counter { color: $accent; }
    """
    COMPONENT_CLASSES = {"timeline--axis", "timeline--axis-label", "timeline--gutter", "timeline--gutter-focus",
                         "timeline--section", "timeline--section-focus", "timeline--mark", "timeline--cursor",
                         "timeline--selected", "timeline--flow", "timeline--connector", "timeline--range",
                         "timeline--counter"}

    class SelectionChanged(Message):
        """The selected event(s) changed (the details pane listens)."""

    class ViewChanged(Message):
        """The visible window, mode or marks changed (the status line listens)."""

    def __init__(self, index: TraceIndex, *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self.ix = index
        span = index.t_max - index.t_min
        pad = max(span // 50, 1)
        self.t0 = float(max(index.t_min - pad, min(index.t_min, 0)))  # never before the profile start
        self.t1 = float(index.t_max + pad)
        self.top = 0  # first visible display line (below the axis)
        self.collapsed: set[int] = set()
        self.selection: np.ndarray = np.zeros(0, np.int64)  # event indices
        self.current = -1  # the event arrows move from
        self.focus_line = 0
        self.mark: Mark | None = None
        self.timing: list[tuple[int, int]] = []  # range marks set so far (time cursor or selection spans)
        self.range_done = False  # the mark came from two range marks (the details pane sums it)
        self.mark_end = "end"  # the end of the marked interval that `.` / `<` / `>` move (`o` switches)
        self.flow_partners: np.ndarray = np.zeros(0, np.int64)  # the current event's flow partners
        self.flow_origin = -1  # the event `y` / `Y` walk the partners of
        self.flow_pos = -1
        self._walk: np.ndarray = np.zeros(0, np.int64)
        self._walk_set: set[int] = set()
        self.time_cursor: int | None = None
        self.mode = "select"
        self.matches: np.ndarray = np.zeros(0, np.int64)
        self.match_pos = -1
        self.search_text = ""
        self.label_width = 24
        self._lines: list[tuple[str, int]] = []
        self._frame: list[Strip] | None = None
        self._frame_key: tuple[int, int] | None = None
        self._styles: dict = {}
        self.rebuild_lines()

    def set_index(self, index: TraceIndex) -> None:
        """Swap in a rebuilt index of the same events (the exact nesting), keeping the view."""
        old = self.ix
        sel = index.positions_of(old, self.selection) if len(self.selection) else self.selection
        cur = int(index.positions_of(old, np.array([self.current]))[0]) if self.current >= 0 else -1
        self.ix = index
        self.rebuild_lines()
        if self.search_text:
            self.matches = index.search(self.search_text)
            self.match_pos = -1
        self.selection, self.current = sel, cur
        self.flow_partners = (np.sort(index.flows.partners(cur)[0]) if len(sel) == 1 and cur >= 0
                              else np.zeros(0, np.int64))
        self.flow_origin, self._walk, self._walk_set = -1, np.zeros(0, np.int64), set()
        if cur >= 0:
            self.focus_line = max(self.line_of_row(int(index.event_row[cur])), 0)
            self.ensure_line_visible(self.focus_line)
        self.invalidate()
        self.post_message(self.SelectionChanged())
        self.post_message(self.ViewChanged())

    # --- layout ---------------------------------------------------------------------------
    @property
    def counters_of(self) -> dict[int, list[int]]:
        """Counter series per process (pid)."""
        c = self.ix.counters
        out: dict[int, list[int]] = {}
        for k, pid in enumerate(c.pid.tolist()):
            out.setdefault(int(pid), []).append(k)
        return out

    def rebuild_lines(self) -> None:
        lines: list[tuple[str, int]] = []
        for s, sec in enumerate(self.ix.sections):
            lines.append(("section", s))
            if s in self.collapsed:
                continue
            lines.extend(("counter", k) for k in self.counters_of.get(sec.pid, ()))
            for k in sec.tracks:
                t = self.ix.tracks[k]
                lines.extend(("row", t.first_row + d) for d in range(t.num_rows))
        self._lines = lines
        self.focus_line = min(self.focus_line, max(len(lines) - 1, 0))
        self.top = min(self.top, self.max_top)
        self.invalidate()

    @property
    def body_height(self) -> int:
        return max(self.size.height - AXIS_LINES, 1)

    @property
    def plot_width(self) -> int:
        return max(self.size.width - self.label_width - 1, 10)

    @property
    def max_top(self) -> int:
        """The last page is a full page: scrolling stops when the last line reaches the bottom."""
        return max(len(self._lines) - self.body_height, 0)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return container.height

    def invalidate(self) -> None:
        self._frame = None
        self.refresh()

    @property
    def ansi(self) -> bool:
        """A 16-colour terminal: blocks take the ANSI hues (truecolour ones collapse into greys)."""
        return self.app.console.color_system == "standard"

    @property
    def palette(self) -> list[str]:
        return ANSI_PALETTE if self.ansi else PALETTE

    def notify_style_update(self) -> None:
        """A new theme (or CSS): drop the cached styles and the frame drawn with them."""
        super().notify_style_update()
        self._styles = {}
        self._frame = None

    def line_of_row(self, row: int) -> int:
        for i, (kind, v) in enumerate(self._lines):
            if kind == "row" and v == row:
                return i
        return -1

    def section_of_line(self, line: int) -> int:
        kind, v = self._lines[line]
        if kind == "section":
            return v
        if kind == "counter":
            pid = int(self.ix.counters.pid[v])
            return next(k for k, sec in enumerate(self.ix.sections) if sec.pid == pid)
        return self.ix.tracks[int(self.ix.row_track[v])].section

    def ensure_line_visible(self, line: int) -> None:
        if line < 0:
            return
        h = self.body_height
        if line < self.top:
            self.top = line
        elif line >= self.top + h:
            self.top = line - h + 1
        self.top = max(0, min(self.top, self.max_top))

    # --- frame ----------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        frame = self.frame()
        return frame[y] if y < len(frame) else Strip.blank(self.size.width, self.style(("blank",)))

    def frame(self) -> list[Strip]:
        key = (self.size.width, self.size.height)
        if self._frame is None or self._frame_key != key:
            self._frame = self.compute_frame()
            self._frame_key = key
        return self._frame

    def edges(self) -> np.ndarray:
        return np.linspace(self.t0, self.t1, self.plot_width + 1).round().astype(np.int64)

    def compute_frame(self) -> list[Strip]:
        """Every line of the widget for the current view (the only costly step of a redraw)."""
        width, height = self.size.width, self.size.height
        if width <= 0 or height <= 0:
            return []
        self.label_width = max(12, min(28, width // 5))
        w = self.plot_width
        edges = self.edges()
        level = self.ix.level_for((self.t1 - self.t0) / w)
        out = self.axis_lines(edges)
        sel_blocks = self.selected_blocks(level)
        flow_blocks = self.blocks_of(level, self.flow_partners)
        matches = self.ix.block_matches(level) if len(self.matches) else None
        shade = self.range_columns()
        for y in range(height - AXIS_LINES):
            i = self.top + y
            if i >= len(self._lines):
                out.append(Strip.blank(width, self.style(("blank",))))
                continue
            kind, v = self._lines[i]
            if kind == "section":
                out.append(self.section_line(v, i, width))
            elif kind == "counter":
                out.append(self.counter_line(v, i, edges, shade))
            else:
                out.append(self.row_line(v, i, edges, level, sel_blocks, matches, flow_blocks, shade))
        return self.draw_connectors(out)

    def range_columns(self) -> tuple[int, int] | None:
        """Plot columns [a, b) the marked range covers, None when no mark is in view."""
        m = self.mark
        if m is None or m.end < self.t0 or m.start > self.t1:
            return None
        w = self.plot_width
        a = int(np.clip(math.floor((m.start - self.t0) / self.span * w), 0, w))
        b = int(np.clip(math.ceil((m.end - self.t0) / self.span * w), 0, w))
        return (a, max(b, a + 1))

    def column_of(self, t: float) -> int | None:
        col = int((t - self.t0) / self.span * self.plot_width)
        return col if 0 <= col < self.plot_width else None

    def blank_segments(self, x: int, n: int, shade: tuple[int, int] | None) -> list[Segment]:
        """n empty plot columns from column x, those inside the marked range shaded."""
        if shade is None or x + n <= shade[0] or x >= shade[1]:
            return [Segment(" " * n, self.style(("blank",)))]
        a, b = max(shade[0], x), min(shade[1], x + n)
        segs = [Segment(" " * (a - x), self.style(("blank",)))] if a > x else []
        segs.append(Segment(" " * (b - a), self.style(("range",))))
        if x + n > b:
            segs.append(Segment(" " * (x + n - b), self.style(("blank",))))
        return segs

    def counter_line(self, k: int, line: int, edges: np.ndarray, shade: tuple[int, int] | None) -> Strip:
        """A counter series as a sparkline: per column the largest value there, scaled to the
        series' own range over the whole profile."""
        c = self.ix.counters
        g = self.label_width
        focused = line == self.focus_line
        segs = [Segment(_fit(c.names[k], g).ljust(g), self.style(("gutter", focused))), Segment("│", self.style(("axis",)))]
        vals = c.columns(k, edges)
        allv = c.value[c.samples(k)]
        lo, hi = (float(allv.min()), float(allv.max())) if len(allv) else (0.0, 0.0)
        lo = min(lo, 0.0)  # bars from zero read as amounts
        known = ~np.isnan(vals)
        level = np.zeros(len(vals), np.int64)
        if hi > lo:
            level[known] = np.clip(((vals[known] - lo) / (hi - lo) * (len(SPARK) - 1)).round(), 0, len(SPARK) - 1)
        else:
            level[known] = len(SPARK) - 1 if hi > 0 else 0
        x = 0
        for run_known, n in _runs(known):
            if not run_known:
                segs.extend(self.blank_segments(x, n, shade))
            else:
                segs.append(Segment("".join(SPARK[v] for v in level[x:x + n].tolist()), self.style(("counter",))))
            x += n
        return Strip(segs)

    def draw_connectors(self, out: list[Strip]) -> list[Strip]:
        """A vertical connector from the current event's line to each flow partner's line, at
        the time the link lands (the consumer's start), with an arrowhead at the consumer."""
        if self.current < 0 or not len(self.flow_partners):
            return out
        ix, g = self.ix, self.label_width
        here = self.line_of_row(int(ix.event_row[self.current]))
        if here < 0:
            return out
        style = self.style(("connector",))
        first, last = self.top, self.top + len(out) - AXIS_LINES - 1
        lines_of = {r: self.line_of_row(r) for r in set(ix.event_row[self.flow_partners[:MAX_CONNECTORS]].tolist())}
        fl = ix.flows
        for p in self.flow_partners[:MAX_CONNECTORS].tolist():
            there = lines_of[int(ix.event_row[p])]
            if there < 0 or there == here:
                continue
            outgoing = len(fl.outgoing(self.current)) and bool(np.any(fl.dst[fl.outgoing(self.current)] == p))
            col = self.column_of(int(ix.start[p]) if outgoing else int(ix.start[self.current]))
            if col is None:
                continue
            step = 1 if there > here else -1
            head_line = there - step if outgoing else here + step  # next to the consumer
            for ln in range(here + step, there, step):
                if first <= ln <= last:
                    ch = ("▼" if step > 0 else "▲") if ln == head_line and outgoing else \
                        (("▲" if step > 0 else "▼") if ln == head_line else "│")
                    y = AXIS_LINES + ln - self.top
                    out[y] = _overlay(out[y], g + 1 + col, ch, style)
        return out

    def style(self, key) -> Style:
        st = self._styles.get(key)
        if st is None:
            kind = key[0]
            if kind == "block":
                _, color, selected, matched, *flow = key  # (kind, colour, selected, matched[, flowed])
                flowed = bool(flow and flow[0])
                if selected:  # the selection stands out whatever its colour (the theme's text colour)
                    st = self.get_component_rich_style("timeline--selected")
                elif flowed:  # linked to the selection by a flow arrow
                    st = self.get_component_rich_style("timeline--flow")
                else:
                    bg = MATCH_BG if matched else self.palette[color]
                    st = Style(bgcolor=bg, color=label_on(bg))  # labels >= 4.5:1 on every block colour
            elif kind == "tick":
                _, color, selected, matched, *flow = key
                flowed = bool(flow and flow[0])
                if flowed and not selected:
                    st = self.get_component_rich_style("timeline--flow")
                elif selected or matched:
                    st = self.get_component_rich_style("timeline--selected") if selected else \
                        Style(bgcolor=MATCH_BG, color="black", bold=True)
                else:
                    back = self.rich_style.bgcolor.get_truecolor() if self.rich_style.bgcolor else (0, 0, 0)
                    mark = self.palette[color] if self.ansi else standing_out(self.palette[color], (back[0], back[1], back[2]))
                    st = self.rich_style + Style(color=mark, bold=True)  # on the theme background, >= 3:1
            elif kind == "gutter":
                st = self.get_component_rich_style("timeline--gutter-focus" if key[1] else "timeline--gutter")
            elif kind == "section":
                st = self.get_component_rich_style("timeline--section-focus" if key[1] else "timeline--section")
            elif kind in ("axis", "mark", "cursor", "connector", "range", "counter"):
                st = self.get_component_rich_style(f"timeline--{kind}")
            elif kind == "axis_label":
                st = self.get_component_rich_style("timeline--axis-label")
            elif kind == "blank":
                st = self.rich_style
            else:
                st = Style()
            self._styles[key] = st
        return st

    def axis_lines(self, edges: np.ndarray) -> list[Strip]:
        w, g = self.plot_width, self.label_width
        span = self.t1 - self.t0
        step = nice_step(span / max(w / 14, 1))
        labels = [" "] * w
        ticks = ["─"] * w
        first = math.ceil(self.t0 / step)  # times are ps from the profile start
        t = first * step
        while t <= self.t1:
            col = int((t - self.t0) / span * w)
            if 0 <= col < w:
                ticks[col] = "┬"
                text = fmt_tick(t, step)
                if col + len(text) <= w and all(c == " " for c in labels[col:col + len(text) + 1]):
                    labels[col:col + len(text)] = list(text)
            t += step
        mark_seg = None
        m = self.mark
        if m is not None:
            a = int(np.clip((m.start - self.t0) / span * w, 0, w - 1))
            b = int(np.clip((m.end - self.t0) / span * w, 0, w - 1))
            if m.end >= self.t0 and m.start <= self.t1:
                text = f" {fmt.time_ps(m.end - m.start)} "
                inner = max(b - a + 1, 1)
                bar = list("├" + "─" * max(inner - 2, 0) + "┤") if inner >= 2 else ["│"]
                if len(text) <= inner - 2:
                    mid = a + (inner - len(text)) // 2 - a
                    bar[mid:mid + len(text)] = list(text)
                mark_seg = (a, "".join(bar[:inner]))
        head = f"{fmt.time_ps(span / w)}/col"[: g].ljust(g) + "│"
        label_strip = Strip([Segment(head, self.style(("axis",))), Segment("".join(labels), self.style(("axis_label",)))])
        tick_text = "".join(ticks)
        cursor = self.time_cursor
        segs = [Segment((self.mode_label()[: g]).ljust(g) + "┼", self.style(("axis",)))]
        if mark_seg is not None:
            a, mark_text = mark_seg
            segs += [Segment(tick_text[:a], self.style(("axis",))), Segment(mark_text, self.style(("mark",))),
                     Segment(tick_text[a + len(mark_text):], self.style(("axis",)))]
        else:
            segs.append(Segment(tick_text, self.style(("axis",))))
        tick_strip = Strip(segs)
        if cursor is not None and self.t0 <= cursor <= self.t1:
            col = g + 1 + int((cursor - self.t0) / span * w)
            tick_strip = _overlay(tick_strip, col, "▼", self.style(("cursor",)))
        return [label_strip.crop_extend(0, self.size.width, None), tick_strip.crop_extend(0, self.size.width, None)]

    def mode_label(self) -> str:
        return {"select": "1 select", "pan": "2 pan", "zoom": "3 zoom", "timing": "4 timing"}[self.mode]

    def section_line(self, s: int, line: int, width: int) -> Strip:
        sec = self.ix.sections[s]
        arrow = "▶" if s in self.collapsed else "▼"
        n = len(sec.tracks)
        text = f" {arrow} {sec.name}  ({n} track{'s' if n != 1 else ''})"
        return Strip([Segment(text[:width].ljust(width), self.style(("section", line == self.focus_line)))])

    def selected_blocks(self, level: Level) -> np.ndarray:
        """Block indices of `level` that contain a selected event (sorted)."""
        return self.blocks_of(level, self.selection)

    def blocks_of(self, level: Level, events: np.ndarray) -> np.ndarray:
        """Block indices of `level` that contain one of `events` (sorted event indices)."""
        sel = events
        if not len(sel):
            return np.zeros(0, np.int64)
        if level.gap == 0:
            return np.sort(sel)
        # Blocks cover contiguous event ranges [first_event, first_event + events).
        b = np.searchsorted(level.first_event, sel, "right") - 1  # sorted, as sel is
        return _dedupe_sorted(b)

    def row_line(self, row: int, line: int, edges: np.ndarray, level: Level, sel_blocks: np.ndarray,
                 matches: np.ndarray | None, flow_blocks: np.ndarray | None = None,
                 shade: tuple[int, int] | None = None) -> Strip:
        ix = self.ix
        g = self.label_width
        track = ix.tracks[int(ix.row_track[row])]
        depth = int(ix.row_depth[row])
        label = track.name if depth == 0 else ""
        focused = line == self.focus_line
        segs = [Segment(_fit(label, g).ljust(g), self.style(("gutter", focused))), Segment("│", self.style(("axis",)))]
        cols = ix.row_columns(row, edges, level)
        if not (cols >= 0).any():
            segs.extend(self.blank_segments(0, len(cols), shade))
            return Strip(segs)
        # Runs of equal block index.
        change = np.flatnonzero(np.diff(cols)) + 1
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change, [len(cols)]))
        blocks = cols[starts]
        reps = np.where(blocks >= 0, level.rep[np.maximum(blocks, 0)], -1)
        names = ix.name[np.maximum(reps, 0)]
        durs = ix.end[np.maximum(reps, 0)] - ix.start[np.maximum(reps, 0)]
        sel = np.isin(blocks, sel_blocks) if len(sel_blocks) else np.zeros(len(blocks), bool)
        mat = matches[np.maximum(blocks, 0)] & (blocks >= 0) if matches is not None else np.zeros(len(blocks), bool)
        flo = (np.isin(blocks, flow_blocks) if flow_blocks is not None and len(flow_blocks)
               else np.zeros(len(blocks), bool))
        for a, b, blk, nm, du, s, m, fl in zip(starts.tolist(), ends.tolist(), blocks.tolist(), names.tolist(),
                                               durs.tolist(), sel.tolist(), mat.tolist(), flo.tolist()):
            n = b - a
            if blk < 0:
                segs.extend(self.blank_segments(a, n, shade))
                continue
            color = int(ix.name_hash[nm]) % len(PALETTE)
            if du == 0 and n == 1:
                segs.append(Segment("╽", self.style(("tick", color, s, m, fl))))
                continue
            text = _fit(ix.names[nm], n) if n >= 3 else ""
            segs.append(Segment(text.ljust(n), self.style(("block", color, s, m, fl))))
        return Strip(segs)

    # --- navigation (the screen binds keys to these) -----------------------------------
    @property
    def span(self) -> float:
        return self.t1 - self.t0

    def zoom_anchor(self) -> float:
        """The time zoom keeps in place: the time cursor / selection if visible, else the centre."""
        for t in (self.time_cursor, self.selection_center()):
            if t is not None and self.t0 <= t <= self.t1:
                return float(t)
        return (self.t0 + self.t1) / 2

    def selection_center(self) -> float | None:
        if not len(self.selection):
            return None
        a, b = self.selection_span()
        return (a + b) / 2

    def selection_span(self) -> tuple[int, int]:
        sel = self.selection
        return int(self.ix.start[sel].min()), int(self.ix.end[sel].max())

    def zoom(self, factor: float, at: float | None = None) -> None:
        at = self.zoom_anchor() if at is None else at
        w = self.plot_width
        new_span = max(self.span * factor, w * 10.0)  # at least 10 ps per column
        frac = (at - self.t0) / self.span if self.span else 0.5
        self.t0 = at - frac * new_span
        self.t1 = self.t0 + new_span
        self.view_changed()

    def pan(self, fraction: float) -> None:
        d = self.span * fraction
        self.t0 += d
        self.t1 += d
        self.view_changed()

    def set_window(self, t0: float, t1: float) -> None:
        if t1 - t0 < self.plot_width * 10:
            c = (t0 + t1) / 2
            t0, t1 = c - self.plot_width * 5, c + self.plot_width * 5
        self.t0, self.t1 = float(t0), float(t1)
        self.view_changed()

    def go_to(self, t_from_start: int) -> None:
        t = t_from_start
        self.time_cursor = t
        half = self.span / 2
        self.set_window(t - half, t + half)

    def scroll_lines(self, d: int) -> None:
        self.top = max(0, min(self.top + d, self.max_top))
        self.view_changed()

    def view_changed(self) -> None:
        self.invalidate()
        self.post_message(self.ViewChanged())

    def select(self, events, current: int | None = None, reveal: bool = True) -> None:
        ev = _dedupe_sorted(np.sort(np.asarray(events, dtype=np.int64)))
        self.selection = ev
        self.current = int(current if current is not None else (ev[0] if len(ev) else -1))
        self.flow_partners = (np.sort(self.ix.flows.partners(self.current)[0]) if len(ev) == 1 and self.current >= 0
                              else np.zeros(0, np.int64))
        if self.current >= 0:
            line = self.line_of_row(int(self.ix.event_row[self.current]))
            if line < 0:  # in a collapsed section: open it
                s = self.ix.tracks[int(self.ix.row_track[int(self.ix.event_row[self.current])])].section
                self.collapsed.discard(s)
                self.rebuild_lines()
                line = self.line_of_row(int(self.ix.event_row[self.current]))
            self.focus_line = line
            if reveal:
                self.ensure_line_visible(line)
                self.reveal_event(self.current)
        self.invalidate()
        self.post_message(self.SelectionChanged())
        self.post_message(self.ViewChanged())

    def reveal_event(self, i: int) -> None:
        """Pan (never zoom) so event i is in view."""
        s, e = int(self.ix.start[i]), int(self.ix.end[i])
        if e < self.t0 or s > self.t1:
            c = (s + e) / 2
            half = self.span / 2
            self.t0, self.t1 = c - half, c + half

    def step_event(self, step: int) -> None:
        """Left/right: the previous/next event on the current track row."""
        if self.current < 0:
            self.select_at_line(self.focus_line)
            return
        j = self.ix.neighbour(self.current, step)
        self.select([j])

    def step_line(self, step: int) -> None:
        """Up/down: the next display line; on a track row select the event at the same time."""
        if not self._lines:
            return
        self.focus_line = max(0, min(self.focus_line + step, len(self._lines) - 1))
        self.ensure_line_visible(self.focus_line)
        kind, _ = self._lines[self.focus_line]
        if kind == "row":
            self.select_at_line(self.focus_line, keep_line=True)
        else:
            self.invalidate()
            self.post_message(self.ViewChanged())

    def select_at_line(self, line: int, t: float | None = None, keep_line: bool = False) -> None:
        if not (0 <= line < len(self._lines)):
            return
        kind, row = self._lines[line]
        if kind != "row":
            self.focus_line = line
            self.invalidate()
            return
        if t is None:
            center = self.selection_center()
            t = center if center is not None else (self.t0 + self.t1) / 2
        i = self.ix.event_at(row, int(t))
        if i < 0:
            self.focus_line = line
            self.invalidate()
            self.post_message(self.ViewChanged())
            return
        self.select([i])
        if keep_line:
            self.focus_line = line

    def toggle_section(self) -> None:
        if not self._lines:
            return
        s = self.section_of_line(self.focus_line)
        if s in self.collapsed:
            self.collapsed.discard(s)
        else:
            self.collapsed.add(s)
        self.rebuild_lines()
        self.focus_line = next(i for i, (k, v) in enumerate(self._lines) if k == "section" and v == s)
        self.ensure_line_visible(self.focus_line)
        self.post_message(self.ViewChanged())

    def zoom_to_selection(self) -> None:
        if not len(self.selection):
            return
        a, b = self.selection_span()
        if b == a:  # instants: show them among their neighbours, not alone in a 1 ns window
            self.set_window(a - FIT_INSTANT_PS / 2, a + FIT_INSTANT_PS / 2)
            return
        pad = max((b - a) * 0.05, 1000)
        self.set_window(a - pad, b + pad)

    def mark_selection(self) -> None:
        if len(self.selection):
            a, b = self.selection_span()
            self.mark, self.mark_end = Mark(a, b), "end"  # a new mark: its end moves first
            self.view_changed()

    def set_search(self, text: str) -> int:
        self.search_text = text
        self.matches = self.ix.search(text) if text else np.zeros(0, np.int64)
        self.match_pos = -1
        self.invalidate()
        self.post_message(self.ViewChanged())
        return len(self.matches)

    def next_match(self, step: int) -> None:
        m = self.matches
        if not len(m):
            return
        if self.match_pos < 0:
            # From the current time: the first match at/after it (or before it, going back).
            center = self.selection_center()
            t = center if center is not None else self.t0
            starts = self.ix.start[m]
            pos = int(np.searchsorted(starts, t, "left" if step > 0 else "right"))
            self.match_pos = pos % len(m) if step > 0 else (pos - 1) % len(m)
        else:
            self.match_pos = (self.match_pos + step) % len(m)
        self.select([int(m[self.match_pos])])

    def select_all_matches(self) -> None:
        if len(self.matches):
            self.select(self.matches, current=int(self.matches[0]))

    def timing_move(self, cols: int) -> None:
        t = self.time_cursor if self.time_cursor is not None else (self.t0 + self.t1) / 2
        t += cols * self.span / self.plot_width
        self.time_cursor = int(t)
        if not (self.t0 <= t <= self.t1):
            self.reveal_time(t)
        self.view_changed()

    def reveal_time(self, t: float) -> None:
        half = self.span / 2
        self.t0, self.t1 = t - half, t + half

    def timing_mark(self) -> None:
        """Timing mode: set a mark at the time cursor; two marks make the measured interval."""
        t = self.time_cursor if self.time_cursor is not None else int((self.t0 + self.t1) / 2)
        self.add_range_mark(int(t), int(t))

    def range_mark(self) -> None:
        """A range mark at the cursor: the time cursor in timing mode (or with nothing
        selected), else the selected events' span; the second mark closes the range from the
        first mark's start to the second's end (whichever order they come in)."""
        if self.mode != "timing" and len(self.selection):
            a, b = self.selection_span()
            self.add_range_mark(a, b)
        else:
            self.timing_mark()

    def add_range_mark(self, a: int, b: int) -> None:
        self.timing = [] if len(self.timing) >= 2 else self.timing
        self.timing.append((a, b))
        if len(self.timing) == 2:
            self.mark = Mark(min(s for s, _ in self.timing), max(e for _, e in self.timing))
            self.mark_end = "end"
            self.range_done = True
            if len(self.selection):
                self.select([], reveal=False)  # the details pane sums the range now
        self.view_changed()

    def clear_range(self) -> None:
        self.timing, self.mark, self.range_done = [], None, False
        self.mark_end = "end"
        self.view_changed()

    # --- moving one end of the marked interval ------------------------------------------------
    def switch_mark_end(self) -> str | None:
        """Switch which end of the marked interval moves; None when nothing is marked."""
        if self.mark is None:
            return None
        self.mark_end = "start" if self.mark_end == "end" else "end"
        self.view_changed()
        return self.mark_end

    def mark_end_target(self) -> int | None:
        """Where `.` moves the picked end: the time cursor in timing mode (or with nothing
        selected), else the selection's matching edge (its start for the start, its end for the end)."""
        if self.mode != "timing" and len(self.selection):
            a, b = self.selection_span()
            return a if self.mark_end == "start" else b
        return self.time_cursor

    def move_mark_end(self, to: int) -> bool:
        """Move the picked end of the marked interval to time `to` (ps); False without a mark."""
        if self.mark is None:
            return False
        start, end, self.mark_end = move_interval_end(self.mark.start, self.mark.end, self.mark_end, to)
        self.mark = Mark(start, end)
        self.timing = [(start, start), (end, end)] if self.range_done else self.timing
        self.view_changed()
        return True

    def nudge_mark_end(self, cols: int) -> bool:
        """Move the picked end by `cols` plot columns (at least 1 ps each)."""
        if self.mark is None:
            return False
        at = self.mark.start if self.mark_end == "start" else self.mark.end
        return self.move_mark_end(at + cols * max(int(round(self.span / self.plot_width)), 1))

    def focused_counter(self) -> tuple[str, int, float | None, str] | None:
        """On a counter line: (series, time, its value there, unit) at the time cursor (else the
        view's middle); None elsewhere."""
        if not (0 <= self.focus_line < len(self._lines)) or self._lines[self.focus_line][0] != "counter":
            return None
        k = self._lines[self.focus_line][1]
        t = int(self.time_cursor if self.time_cursor is not None else (self.t0 + self.t1) / 2)
        c = self.ix.counters
        return c.names[k], t, c.value_at(k, t), c.unit(k)

    # --- flows ------------------------------------------------------------------------------
    def next_flow_partner(self, step: int) -> bool:
        """Select the next (step 1) / previous (-1) flow partner, in time order, of the event
        the walk started from: the current event, unless it is a partner being walked to."""
        walking = self.flow_origin >= 0 and self.current in self._walk_set
        if not walking:
            if self.current < 0:
                return False
            partners = self.ix.flows.partners(self.current)[0]
            if not len(partners):
                return False
            self._walk = partners[np.argsort(np.asarray(self.ix.start)[partners], kind="stable")]
            self._walk_set = set(self._walk.tolist())
            self.flow_origin, self.flow_pos = self.current, -1
        n = len(self._walk)
        self.flow_pos = (self.flow_pos + step) % n if self.flow_pos >= 0 else (0 if step > 0 else n - 1)
        self.select([int(self._walk[self.flow_pos])])
        return True

    # --- mouse ------------------------------------------------------------------------------
    def time_at_x(self, x: int) -> float | None:
        col = x - self.label_width - 1
        if not (0 <= col < self.plot_width):
            return None
        return self.t0 + (col + 0.5) * self.span / self.plot_width

    def on_click(self, event: Click) -> None:
        self.focus()
        y = event.y - AXIS_LINES
        if y < 0:
            return
        line = self.top + y
        if line >= len(self._lines):
            return
        self.focus_line = line
        kind, _ = self._lines[line]
        t = self.time_at_x(event.x)
        if kind == "section" or t is None:
            if kind == "section" and event.x < self.label_width:
                self.toggle_section()
            self.invalidate()
            return
        self.select_at_line(line, t, keep_line=True)

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        if event.ctrl or event.shift:
            self.pan(-0.1)
        else:
            self.zoom(0.8, self.time_at_x(event.x))
        event.stop()

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        if event.ctrl or event.shift:
            self.pan(0.1)
        else:
            self.zoom(1.25, self.time_at_x(event.x))
        event.stop()

    def on_resize(self) -> None:
        self.top = min(self.top, self.max_top)  # taller: no blank page under the last track
        self.invalidate()


def _dedupe_sorted(a: np.ndarray) -> np.ndarray:
    """np.unique of a sorted array, without its hashing pass (seconds on millions of matches)."""
    if len(a) < 2:
        return a
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def _runs(flags: np.ndarray) -> list[tuple[bool, int]]:
    """(value, length) runs of a bool array."""
    if not len(flags):
        return []
    cut = np.flatnonzero(flags[1:] != flags[:-1]) + 1
    starts = np.concatenate(([0], cut))
    lens = np.diff(np.concatenate((starts, [len(flags)])))
    return list(zip(flags[starts].tolist(), lens.tolist()))


def _fit(text: str, n: int) -> str:
    if len(text) <= n:
        return text
    return text[: max(n - 1, 0)] + "…" if n > 0 else ""


def _overlay(strip: Strip, col: int, char: str, style: Style) -> Strip:
    if col < 0 or col >= strip.cell_length:
        return strip
    left = strip.crop(0, col)
    right = strip.crop(col + 1, strip.cell_length)
    return Strip(list(left) + [Segment(char, style)] + list(right))

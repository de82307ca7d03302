"""Topology heatmap: hosts -> chips -> cores, each cell coloured by a value, with a cursor.

Two layouts. With chip coordinates (every cell has `xyz`), the chips sit at their (x, y) in one
grid per z-layer (one grid on 2D slices), a chip's cores side by side, an extra space (between
columns) or a blank line (between rows) where hosts meet; the layers are laid left to right and
wrapped. Without coordinates, hosts are blocks laid out left to right and wrapped to the widget's
width; inside a block, chips are groups of core cells. When the cores do not fit the widget,
cells fold to one per chip (the chips' mean), then to one per host (the per-host strip), so a
256-core pod stays readable in a small terminal. Hot spots (values at or above the 90th
percentile and 10% over the mean) are drawn as ▲ cells; highlighted cores (e.g. a channel's
link) are drawn as ◆. Arrow keys move the cursor and post
`Heatmap.CursorMoved` with the cores under it.

Links (`set_links`: (sending chip, receiving chip) pairs, e.g. a send/recv channel's) are drawn on
the grid between the cells, along the neighbouring chips from one end to the other, x first,
then y (the order a mesh routes in; the torus's wraparound links are not drawn): `→ ← ↔` in the
gaps between columns, `↓ ↑ ↕` on a connector line added between rows while there are links.
A link between z-layers is counted in the legend (the layers are drawn apart). Plain characters,
so they read under NO_COLOR too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

# Low -> high, readable on dark and light terminals (viridis-like steps).
RAMP = ["#440154", "#3b528b", "#21918c", "#5ec962", "#b5de2b", "#fde725"]
LEVELS = ("core", "chip", "host")


Coord = tuple[int, int, int]


@dataclass(frozen=True)
class Cell:
    core: int
    host: str
    chip: int
    value: float
    xyz: Coord | None = None  # the chip's coordinates, when the topology is known


@dataclass
class Unit:
    """One drawn cell: a core, or a chip / host folded to its mean."""
    label: str
    host: str
    chip: int
    cores: tuple[int, ...]
    value: float
    xyz: Coord | None = None


SHADES = ["░░", "▒▒", "▓▓", "██"]  # the ramp without colour (NO_COLOR): low to high


def ramp_shade(fraction: float) -> str:
    f = 0.0 if not np.isfinite(fraction) else min(1.0, max(0.0, fraction))
    return SHADES[min(len(SHADES) - 1, int(f * len(SHADES)))]


def ramp_color(fraction: float) -> str:
    f = 0.0 if not np.isfinite(fraction) else min(1.0, max(0.0, fraction))
    return RAMP[min(len(RAMP) - 1, int(f * len(RAMP)))]


def fold(cells: list[Cell], level: str) -> list[list[Unit]]:
    """Units per host block (host order kept) at `level` (core | chip | host)."""
    hosts: dict[str, list[Cell]] = {}
    for c in cells:
        hosts.setdefault(c.host, []).append(c)
    blocks = []
    for host, cs in hosts.items():
        if level == "host":
            blocks.append([Unit(host, host, -1, tuple(c.core for c in cs), float(np.mean([c.value for c in cs])))])
        elif level == "chip":
            chips: dict[int, list[Cell]] = {}
            for c in cs:
                chips.setdefault(c.chip, []).append(c)
            blocks.append([Unit(f"chip {k}", host, k, tuple(c.core for c in v), float(np.mean([c.value for c in v])),
                                v[0].xyz) for k, v in chips.items()])
        else:
            blocks.append([Unit(f"core {c.core}", host, c.chip, (c.core,), c.value, c.xyz) for c in cs])
    return blocks


def _xyz(c: Cell) -> tuple[int, int, int]:
    if c.xyz is None:  # has_grid: every cell has its coordinates
        raise ValueError(f"core {c.core} has no chip coordinates for the grid layout")
    return c.xyz


def grid_layers(cells: list[Cell], level: str) -> dict[int, dict[tuple[int, int], list[Unit]]]:
    """z -> (x, y) -> the chip's units at `level` (its cores, or one unit: the chip's mean)."""
    chips: dict[int, list[Cell]] = {}
    for c in cells:
        chips.setdefault(c.chip, []).append(c)
    layers: dict[int, dict[tuple[int, int], list[Unit]]] = {}
    for chip, cs in sorted(chips.items(), key=lambda kv: _xyz(kv[1][0])[::-1]):
        x, y, z = _xyz(cs[0])
        if level == "chip":
            units = [Unit(f"chip {chip}", cs[0].host, chip, tuple(c.core for c in cs),
                          float(np.mean([c.value for c in cs])), cs[0].xyz)]
        else:
            units = [Unit(f"core {c.core}", c.host, chip, (c.core,), c.value, c.xyz) for c in cs]
        layers.setdefault(z, {})[(x, y)] = units
    return layers


class Heatmap(Widget, can_focus=True):
    DEFAULT_CSS = "Heatmap { height: auto; min-height: 1; max-height: 24; }"
    BINDINGS = [Binding("left", "move(-1)", "Prev cell", show=False), Binding("right", "move(1)", "Next cell", show=False),
                Binding("up", "row(-1)", "Up", show=False), Binding("down", "row(1)", "Down", show=False),
                Binding("home", "first", show=False), Binding("end", "last", show=False)]
    cursor: reactive[int] = reactive(0)

    class CursorMoved(Message):
        def __init__(self, heatmap: Heatmap, unit: Unit | None) -> None:
            super().__init__()
            self.heatmap, self.unit = heatmap, unit

    def __init__(self, cells: list[Cell] | None = None, *, max_lines: int | None = None,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.cells: list[Cell] = list(cells or [])
        self.highlight: set[int] = set()
        self.links: list[tuple[int, int]] = []  # (from chip, to chip), drawn on the grid
        self._edges: tuple[dict, dict, int] | None = None  # link_edges(), until links or cells change
        self.max_lines = max_lines
        self.host_dims: Coord = (1, 1, 1)
        self.layout_kind = "strip"  # "grid": chips at their coordinates; "strip": host blocks
        self.level = "core"
        self._units: list[Unit] = []
        self._blocks: list[list[Unit]] = []
        self._layers: dict[int, dict[tuple[int, int], list[Unit]]] = {}
        self._rows: list[list[int]] = []  # unit indices per drawn line

    # --- data ----------------------------------------------------------------------------
    def set_cells(self, cells: list[Cell], host_dims: Coord | None = None) -> None:
        """The cells to draw; with `xyz` on every cell they are laid out at their coordinates,
        `host_dims` (chips per host along x, y, z) marks the host boundaries."""
        keep = self.current.cores[0] if self.current else None
        self.cells = list(cells)
        self._edges = None
        self.host_dims = host_dims or (1, 1, 1)
        self._layout()
        if keep is not None:
            self.cursor = next((i for i, u in enumerate(self._units) if keep in u.cores), 0)
        self.refresh(layout=True)

    def set_highlight(self, cores) -> None:
        self.highlight = set(cores)
        self.refresh()

    def set_links(self, pairs) -> None:
        """Chip pairs to draw as links on the grid (empty: none); the grid grows a connector
        line between rows while there are links, so the layout is fitted again."""
        links = list(pairs)
        if links == self.links:
            return
        keep = self.current.cores[0] if self.current else None
        self.links = links
        self._edges = None
        self._layout()
        if keep is not None:
            self.cursor = next((i for i, u in enumerate(self._units) if keep in u.cores), 0)
        self.refresh(layout=True)

    def link_edges(self) -> tuple[dict, dict, int]:
        """The links as grid edges: ({(z, y, x): directions} between columns x and x+1,
        {(z, x, y): directions} between rows y and y+1, links crossing z-layers); a direction
        is +1 (towards larger x / y) or -1. Kept until the links or the cells change (a pod's
        every-chip-to-every-chip channel is thousands of links, and each frame reads them)."""
        if self._edges is None:
            self._edges = self._route()
        return self._edges

    def _route(self) -> tuple[dict, dict, int]:
        xyz = {c.chip: c.xyz for c in self.cells if c.xyz is not None}
        across: dict[tuple[int, int, int], set[int]] = {}
        down: dict[tuple[int, int, int], set[int]] = {}
        crossing = 0
        for a, b in self.links:
            if a not in xyz or b not in xyz or a == b:
                continue
            (x, y, z), (tx, ty, tz) = xyz[a], xyz[b]
            while x != tx:  # x first, on the sender's row and layer
                step = 1 if tx > x else -1
                across.setdefault((z, y, min(x, x + step)), set()).add(step)
                x += step
            while y != ty:
                step = 1 if ty > y else -1
                down.setdefault((z, x, min(y, y + step)), set()).add(step)
                y += step
            crossing += z != tz
        return across, down, crossing

    @property
    def current(self) -> Unit | None:
        return self._units[self.cursor] if 0 <= self.cursor < len(self._units) else None

    @property
    def units(self) -> list[Unit]:
        return self._units

    @property
    def has_grid(self) -> bool:
        return bool(self.cells) and all(c.xyz is not None for c in self.cells)

    # --- layout ----------------------------------------------------------------------------
    def _block_width(self, units: list[Unit], level: str, label_w: int) -> int:
        if level == "host":
            return 3
        chips = len({u.chip for u in units})
        return label_w + 1 + 2 * len(units) + (chips - 1 if level == "core" else 0) + 2

    def _strip_lines(self, blocks: list[list[Unit]], level: str, label_w: int, width: int) -> int:
        lines, x = 1, 0
        for b in blocks:
            w = self._block_width(b, level, label_w)
            if x and x + w > width:
                lines, x = lines + 1, 0
            x += w
        return lines

    def _layout(self) -> None:
        before = (self.layout_kind, self.level)
        self._fit()
        if (self.layout_kind, self.level) != before and self.is_attached:
            self.post_message(self.CursorMoved(self, self.current))  # the cells under the cursor changed

    def _fit(self) -> None:
        """The most detailed layout that fits the width and the line budget."""
        width = max(10, self.size.width or 80)
        # A third of the screen at most, so the charts and tables below stay visible; half while
        # links are drawn (their connector lines double the rows, and the grid is what they are for).
        height = self.screen.size.height if self.is_attached else 60
        budget = self.max_lines or max(3, min(30, height // 2) if self.links else min(22, height // 3))
        label_w = min(12, max((len(c.host) for c in self.cells), default=4))
        self._label_w = label_w
        if self.has_grid:
            for level in ("core", "chip"):
                layers = grid_layers(self.cells, level)
                self.layout_kind, self.level, self._layers = "grid", level, layers
                self._units = [u for z in sorted(layers) for _, units in sorted(layers[z].items(),
                               key=lambda kv: (kv[0][1], kv[0][0])) for u in units]
                if len(self._grid_lines(width)[0]) <= budget:
                    self.cursor = min(self.cursor, max(0, len(self._units) - 1))
                    return
        self.layout_kind = "strip"
        for level in LEVELS:
            blocks = fold(self.cells, level)
            if self._strip_lines(blocks, level, label_w, width) <= budget or level == "host":
                break
        self.level = level
        self._units = [u for b in blocks for u in b]
        self._blocks = blocks
        self.cursor = min(self.cursor, max(0, len(self._units) - 1))

    def on_resize(self) -> None:
        self._layout()
        self.refresh(layout=True)

    def get_content_height(self, container, viewport, width: int) -> int:
        self._layout()
        return max(1, len(self._render_lines(width)))

    # --- cursor ----------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        if self._units:
            self.cursor = max(0, min(len(self._units) - 1, self.cursor + delta))

    def action_row(self, delta: int) -> None:
        for r, row in enumerate(self._rows):
            if self.cursor in row:
                target = r + delta
                while 0 <= target < len(self._rows) and not self._rows[target]:
                    target += delta  # a grid's header line has no cells
                if 0 <= target < len(self._rows):
                    col = row.index(self.cursor)
                    nxt = self._rows[target]
                    self.cursor = nxt[min(col, len(nxt) - 1)]
                return

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = max(0, len(self._units) - 1)

    def watch_cursor(self) -> None:
        self.post_message(self.CursorMoved(self, self.current))
        self.refresh()

    # --- drawing ---------------------------------------------------------------------------
    def hot_threshold(self) -> float:
        vals = np.array([u.value for u in self._units], float)
        if len(vals) < 4 or not np.isfinite(vals).all() or vals.max() <= 0:
            return float("inf")
        return max(float(np.percentile(vals, 90)), float(vals.mean()) * 1.1)

    def _no_color(self) -> bool:
        try:
            return bool(self.app.no_color)
        except Exception:  # noqa: BLE001 - laid out before (or without) an app: colours are on
            return False

    def _painter(self):
        """unit index -> (glyph, style) for the current values, highlight and cursor."""
        vals = [u.value for u in self._units]
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 0.0)
        span = (hi - lo) or 1.0
        hot = self.hot_threshold()
        no_color = self._no_color()

        def paint(idx: int) -> tuple[str, str]:
            u = self._units[idx]
            color = ramp_color((u.value - lo) / span)
            block = ramp_shade((u.value - lo) / span) if no_color else "██"  # values without colour
            glyph = "▲▲" if u.value >= hot else ("◆◆" if self.highlight.intersection(u.cores) else block)
            style = f"{color} reverse" if idx == self.cursor and self.has_focus else color
            if idx == self.cursor:
                style += " underline"
            return glyph, style
        return paint

    def _grid_lines(self, width: int) -> tuple[list[Text], list[list[int]]]:
        """One block per z-layer (a header of x indices, then a line per y), packed left to right."""
        index = {id(u): i for i, u in enumerate(self._units)}
        paint = self._painter()
        coords = [c.xyz for c in self.cells if c.xyz is not None]
        nx, ny, nz = (max(p[a] for p in coords) + 1 for a in range(3))
        per_chip = max((len(units) for layer in self._layers.values() for units in layer.values()), default=1)
        chip_w = 2 * per_chip
        hx, hy, _hz = self.host_dims
        label_w = max(len(f"y{ny - 1}"), len(f"z{nz - 1}") if nz > 1 else 0)
        across, down, _ = self.link_edges() if self.links else ({}, {}, 0)

        def gap(x: int) -> int:  # columns between chip x and x + 1: one more where hosts meet
            return 1 + (x % hx == hx - 1 and x < nx - 1)

        blocks = []
        for z in sorted(self._layers):
            layer = self._layers[z]
            head = Text((f"z{z}" if nz > 1 else "").ljust(label_w) + " ", style="dim")
            for x in range(nx):
                head.append(str(x).ljust(chip_w) + " " * gap(x), style="dim")
            lines: list[tuple[Text, list[int]]] = [(head, [])]
            for y in range(ny):
                if y and self.links:  # the connector line: links between rows y - 1 and y
                    lines.append((self._connector(z, y - 1, nx, label_w, chip_w, gap, down), []))
                elif y and y % hy == 0:
                    lines.append((Text(""), []))  # a blank line between hosts along y
                t, row = Text(f"y{y}".rjust(label_w) + " ", style="dim"), []
                for x in range(nx):
                    units = layer.get((x, y), [])
                    for u in units:
                        glyph, style = paint(index[id(u)])
                        t.append(glyph, style=style)
                        row.append(index[id(u)])
                    t.append(" " * (chip_w - 2 * len(units)))
                    dirs = across.get((z, y, x))
                    if dirs and x < nx - 1:
                        t.append(_across(dirs, gap(x)), style="bold not dim")  # the row line is dim
                    else:
                        t.append(" " * gap(x))
                lines.append((t, row))
            blocks.append(lines)
        block_w = max(len(t) for b in blocks for t, _ in b) + 2
        per_band = max(1, (width + 2) // block_w)
        out: list[Text] = []
        rows: list[list[int]] = []
        for b0 in range(0, len(blocks), per_band):
            band = blocks[b0:b0 + per_band]
            for i in range(len(band[0])):
                t, row = Text(), []
                for j, b in enumerate(band):
                    piece, r = b[i]
                    t.append_text(piece)
                    if j < len(band) - 1:
                        t.append(" " * (block_w - len(piece)))
                    row += r
                out.append(t)
                rows.append(row)
        return out, rows

    def _connector(self, z: int, y: int, nx: int, label_w: int, chip_w: int, gap, down: dict) -> Text:
        """The line between grid rows y and y + 1: ↓ ↑ ↕ under each chip a link leaves by."""
        t = Text(" " * (label_w + 1))
        for x in range(nx):
            dirs = down.get((z, x, y))
            if dirs:
                mid = max(0, chip_w // 2 - 1)
                t.append(" " * mid)
                t.append(_arrow(dirs, "↓", "↑", "↕"), style="bold")
                t.append(" " * (chip_w - mid - 1))
            else:
                t.append(" " * chip_w)
            t.append(" " * gap(x))
        return t

    def _strip_lines_text(self, width: int) -> tuple[list[Text], list[list[int]]]:
        paint = self._painter()
        lines: list[Text] = []
        rows: list[list[int]] = []
        line, x = Text(), 0
        row: list[int] = []
        idx = 0
        for block in self._blocks:
            w = self._block_width(block, self.level, self._label_w)
            if x and x + w > width:
                lines.append(line)
                rows.append(row)
                line, row, x = Text(), [], 0
            if self.level != "host":
                line.append(block[0].host[-self._label_w:].rjust(self._label_w) + " ", style="dim")
            prev_chip = None
            for u in block:
                if self.level == "core" and prev_chip is not None and u.chip != prev_chip:
                    line.append(" ")
                prev_chip = u.chip
                glyph, style = paint(idx)
                line.append(glyph, style=style)
                row.append(idx)
                idx += 1
            line.append("  " if self.level != "host" else " ")
            x += w
        if row:
            lines.append(line)
            rows.append(row)
        return lines, rows

    def _render_lines(self, width: int) -> list[Text]:
        lines, self._rows = (self._grid_lines(width) if self.layout_kind == "grid" else self._strip_lines_text(width))
        return lines

    def render(self) -> Text:
        if not self.cells:
            return Text("(no cores)", style="dim")
        return Text("\n").join(self._render_lines(max(10, self.size.width)))

    def legend(self, unit: str = "ms") -> Text:
        vals = [u.value for u in self._units]
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 0.0)
        t = Text(f"{lo:.3g} {unit} ", style="dim")
        if self._no_color():
            t.append("".join(SHADES))
        else:
            for c in RAMP:
                t.append("██", style=c)
        t.append(f" {hi:.3g} {unit}", style="dim")
        t.append("   ▲ hot spot   ◆ linked", style="dim")
        if self.links and self.layout_kind == "grid":
            crossing = self.link_edges()[2]
            t.append("   → ↓ link (x, then y)", style="dim")
            if crossing:
                t.append(f", {crossing} across z-layers", style="dim")
        elif self.links:
            t.append("   (links drawn on the chip grid only)", style="dim")
        if self.layout_kind == "grid":
            t.append(f"   {self.level}s at chip (x, y)" + (" per z" if len(self._layers) > 1 else ""), style="dim")
            t.append(" (folded to fit)" if self.level != "core" else "", style="dim")
        else:
            t.append(f"   cells: {self.level}s" + (" (folded to fit)" if self.level != "core" else ""), style="dim")
            if self.has_grid:
                t.append(" · too big for the grid", style="dim")
        return t


def _arrow(dirs: set[int], forward: str, back: str, both: str) -> str:
    return both if len(dirs) > 1 else (forward if 1 in dirs else back)


def _across(dirs: set[int], width: int) -> str:
    """A link in a gap between columns `width` wide: → ← ↔, or ─→ ←─ ←→ in a wider gap."""
    if width < 2:
        return _arrow(dirs, "→", "←", "↔")
    return _arrow(dirs, "→".rjust(width, "─"), "←".ljust(width, "─"), "←→".center(width, "─"))

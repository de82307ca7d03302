"""What the terminal shows, cell runs with their final colours, and WCAG contrast ratios: the
looks tests measure readability from the rendered screen, not from the theme's variables."""
from __future__ import annotations

from dataclasses import dataclass

BORDER_CHARS = set("╭╮╰╯─│┌┐└┘━┃")


@dataclass
class Run:
    y: int
    x: int
    text: str
    fg: tuple[int, int, int]
    bg: tuple[int, int, int]

    @property
    def is_border(self) -> bool:
        return bool(self.text.strip()) and set(self.text.strip()) <= BORDER_CHARS


def rendered_runs(app) -> list[Run]:
    """Every run of text on the screen with its colours after the app's filters (dim, ANSI)."""
    from rich.color import Color
    from textual.color import Color as TColor

    screen = app.screen
    base = screen.styles.background
    default_bg = (base.r, base.g, base.b)
    out: list[Run] = []
    for y, strip in enumerate(screen._compositor.render_strips()):
        for f in app._filters:
            strip = strip.apply_filter(f, TColor(*default_bg))
        x = 0
        for seg in strip:
            text, style = seg.text, seg.style
            if style is not None and text:
                fg_c, bg_c = style.color, style.bgcolor
                if style.reverse:
                    fg_c, bg_c = bg_c, fg_c
                fg = fg_c.get_truecolor() if isinstance(fg_c, Color) else None
                bg = bg_c.get_truecolor() if isinstance(bg_c, Color) else None
                out.append(Run(y, x, text, tuple(fg) if fg else (255, 255, 255), tuple(bg) if bg else default_bg))
            x += seg.cell_length
    return out


def luminance(rgb: tuple[int, int, int]) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    r, g, b = rgb
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)

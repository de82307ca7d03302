"""Colours that stay readable: WCAG contrast, the label colour for a coloured block, a mark colour
nudged until it stands out from the background, and the 16 ANSI colours for terminals that
have no more (where truecolour categories collapse into one or two greys)."""
from __future__ import annotations

from rich.color import Color

TEXT_CONTRAST = 4.5  # WCAG AA for text
# Text coloured ahead of drawing aims higher: the background it is measured on (a widget's CSS) can
# differ a little from the one drawn (a focus tint shifts a dark theme's surface by ~10 levels).
TEXT_CONTRAST_AIM = 6.0
GRAPHIC_CONTRAST = 3.0  # borders, marks

# Twelve distinct hues a 16-colour terminal draws (black, white and the greys are left for text
# and background), four repeated: as many entries as the truecolour palette.
ANSI_PALETTE = ["blue", "red", "green", "magenta", "yellow", "cyan", "bright_blue", "bright_red",
                "bright_green", "bright_magenta", "bright_yellow", "bright_cyan",
                "blue", "red", "green", "magenta"]
# What those names look like in Textual's default ANSI theme (labels are chosen against these).
_ANSI_RGB = {"blue": (0, 55, 218), "red": (197, 15, 31), "green": (19, 161, 14), "magenta": (136, 23, 152),
             "yellow": (193, 156, 0), "cyan": (58, 150, 221), "bright_blue": (59, 120, 255),
             "bright_red": (231, 72, 86), "bright_green": (22, 198, 12), "bright_magenta": (180, 0, 158),
             "bright_yellow": (249, 241, 165), "bright_cyan": (97, 214, 214)}


def rgb(color: str) -> tuple[int, int, int]:
    if color in _ANSI_RGB:
        return _ANSI_RGB[color]
    t = Color.parse(color).get_truecolor()
    return (t.red, t.green, t.blue)


def luminance(c: tuple[int, int, int]) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2])


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def label_on(background: str) -> str:
    """Black or white text, whichever reads better on `background` (truecolour, never ANSI
    white: terminals draw that grey)."""
    bg = rgb(background)
    return "#000000" if contrast((0, 0, 0), bg) >= contrast((255, 255, 255), bg) else "#ffffff"


def text_background(widget) -> tuple[int, int, int]:
    """The colour a widget's text is drawn on (its own background over its ancestors')."""
    c = widget.background_colors[1]
    return (c.r, c.g, c.b)


def theme_colour(app, name: str) -> tuple[int, int, int]:
    """A theme variable's colour (`surface`: what Tree and DataTable are drawn on), known before
    any widget is mounted: labels built with it need no second pass once the widget is styled."""
    from textual.color import Color as TColor

    c = TColor.parse(app.theme_variables[name])
    return (c.r, c.g, c.b)


def readable_style(style: str, background: tuple[int, int, int]) -> str:
    """A rich style ("bold magenta", "green") with its colour nudged to text contrast (4.5:1)
    on `background`: the same hue, darker on a light theme, lighter on a dark one."""
    words = style.split()
    colour = next((w for w in words if w not in ("bold", "italic", "underline")), None)
    if colour is None:
        return style
    return " ".join(standing_out(w, background, TEXT_CONTRAST_AIM) if w == colour else w for w in words)


def standing_out(color: str, background: tuple[int, int, int], target: float = GRAPHIC_CONTRAST) -> str:
    """`color`, blended towards white (dark background) or black (light) until it reaches
    `target` contrast with `background`."""
    c = rgb(color)
    toward = (255, 255, 255) if luminance(background) < 0.18 else (0, 0, 0)
    for step in range(21):
        f = step / 20
        mixed = tuple(round(a + (b - a) * f) for a, b in zip(c, toward))
        if contrast(mixed, background) >= target:  # type: ignore[arg-type]
            return "#{:02x}{:02x}{:02x}".format(*mixed)
    return "#{:02x}{:02x}{:02x}".format(*toward)

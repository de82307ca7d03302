"""Label / value pairs in column groups that wrap to the terminal's width (summary panes)."""
from __future__ import annotations

from rich.table import Table


def summary_grid(groups: list[list[tuple[str, str]]], width: int) -> Table:
    """Label / value pairs laid out column group by column group, as many groups side by side as
    fit `width` (the rest wrap below), so values are never cut on a narrow terminal."""
    need = [max(len(k) for k, _ in g) + max(len(v) for _, v in g) + 4 for g in groups]
    per_band = len(groups)
    while per_band > 1 and sum(max(need[i::per_band]) for i in range(per_band)) > width:
        per_band -= 1
    t = Table.grid(padding=(0, 2))
    for _ in range(per_band):
        t.add_column(style="bold", no_wrap=True)
        t.add_column(no_wrap=True)
    for band in range(0, len(groups), per_band):
        chunk = groups[band:band + per_band]
        for i in range(max(len(g) for g in chunk)):
            t.add_row(*[cell for g in chunk for cell in (g[i] if i < len(g) else ("", ""))])
    return t

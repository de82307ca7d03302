"""The key map: one meaning per key across screens (no Textual here; the README and `?` show it).

App keys answer the same on every screen. Table keys work in every table. A screen's own keys
are not reused with another meaning elsewhere; the few shared letters below are deliberate,
and tests/test_keymap.py checks that nothing else is.
"""
from __future__ import annotations

APP = [
    ("t", "pick a tool"), ("r", "pick a run"), ("h", "pick a host"),
    ("R, F5", "reload: rescan the logdir for new runs, load this tool again"),
    ("Esc", "back to the previous screen (cursor, sort, filter kept)"),
    ("x", "CSV of the table shown, into the export folder (never the logdir)"),
    ("v", "show the selected op / row in the trace viewer"),
    ("Enter", "open what the cursor is on: in op tables its events in the trace viewer (as v); in trees "
              "and the trace viewer's sections fold / unfold; in the graph viewer the instruction's "
              "neighbourhood; in pickers pick; trace viewer timing mode: set a mark"),
    ("C", "capture a profile from a live server"),
    ("D", "compare this run with another run or logdir"), (":", "SQL prompt over this run"),
    ("Ctrl+P", "command palette: tools, runs, hosts, theme (kept between runs)"),
    ("?", "the keys of this screen"), ("q, Ctrl+C", "quit"),
]
TABLE = [
    ("↑ ↓ PgUp PgDn Home End", "move"), ("← → < >", "pick a column"),
    ("s", "sort by it (again: reverse); the op profile tree: the next sort"),
    ("→ ←", "trees: expand / collapse (again: first child / parent)"),
    ("/", "filter rows (Esc clears); the op profile tree too"), ("c", "choose the columns shown"),
]
SCREENS = [
    ("i", "IDLE on/off (framework op stats, op profile)"),
    ("b", "what rows are grouped / ordered by (op profile, memory viewer)"),
    ("e", "infeed / outfeed on/off (roofline)"), ("B", "DCN bandwidth (megascale)"), ("T", "TPU device of the host (megascale)"),
    ("u", "free memory on/off (memory profile)"), ("k", "category (pod viewer)"),
    ("[ ]", "previous / next step (pod viewer)"), ("I J O", "open input pipeline / the suggested tool / overview"),
    ("M", "memory space (memory viewer)"), ("G", "show the op in its HLO graph"),
    ("P", "show the op in the op profile (pod viewer: a channel's send / recv-done op)"),
    ("V", "the op's events in run A's trace viewer (diff; v / Enter: run B's)"),
    ("l", "text / neighbourhood graph (graph viewer)"), ("j", "jump to a fusion's / call's body (graph viewer)"),
    ("W", "next worker (live monitor)"),
    ("w a s d, f, g, m, n N, /, 1-4", "trace viewer: zoom / pan (as XProf), fit, go to, mark, matches, search, modes"),
    ("y Y", "trace viewer: next / previous flow partner of the selected event (host launch -> device op, ...)"),
    ("z Z", "trace viewer: range mark at the cursor (twice: the range, summed per name) / clear it"),
    ("E . < >", "trace viewer: pick the marked interval's start or end / move it to the cursor or the selected "
                "event's edge / nudge it a column"),
    ("H", "trace viewer: stack several hosts on one time axis (space toggles, Enter shows)"),
]
# Letters with two meanings on purpose, and why.
SHARED = {
    "s": "zoom out in the trace viewer (XProf's W A S D, which has no table); sort in tables",
    "m": "mark in the trace viewer (XProf's key); pick the memory id / HLO module (memory tools, graph viewer)",
    "slash": "search in the trace viewer, filter in tables: both find",
    "p": "peak in memory charts; pause in the live monitor",
}


def markdown() -> str:
    """The README's key table."""
    rows = [("**Everywhere**", "")] + APP + [("**Tables**", "")] + TABLE + [("**Screens**", "")] + SCREENS
    return "| key | does |\n|---|---|\n" + "\n".join(f"| {k} | {d} |" for k, d in rows) + "\n"

"""One meaning per key: every binding of every screen and widget, grouped by key, has one
action, except the letters tputui/keymap.py shares on purpose (with its reasons)."""
from __future__ import annotations

import collections
import importlib
import pathlib
import pkgutil
import re

from textual.binding import Binding

import tputui.screens
import tputui.widgets
from tputui import keymap

NAVIGATION = {"up", "down", "left", "right", "home", "end", "pageup", "pagedown", "enter", "escape", "tab",
              "shift+tab", "space", "ctrl+up", "ctrl+down", "1", "2", "3", "4", "plus", "minus", "equals_sign",
              "less_than_sign", "greater_than_sign", "asterisk"}
SAME_MEANING = {"toggle_grouping": "by", "toggle_order": "by",  # b: what rows are grouped / ordered by
                "focus_prompt": "sql"}  # ":" on the SQL screen: its prompt


def bindings() -> dict[str, set[tuple[str, str]]]:
    seen: dict[str, set[tuple[str, str]]] = collections.defaultdict(set)
    for pkg in (tputui.screens, tputui.widgets):
        for info in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for name, cls in vars(mod).items():
                if not (isinstance(cls, type) and cls.__module__ == mod.__name__ and "BINDINGS" in vars(cls)):
                    continue
                for b in cls.BINDINGS:
                    b = b if isinstance(b, Binding) else Binding(*b)
                    action = re.sub(r"\(.*\)", "", b.action).split(".")[-1]
                    if action == "dismiss":  # a modal's close keys (Esc, q, ?) close it: no clash
                        continue
                    for key in b.key.split(","):
                        if key not in NAVIGATION:
                            seen[key].add((SAME_MEANING.get(action, action), f"{info.name}.{name}"))
    return seen


def test_one_meaning_per_key():
    found = bindings()
    assert "x" in found and "c" in found and "i" in found  # the scan sees screens and widgets
    clashes = {k: sorted(v) for k, v in found.items() if len({a for a, _ in v}) > 1}
    assert set(clashes) == set(keymap.SHARED), clashes


def test_app_keys_are_not_taken_by_a_screen():
    from tputui.app import TputuiApp

    app_actions = {k: b.action.split(".")[-1] for b in TputuiApp.BINDINGS for k in b.key.split(",")}
    taken = {k: v for k, v in bindings().items()
             if k in app_actions and any(a != app_actions[k] for a, _ in v)}  # the same action is fine
    assert not taken, taken


def test_readme_has_the_key_map():
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert keymap.markdown() in readme

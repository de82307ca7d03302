"""Hints say what the keys do here: no key offered that cannot act, no hint naming another key."""
from __future__ import annotations

from conftest import make_app, settle
from textual.widgets import Tree

from tputui.screens.help import HelpScreen


def footer_actions(screen) -> dict[str, str]:
    """key -> description of the bindings the footer and `?` show as active."""
    return {k: a.binding.description for k, a in screen.active_bindings.items() if a.binding.description}


async def help_keys(pilot) -> dict[str, str]:
    await pilot.press("question_mark")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, HelpScreen)
    keys = dict(screen.lines)
    await pilot.press("escape")
    return keys


async def test_memory_profile_names_the_free_key_it_binds():
    app = make_app("tf_keras", "memory_profile")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        key = screen.key_for("toggle_free")
        assert key == "u" and f"({key}: show free)" in str(screen.chart.border_subtitle)
        keys = await help_keys(pilot)
        assert "working directory" not in keys["x"] and "export folder" in keys["x"]


async def test_trace_viewer_help_does_not_offer_csv_and_tables_do():
    app = make_app("tf_loop", "trace_viewer")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "x" not in await help_keys(pilot)
        app.open_tool("framework_op_stats")
        await settle(pilot)
        assert "x" in await help_keys(pilot)


async def test_trace_viewer_enter_says_set_mark_in_timing_mode():
    app = make_app("tf_loop", "trace_viewer")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert footer_actions(screen)["enter"] == "Fold / fit"
        await pilot.press("4")
        await pilot.pause()
        assert footer_actions(screen)["enter"] == "Set mark"
        cursor = screen.timeline.time_cursor
        await pilot.press("enter")
        await pilot.pause()
        assert screen.timeline.timing == [(cursor, cursor)]
        await pilot.press("1")
        await pilot.pause()
        assert footer_actions(screen)["enter"] == "Fold / fit"


async def test_pod_viewer_without_steps_offers_no_step_keys():
    app = make_app("tpu_v6e_inference", "pod_viewer")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.query("#no-steps")
        shown = footer_actions(app.screen)
        assert not {"left_square_bracket", "right_square_bracket", "k"} & set(shown)
    app = make_app("pod/pod_v4_32", "pod_viewer")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert {"left_square_bracket", "right_square_bracket", "k"} <= set(footer_actions(app.screen))


async def test_tree_arrows_expand_and_collapse():
    app = make_app("tpu_v6e_inference", "op_profile")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        tree = app.screen.query_one(Tree)
        tree.focus()
        await pilot.pause()
        node = next(n for n in tree.root.children if n.allow_expand)
        tree.move_cursor(node)
        await pilot.pause()
        if node.is_expanded:
            await pilot.press("left")
            assert not node.is_expanded
        await pilot.press("right")
        assert node.is_expanded
        await pilot.press("right")
        assert tree.cursor_node is node.children[0]
        await pilot.press("left")  # a leaf or a folded child: up to its parent
        if tree.cursor_node is not node:
            await pilot.press("left")
        assert tree.cursor_node is node
        await pilot.press("left")
        assert not node.is_expanded

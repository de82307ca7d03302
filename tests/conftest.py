"""Shared test setup: fixture paths, snapshot folder, isolated cache dir."""
from __future__ import annotations

import pathlib
import signal

import pytest
import pytest_textual_snapshot

ROOT = pathlib.Path(__file__).resolve().parents[1]
# A suite started under `nohup` ignores SIGHUP, and the commands the tests start would inherit
# that (tputui keeps running on a hang-up then, as `nohup tputui` should): the tests that hang up
# on a command need the default disposition in their children.
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

FIXTURES = ROOT / "tests" / "fixtures"
PROFILES = FIXTURES / "profiles"
SNAPSHOTS = ROOT / "snapshots"


class TopLevelSnapshots(pytest_textual_snapshot.SVGImageExtension):
    """Keep SVG snapshots in the top-level snapshots/<test module>/ folder."""

    @classmethod
    def dirname(cls, *, test_location) -> str:
        return str(SNAPSHOTS / test_location.basename)


# snap_compare looks the extension up on its module at call time.
pytest_textual_snapshot.SVGImageExtension = TopLevelSnapshots


def xplane(profile: str, run: str | None = None) -> pathlib.Path:
    """The (first) .xplane.pb of a fixture profile, optionally of one run."""
    files = sorted((PROFILES / profile).rglob("*.xplane.pb"))
    if run:
        files = [f for f in files if f.parent.name == run]
    assert files, f"no fixture xplane for {profile} {run or ''}"
    return files[0]


def oracle_dir(profile: str, run: str | None = None) -> pathlib.Path:
    d = PROFILES / profile / "oracle"
    return d / run if run else d


ALL_PROFILES = ["jax_live_capture", "jax_mlp", "jax_two_runs", "tf_keras", "tf_loop", "tpu_v6e_inference"]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own cache and config dirs: nothing leaks into ~/.cache, the user's
    saved theme never changes a snapshot, and nothing leaks between tests."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    # Truecolour whatever TERM the tests run under (the timeline picks ANSI hues on 16 colours);
    # the 16-colour tests set "standard" themselves.
    monkeypatch.setattr("textual.constants.COLOR_SYSTEM", "truecolor")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture(scope="module")
def server():
    """A real JAX profiler server with a training loop (tests/helpers/live_server.py), shared by a module."""
    from helpers.live import LiveServer

    s = LiveServer(seconds=240)
    yield s
    s.stop()


# --- app tests ----------------------------------------------------------------------------------
def make_app(profile: str | pathlib.Path = "tpu_v6e_inference", tool: str | None = "summary", **kw):
    """The app on a fixture profile (a name under tests/fixtures/profiles or tests/fixtures, or a
    path), opening `tool` (the summary unless named; None: the app's own default, the overview).
    Textual is imported here, not at the top: headless tests stay headless."""
    from tputui.app import TputuiApp
    from tputui.data.logdir import open_logdir

    root = pathlib.Path(profile)
    if not root.is_absolute():
        root = PROFILES / profile if (PROFILES / profile).exists() else FIXTURES / profile
    return TputuiApp(open_logdir(str(root)), tool=tool, **kw)


async def settle(pilot, rounds: int = 3) -> None:
    """Until the app is quiet: workers done and what they reported drawn. Worker results arrive
    as messages handled after the worker ends, and drawing them may start more workers (the
    summary's tool check, the trace viewer's level of detail), hence a few rounds."""
    for _ in range(rounds):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()

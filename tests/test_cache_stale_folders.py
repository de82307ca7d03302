"""The decode cache around riegeli merges: half-built entries left by a killed process are
removed, and a merge whose files cannot be written falls back to memory."""
from __future__ import annotations

import os

import numpy as np
from conftest import FIXTURES

from tputui.data.cache import load_frame
from tputui.data.logdir import open_logdir


def test_prune_removes_stale_temp_folders_only(tmp_path):
    """A killed process leaves its half-built entry (a riegeli merge's columns can be GBs) behind;
    a folder being built right now is left alone."""
    from tputui.data.cache_folder import STALE_TMP_SECONDS, prune

    frames = tmp_path / "frames"
    for name in (".tmp-stale", ".tmp-busy"):
        (frames / name).mkdir(parents=True)
        (frames / name / "event_offset_ps.npy").write_bytes(b"\0" * 100)
    old = os.stat(frames / ".tmp-busy").st_mtime - STALE_TMP_SECONDS - 60
    os.utime(frames / ".tmp-stale", (old, old))
    prune(str(frames))
    assert os.listdir(frames) == [".tmp-busy"]


def test_a_riegeli_run_is_merged_in_memory_when_its_files_cannot_be_written(monkeypatch, tmp_path):
    from tputui.data import cache

    hf = open_logdir(str(FIXTURES / "riegeli" / "tpu_lines_zstd")).runs[0].hosts[0]
    expected = load_frame(hf, use_cache=False)
    monkeypatch.setattr(cache, "_merge_folder", lambda use_cache: str(tmp_path / "gone"))  # writes fail
    frame = load_frame(hf, use_cache=False)
    assert not isinstance(frame.raw.event_offset_ps, np.memmap)
    assert frame.events.equals(expected.events) and frame.event_stats.equals(expected.event_stats)

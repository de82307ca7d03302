"""A finished export kept and replayed: `tputui export` run twice costs no analysis the second time."""
from __future__ import annotations

import os
import shutil

import pytest
from conftest import PROFILES

from tputui import export
from tputui.cli import main
from tputui.data.storage import cache_root


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def entries() -> list[str]:
    frames = os.path.join(cache_root(), "frames")
    return sorted(e for e in os.listdir(frames) if e.endswith(".export")) if os.path.isdir(frames) else []


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_second_export_replays_the_first(capsys, monkeypatch, fmt):
    logdir = str(PROFILES / "tf_keras")
    first = run(capsys, "export", logdir, "--tool", "framework_op_stats", "--format", fmt)
    assert first[0] == 0 and first[1] and len(entries()) == 1
    # The replay runs no analysis at all.
    monkeypatch.setattr(export, "run_tool", lambda *a, **k: pytest.fail("analysis ran on a cached export"))
    second = run(capsys, "export", logdir, "--tool", "framework_op_stats", "--format", fmt)
    assert second == first


def test_replay_to_a_file_and_notes_kept(capsys, tmp_path):
    logdir = str(PROFILES / "tf_keras")
    argv = ["export", logdir, "--tool", "pod_viewer", "--format", "csv"]
    code, out, err = run(capsys, *argv)
    assert code == 0 and "has no rows" in err  # a CPU profile: the empty-table note
    target = tmp_path / "k.csv"
    code2, out2, err2 = run(capsys, *argv, "-o", str(target))
    assert code2 == 0 and out2 == "" and err2 == err and target.read_text() == out


def test_changed_file_options_or_no_cache_miss(capsys, tmp_path):
    src = PROFILES / "tf_keras"
    logdir = tmp_path / "logs"
    shutil.copytree(src, logdir)
    a = run(capsys, "export", str(logdir), "--tool", "memory_profile", "--max-snapshots", "5")
    b = run(capsys, "export", str(logdir), "--tool", "memory_profile", "--max-snapshots", "7")
    assert a[0] == b[0] == 0 and a[1] != b[1] and len(entries()) == 2
    host = next(logdir.rglob("*.xplane.pb"))
    os.utime(host, (1, 1))  # a changed file (mtime) is a new key
    c = run(capsys, "export", str(logdir), "--tool", "memory_profile", "--max-snapshots", "5")
    assert c == a and len(entries()) == 3
    run(capsys, "export", str(logdir), "--tool", "summary", "--no-cache")
    assert len(entries()) == 3


def test_outputs_over_the_limit_and_failed_exports_are_not_kept(capsys, monkeypatch, tmp_path):
    logdir = str(PROFILES / "tf_keras")
    monkeypatch.setattr(export.OutputCache, "MAX_BYTES", 1000)
    code, out, _ = run(capsys, "export", logdir, "--tool", "trace_viewer")
    assert code == 0 and len(out) > 1000 and entries() == []
    monkeypatch.setattr(export.OutputCache, "MAX_BYTES", 64 << 20)
    code, _, err = run(capsys, "export", logdir, "--tool", "summary", "-o", str(tmp_path / "missing" / "x.json"))
    assert code == 2 and entries() == []
    frames = os.path.join(cache_root(), "frames")
    assert not [e for e in os.listdir(frames) if e.startswith(".tmp-export-")]


def test_an_edited_checkout_does_not_replay_an_older_builds_output(capsys, monkeypatch):
    """The key holds the newest mtime of tputui's own files: the same version number with other
    code is a miss (a developer's edit, an upgrade in place)."""
    logdir = str(PROFILES / "tf_keras")
    assert export.code_stamp() == export.code_stamp()
    run(capsys, "export", logdir, "--tool", "summary")
    monkeypatch.setattr(export, "code_stamp", lambda: "another build")
    run(capsys, "export", logdir, "--tool", "summary")
    assert len(entries()) == 2


def test_a_trace_export_is_kept_compressed_and_replayed_to_any_stream(capsys, tmp_path):
    """The trace export (the largest output) is kept too, compressed; the replay writes the same
    bytes to stdout, to a file, and to a text stream without a byte buffer."""
    import io

    from tputui.data.logdir import open_logdir
    from tputui.data.run_data import RunData

    logdir = str(PROFILES / "tf_keras")
    first = run(capsys, "export", logdir, "--tool", "trace_viewer")
    assert first[0] == 0 and len(entries()) == 1
    entry = os.path.join(cache_root(), "frames", entries()[0])
    assert os.path.getsize(os.path.join(entry, "out.zst")) < len(first[1]) / 3  # compressed
    assert run(capsys, "export", logdir, "--tool", "trace_viewer") == first
    target = tmp_path / "t.json"
    assert run(capsys, "export", logdir, "--tool", "trace_viewer", "-o", str(target))[0] == 0
    assert target.read_text() == first[1]
    cache = export.OutputCache(RunData(open_logdir(logdir).run(None)), "trace_viewer", None, {}, "json", None)
    text = io.StringIO()
    cache.replay(text)
    assert text.getvalue() == first[1]


def test_small_writes_reach_the_compressor_in_big_pieces(monkeypatch, tmp_path):
    """json.dump writes a few bytes at a time: the tee gathers them (one queue hand-over per
    piece, not per write), and the entry still holds every byte in order."""
    import io

    from tputui.data.logdir import open_logdir
    from tputui.data.run_data import RunData

    handed = []
    real = export.OutputCache._hand_over

    def counted(self):
        handed.append(self._pending_bytes)
        real(self)

    monkeypatch.setattr(export.OutputCache, "_hand_over", counted)
    run_data = RunData(open_logdir(str(PROFILES / "tf_keras")).run(None))
    cache = export.OutputCache(run_data, "summary", None, {}, "json", None)
    sink = io.StringIO()
    tee = cache.tee(sink)
    words = [f"{i}," for i in range(300_000)]
    for w in words:
        tee.write(w)
    cache.commit([])
    assert sink.getvalue() == "".join(words)
    assert len(handed) <= len(sink.getvalue()) // export.OutputCache.PIECE_BYTES + 2
    replayed = io.StringIO()
    export.OutputCache(run_data, "summary", None, {}, "json", None).replay(replayed)
    assert replayed.getvalue() == sink.getvalue()


def test_the_kept_output_carries_zstd_checksums_and_a_manifest(capsys):
    import zstandard

    from tputui.data import entry_seal

    run(capsys, "export", str(PROFILES / "tf_keras"), "--tool", "summary")
    (name,) = entries()
    entry = os.path.join(cache_root(), "frames", name)
    with open(os.path.join(entry, "out.zst"), "rb") as f:
        assert zstandard.get_frame_parameters(f.read(18)).has_checksum
    manifest = entry_seal.check(entry, full=True)
    assert set(manifest["files"]) == {"out.zst", "notes.json"} and manifest["meta"]["format"] == export.OutputCache.VERSION

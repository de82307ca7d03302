"""Issue 32 part 3: a small .xplane.riegeli whose chunk expands to 1 GB of records or to one 4 GB
record is refused (exit 2, one line) or, when the rest of the file is readable, skipped with a
warning; memory stays bounded by what is real (child RSS under 500 MB). The bombs are built here
(tests/helpers/riegeli_bombs.py), never committed."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from conftest import PROFILES

from tputui.data import riegeli
from tputui.data.riegeli_writer import RecordWriter, varint

sys.path.insert(0, str(pathlib.Path(__file__).parent / "helpers"))
from riegeli_bombs import BOMBS, write_bomb  # noqa: E402

RSS_LIMIT_KB = 500 * 1024
GOOD = next((PROFILES / "jax_mlp").rglob("*.xplane.pb")).read_bytes()
# Runs the command as its only child and prints the child's exit code and peak RSS (KB).
_MEASURE = ("import json, resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(json.dumps([r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.stdout, r.stderr]))")


def tputui(*argv, cache: pathlib.Path) -> tuple[int, int, str, str]:
    """(exit code, peak RSS in KB, stdout, stderr) of `tputui ARGV` in a fresh process."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    proc = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "tputui.cli", *argv],
                          capture_output=True, text=True, env=env, timeout=300)
    code, rss, out, err = json.loads(proc.stdout)
    return code, rss, out, err


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> dict[str, pathlib.Path]:
    root = tmp_path_factory.mktemp("bombs")
    return {name: write_bomb(root / name / "plugins" / "profile" / "run" / "vm.xplane.riegeli", name).parents[3]
            for name in BOMBS}


@pytest.mark.parametrize("name", list(BOMBS))
def test_a_bomb_alone_is_refused_in_one_line_with_bounded_memory(bombs, name, tmp_path):
    logdir = bombs[name]
    assert sum(f.stat().st_size for f in logdir.rglob("*.riegeli")) < 1 << 20  # small on disk
    code, rss, out, err = tputui("export", str(logdir), "--tool", "overview_page", cache=tmp_path)
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("tputui: error: "), err
    assert "no readable XSpace record" in lines[0] and ("limit" in lines[0] or "1:256" in lines[0]
                                                        or "expands past" in lines[0]), lines[0]
    assert rss < RSS_LIMIT_KB, f"peak RSS {rss / 1024:.0f} MB"


def test_the_listing_of_a_bomb_is_refused_with_bounded_memory(bombs, tmp_path):
    code, rss, out, err = tputui("export", str(bombs["brotli_one_4gb_record"]), "--list", cache=tmp_path)
    assert code == 2 and err.splitlines()[-1].startswith("tputui: error: ")
    assert rss < RSS_LIMIT_KB, f"peak RSS {rss / 1024:.0f} MB"


@pytest.mark.parametrize("name", ["brotli_one_4gb_record", "brotli_claims_1mb_expands_to_1gb", "zstd_1gb_of_records"])
def test_a_bomb_after_a_good_record_is_skipped_with_a_warning(name, tmp_path):
    clean = tmp_path / "clean" / "plugins" / "profile" / "run" / "vm.xplane.riegeli"
    clean.parent.mkdir(parents=True)
    with open(clean, "wb") as f:
        RecordWriter(f, "brotli").write_chunk([GOOD])
    bombed = write_bomb(tmp_path / "bombed" / "plugins" / "profile" / "run" / "vm.xplane.riegeli", name, GOOD)
    want = tputui("export", str(clean.parents[3]), "--tool", "overview_page", cache=tmp_path / "c1")
    code, rss, out, err = tputui("export", str(bombed.parents[3]), "--tool", "overview_page", cache=tmp_path / "c2")
    assert want[0] == 0 and code == 0
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tputui: warning: ") and "skipped" in lines[0], err
    assert out.replace(str(bombed.parents[3]), "") == want[2].replace(str(clean.parents[3]), "")
    assert rss < RSS_LIMIT_KB, f"peak RSS {rss / 1024:.0f} MB"


@pytest.mark.parametrize("kind", [riegeli.BROTLI, riegeli.ZSTD])
def test_decompression_stops_at_the_declared_size(kind):
    from riegeli_bombs import _zeros_compressed

    body = _zeros_compressed(kind, 48 << 20)  # three of the pieces it decompresses by
    with pytest.raises(ValueError, match="expands past"):
        riegeli.decompress(kind, varint(1 << 20) + body)
    with pytest.raises(ValueError, match="over the"):
        riegeli.decompress(kind, varint(riegeli.MAX_RECORD_BYTES + 1) + body)
    assert riegeli.decompress(kind, varint(48 << 20) + body) == bytes(48 << 20)  # the truth is read


def test_real_chunks_pass_the_claims_check():
    for path in sorted(pathlib.Path(__file__).parent.joinpath("fixtures", "riegeli").rglob("*.riegeli")):
        with open(path, "rb") as f:
            reader = riegeli.RecordReader(f, path.name, path.stat().st_size)
            assert sum(1 for _ in reader.records()) >= 1
            assert not [s for s in reader.skipped if "limit" in s or "1:256" in s], reader.skipped

"""gs:// logdirs against a real local GCS emulator (gcp-storage-emulator behind a recording proxy).

The session fixture starts the emulator on 127.0.0.1 and uploads copies of every fixture profile
to gs://profiles/<profile>/. Each test points STORAGE_EMULATOR_HOST at the proxy, which counts
requests, pages listings at 1000 objects like GCS, and injects the errors the emulator cannot
produce (403, 401, dropped connections). Comparisons with the local copy are exact (bytes, frames,
export text); no tolerance is involved because both sides decode the same bytes.
"""
from __future__ import annotations

import dataclasses
import io
import json
import sys
import types

import polars as pl
import pytest

pytest.importorskip("gcsfs")
pytest.importorskip("gcp_storage_emulator")

from conftest import ALL_PROFILES, PROFILES  # noqa: E402
from gcs_emulator import Emulator, RecordingProxy, free_port  # noqa: E402

from tputui.analysis.result import NoDataError  # noqa: E402
from tputui.data import gcs  # noqa: E402
from tputui.data.logdir import LogdirError, open_logdir  # noqa: E402
from tputui.data.run_data import RunData  # noqa: E402
from tputui.data.storage import gcs_cache_dir  # noqa: E402
from tputui.data.storage import read as read_buffer  # noqa: E402
from tputui.export import run_tool, write_result  # noqa: E402
from tputui.tools import TOOLS  # noqa: E402

pytestmark = pytest.mark.gcs

BUCKET = "profiles"
ANON_401 = ("Anonymous caller does not have storage.objects.list access to the Google Cloud Storage "
            "bucket. Permission 'storage.objects.list' denied on resource (or it may not exist).")
DENIED_403 = ("ci-reader@proj.iam.gserviceaccount.com does not have storage.objects.get access to the "
              "Google Cloud Storage object. Permission 'storage.objects.get' denied on resource (or it may not exist).")


def read_bytes(hf, progress=None) -> bytes:
    """A host file's bytes through storage's read path (local files come back memory-mapped)."""
    return bytes(read_buffer(hf, progress=progress))


@pytest.fixture(scope="session")
def server():
    emu = Emulator()
    proxy = RecordingProxy(emu)
    try:
        emu.create_bucket(BUCKET)
        for p in ALL_PROFILES:
            for part in (PROFILES / p).iterdir():
                if part.name != "oracle":  # the profile as a training job wrote it
                    emu.upload_tree(str(part), BUCKET, f"{p}/{part.name}")
        yield emu, proxy
    finally:
        proxy.stop()
        emu.stop()


@pytest.fixture
def gcs_env(server, monkeypatch):
    """STORAGE_EMULATOR_HOST -> the proxy; a fresh client and no remembered listing (a new process)."""
    emu, proxy = server
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
    fresh_process()
    proxy.reset()
    yield emu, proxy
    proxy.reset()


def fresh_process():
    gcs._fs_cache.clear()
    gcs._seen.clear()


@pytest.fixture
def fast_retries(monkeypatch):
    """gcsfs retries failed requests 6 times with 1-32 s back-off; keep the count, drop the waits."""
    import gcsfs.retry

    async def no_wait(_seconds):
        return None

    monkeypatch.setattr(gcsfs.retry, "asyncio", types.SimpleNamespace(sleep=no_wait))


def url(profile: str) -> str:
    return f"gs://{BUCKET}/{profile}"


def shape(logdir):
    return [(r.name, [(h.host, h.size, h.format) for h in r.hosts]) for r in logdir.runs]


def one_line_error(excinfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


# --- listing ---------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", ALL_PROFILES)
def test_listing_matches_local_with_one_list_request(gcs_env, profile):
    _, proxy = gcs_env
    remote = open_logdir(url(profile))
    assert shape(remote) == shape(open_logdir(str(PROFILES / profile)))
    assert len(proxy.lists()) == 1 and len(proxy.log) == 1  # one flat list, no per-object GETs
    query = proxy.lists()[0].query
    assert query.get("delimiter", "") == ""  # flat: never directory by directory
    assert query["matchGlob"] == "**.xplane.{pb,riegeli}"  # GCS leaves out checkpoints and events
    assert all(h.mtime == float(gcs._seen[h.path].generation) for r in remote.runs for h in r.hosts)


def test_run_folder_single_file_and_trailing_slash_urls(gcs_env):
    _, proxy = gcs_env
    local = open_logdir(str(PROFILES / "jax_two_runs"))
    run = local.runs[0]
    remote_run_dir = f"{url('jax_two_runs')}/plugins/profile/{run.name}"
    assert shape(open_logdir(remote_run_dir)) == [shape(local)[0]]
    proxy.reset()
    assert shape(open_logdir(remote_run_dir + "/vm.xplane.pb")) == [shape(local)[0]]
    assert [(r.object, r.is_list) for r in proxy.log] == [(gcs.split_url(remote_run_dir)[1] + "/vm.xplane.pb", False)]
    assert shape(open_logdir(url("jax_two_runs") + "/")) == shape(local)


def test_many_runs_list_in_two_pages(gcs_env):
    """200 runs x 8 hosts (+ 200 TensorBoard event files, filtered out by GCS): 2 list pages, nothing else."""
    emu, proxy = gcs_env
    emu.create_bucket("many")
    for r in range(200):
        run = f"2026_01_01_00_{r // 60:02d}_{r % 60:02d}"
        emu.upload("many", f"job/events.out.tfevents.{r}", b"e")
        for h in range(8):
            emu.upload("many", f"job/plugins/profile/{run}/host{h}.xplane.pb", b"x" * (h + 1))
    logdir = open_logdir("gs://many/job")
    assert len(logdir.runs) == 200 and all(len(r.hosts) == 8 for r in logdir.runs)
    assert logdir.runs[0].name == "2026_01_01_00_03_19"  # newest first
    assert [h.size for h in logdir.runs[0].hosts] == list(range(1, 9))
    assert len(proxy.lists()) == 2 == len(proxy.log)  # 1600 profile files / 1000 per page
    assert proxy.lists()[1].query.get("pageToken")


# --- reads -------------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", ALL_PROFILES)
def test_bytes_equal_local_and_second_open_downloads_nothing(gcs_env, profile):
    _, proxy = gcs_env
    remote, local = open_logdir(url(profile)), open_logdir(str(PROFILES / profile))
    for rr, lr in zip(remote.runs, local.runs):
        for rh, lh in zip(rr.hosts, lr.hosts):
            assert read_bytes(rh) == read_bytes(lh)
    assert proxy.downloads()
    fresh_process()
    proxy.reset()
    again = open_logdir(url(profile))
    for r in again.runs:
        for h in r.hosts:
            read_bytes(h)
    assert len(proxy.log) == 1 and not proxy.downloads()  # the listing only: bytes come from the cache


def test_parallel_ranged_reads_pinned_to_generation_with_progress(gcs_env, monkeypatch):
    _, proxy = gcs_env
    monkeypatch.setattr(gcs, "MIN_PART", 64 * 1024)  # split the 0.86 MB fixture into 8 parts
    monkeypatch.setattr(gcs, "PROGRESS_EVERY", 0.01)
    remote = open_logdir(url("tpu_v6e_inference"))
    hf = remote.runs[0].hosts[0]
    proxy.reset()
    messages = []
    data = read_bytes(hf, progress=messages.append)
    gets = proxy.downloads()
    assert len(gets) == len(gcs.parts(hf.size)) == gcs.PARALLEL == len(proxy.log)
    spans = sorted(tuple(map(int, r.headers["range"].removeprefix("bytes=").split("-"))) for r in gets)
    assert spans[0][0] == 0 and spans[-1][1] == hf.size - 1
    assert all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:]))  # contiguous, no overlap
    assert {r.query["generation"] for r in gets} == {gcs._seen[hf.path].generation}
    assert proxy.max_in_flight(gets) > 1  # parallel
    assert messages and messages[-1].startswith(f"downloading {hf.host}: 0.9 / 0.9 MB (")
    assert messages[-1].endswith(" MB/s)")
    assert len(data) == hf.size


def test_only_the_requested_host_is_fetched(gcs_env):
    emu, proxy = gcs_env
    emu.create_bucket("pod")
    src = (PROFILES / "jax_mlp").rglob("vm.xplane.pb").__next__().read_bytes()
    for h in ("w0", "w1", "w2"):
        emu.upload("pod", f"plugins/profile/2026_02_02_00_00_00/{h}.xplane.pb", src)
    run = RunData(open_logdir("gs://pod").runs[0])
    proxy.reset()
    run.frame("w1")
    assert {r.object for r in proxy.downloads()} == {"plugins/profile/2026_02_02_00_00_00/w1.xplane.pb"}


def test_gzip_encoded_object_is_fetched_whole_and_cached(gcs_env):
    import gzip

    emu, proxy = gcs_env
    raw = (PROFILES / "jax_mlp").rglob("vm.xplane.pb").__next__().read_bytes()
    emu.create_bucket("gz")
    name = "plugins/profile/2026_06_06_00_00_00/vm.xplane.pb"
    emu.upload("gz", name, gzip.compress(raw))  # as `gsutil cp -Z` stores it
    emu.patch("gz", name, {"contentEncoding": "gzip"})
    hf = open_logdir("gs://gz").runs[0].hosts[0]
    proxy.reset()
    assert read_bytes(hf) == raw
    assert len(proxy.downloads()) == 1 and "range" not in proxy.downloads()[0].headers
    fresh_process()
    proxy.reset()
    assert read_bytes(open_logdir("gs://gz").runs[0].hosts[0]) == raw and not proxy.downloads()


def test_frames_equal_local(gcs_env):
    for profile in ("tpu_v6e_inference", "tf_keras"):
        remote = RunData(open_logdir(url(profile)).runs[0])
        local = RunData(open_logdir(str(PROFILES / profile)).runs[0])
        a, b = remote.frame(), local.frame()
        for table in ("planes", "lines", "events", "event_metadata", "stat_metadata",
                      "event_stats", "metadata_stats", "plane_stats"):
            ta, tb = getattr(a, table), getattr(b, table)
            assert isinstance(ta, pl.DataFrame) and ta.height == tb.height, table
            assert ta.equals(tb), table
        assert a.events.height > 1000


def export_all(run: RunData) -> dict[str, str]:
    """Every tool's JSON and every CSV table, as text (or the NoDataError reason)."""
    out = {}
    for tool in TOOLS:
        try:
            result = run_tool(run, tool.name)
        except NoDataError as e:
            out[tool.name] = f"no data: {e}"
            continue
        buf = io.StringIO()
        write_result(result, "json", buf)
        out[tool.name] = buf.getvalue()
        for table in result.tables():
            buf = io.StringIO()
            write_result(result, "csv", buf, table)
            out[f"{tool.name}.{table}.csv"] = buf.getvalue()
    return out


@pytest.mark.parametrize("profile", ALL_PROFILES)
def test_every_export_matches_local(gcs_env, profile):
    remote, local = open_logdir(url(profile)), open_logdir(str(PROFILES / profile))
    for rr, lr in zip(remote.runs, local.runs):
        got, want = export_all(RunData(rr)), export_all(RunData(lr))
        assert got.keys() == want.keys()
        for key in want:  # the summary names each host's file: the one place the two may differ
            assert got[key].replace(url(profile), str(PROFILES / profile)) == want[key], f"{profile} {rr.name} {key}"
        assert any(not v.startswith("no data") for v in want.values())


def test_bucket_unchanged_by_open_read_and_export(gcs_env):
    emu, proxy = gcs_env
    before = emu.objects(BUCKET)
    for profile in ("tpu_v6e_inference", "jax_two_runs"):
        for run in open_logdir(url(profile)).runs:
            export_all(RunData(run))
    assert emu.objects(BUCKET) == before
    assert proxy.log and not proxy.writes() and {r.method for r in proxy.log} == {"GET"}


# --- the command line and the app -----------------------------------------------------------------

def test_cli_export_and_list(gcs_env, capsys):
    from tputui.cli import main

    assert main(["export", url("tf_keras"), "--tool", "framework_op_stats", "--format", "csv"]) == 0
    remote = capsys.readouterr().out
    assert main(["export", str(PROFILES / "tf_keras"), "--tool", "framework_op_stats", "--format", "csv"]) == 0
    assert remote == capsys.readouterr().out and remote.count("\n") > 10
    assert main(["export", url("jax_two_runs"), "--list"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in doc["runs"]] == ["2026_11_22_12_58_50", "2026_11_22_12_58_45"]
    assert doc["runs"][0]["path"] == f"{url('jax_two_runs')}/plugins/profile/2026_11_22_12_58_50"


def test_cli_sql_and_diff_on_gs_urls_equal_local(gcs_env, capsys):
    from tputui.cli import main

    query = "SELECT category, count(*) AS n, sum(self_time_ns) AS ns FROM events GROUP BY category ORDER BY 1"
    outs = []
    for root in (url("tpu_v6e_inference"), str(PROFILES / "tpu_v6e_inference")):
        assert main(["sql", root, query, "--format", "json"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and len(json.loads(outs[0])) == 5
    # A bucket run against the same run on disk: nothing changed.
    assert main(["diff", url("jax_two_runs"), str(PROFILES / "jax_two_runs"), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["step_time"]["delta_pct"] == 0 and all(r["delta_us"] == 0 for r in d["framework_ops"])


@pytest.mark.parametrize("target,fault,expect", [
    ("gs://no-such-bucket/logs", None, "bucket 'no-such-bucket' not found"),
    (f"gs://{BUCKET}/nothing/here", None, "no such prefix"),
    (url("jax_mlp"), (403, DENIED_403), "permission denied (ci-reader@proj.iam.gserviceaccount.com does not"),
    (url("jax_mlp"), (401, ANON_401), "no Google Cloud credentials"),
])
def test_cli_errors_are_one_line_exit_2(gcs_env, capsys, target, fault, expect):
    from tputui.cli import main

    _, proxy = gcs_env
    proxy.fault = (lambda r: fault) if fault else None
    assert main(["export", target, "--list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tputui: error: ") and expect in err[0], err


def test_cli_error_in_a_real_process_prints_one_line_and_no_library_traceback(gcs_env, tmp_path):
    """gcsfs logs failed requests with tracebacks; with no logging set up Python would print them."""
    import os
    import subprocess

    _, proxy = gcs_env
    proxy.fault = lambda r: (401, ANON_401)
    env = dict(os.environ, STORAGE_EMULATOR_HOST=proxy.url, XDG_CACHE_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-m", "tputui.cli", "export", url("jax_mlp"), "--list"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == f"tputui: error: {url('jax_mlp')}: {gcs.NO_CREDENTIALS}\n"
    assert proxy.log  # the request really reached the (faulting) server


async def test_app_shows_a_download_error_once_on_screen(gcs_env):
    from tputui.app import TputuiApp

    _, proxy = gcs_env
    logdir = open_logdir(url("jax_mlp"))
    proxy.fault = lambda r: (403, DENIED_403) if r.is_download else None
    app = TputuiApp(logdir)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "permission denied (ci-reader@" in (app.screen.error or "")
        # Said once, on the screen (issue #30: no notification repeating it).
        assert not any("permission denied" in str(n.message) for n in app._notifications)


# --- errors ------------------------------------------------------------------------------------

def test_missing_extra_is_one_clear_line(monkeypatch):
    fresh_process()
    for mod in ("gcsfs", "gcsfs.core"):
        monkeypatch.setitem(sys.modules, mod, None)  # import gcsfs -> ImportError
    with pytest.raises(LogdirError) as e:
        open_logdir("gs://bucket/logs")
    assert one_line_error(e) == "gs:// needs the gcs extra: pip install 'tputui[gcs]'"


def test_missing_extra_in_the_cli(monkeypatch, capsys):
    from tputui.cli import main

    fresh_process()
    for mod in ("gcsfs", "gcsfs.core"):
        monkeypatch.setitem(sys.modules, mod, None)
    assert main(["export", "gs://bucket/logs", "--tool", "summary"]) == 2
    assert capsys.readouterr().err == "tputui: error: gs:// needs the gcs extra: pip install 'tputui[gcs]'\n"


def test_empty_bucket_no_profiles_and_not_a_profile(gcs_env):
    emu, _ = gcs_env
    emu.create_bucket("empty")
    with pytest.raises(LogdirError, match=r"^gs://empty: the bucket is empty$"):
        open_logdir("gs://empty")
    emu.create_bucket("other")
    emu.upload("other", "logs/events.out.tfevents.1", b"e")
    emu.upload("other", "logs/a/b/stray.xplane.pb", b"x")  # not under plugins/profile/<run>/
    with pytest.raises(LogdirError, match=r"^no profiles under gs://other/logs: expected plugins/profile/"):
        open_logdir("gs://other/logs")
    with pytest.raises(LogdirError, match="not an XProf profile"):
        open_logdir("gs://other/logs/events.out.tfevents.1")
    with pytest.raises(LogdirError, match="needs a bucket"):
        open_logdir("gs:///logs")


def test_permission_denied_on_list_and_on_read(gcs_env):
    _, proxy = gcs_env
    proxy.fault = lambda r: (403, DENIED_403) if r.is_list else None
    with pytest.raises(LogdirError) as e:
        open_logdir(url("jax_mlp"))
    assert one_line_error(e).startswith(f"{url('jax_mlp')}: permission denied (ci-reader@")
    proxy.fault = lambda r: (403, DENIED_403) if r.is_download else None
    hf = open_logdir(url("jax_mlp")).runs[0].hosts[0]
    with pytest.raises(LogdirError) as e:
        read_bytes(hf)
    assert one_line_error(e).startswith(f"{hf.path}: permission denied (")
    assert not [p for p in _cache().rglob("*") if p.is_file()]


def _cache():
    import pathlib

    return pathlib.Path(gcs_cache_dir())


def test_no_credentials(gcs_env):
    _, proxy = gcs_env
    proxy.fault = lambda r: (401, ANON_401)
    with pytest.raises(LogdirError) as e:
        open_logdir(url("jax_mlp"))
    assert one_line_error(e) == f"{url('jax_mlp')}: {gcs.NO_CREDENTIALS}"


def test_credentials_file_that_does_not_exist(monkeypatch, tmp_path):
    fresh_process()
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "key.json"))
    with pytest.raises(LogdirError) as e:
        open_logdir("gs://bucket/logs")
    assert one_line_error(e) == f"GOOGLE_APPLICATION_CREDENTIALS={tmp_path / 'key.json'}: no such file"


def test_network_failure_listing(monkeypatch, fast_retries):
    fresh_process()
    port = free_port()  # nothing listens here
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    with pytest.raises(LogdirError) as e:
        open_logdir("gs://bucket/logs")
    assert one_line_error(e).startswith(f"gs://bucket/logs: network failure talking to 127.0.0.1:{port} (")


def test_dropped_connections_fail_cleanly_then_recover(gcs_env, fast_retries):
    _, proxy = gcs_env
    hf = open_logdir(url("jax_mlp")).runs[0].hosts[0]
    proxy.fault = lambda r: "drop" if r.is_download else None
    with pytest.raises(LogdirError) as e:
        read_bytes(hf)
    assert one_line_error(e).startswith(f"{hf.path}: network failure talking to ")
    assert not [p for p in _cache().rglob("*") if p.is_file()]  # no partial download left behind
    dropped = {"n": 0}

    def drop_two(r):
        if r.is_download and dropped["n"] < 2:
            dropped["n"] += 1
            return "drop"
        return None

    proxy.fault = drop_two  # transient: gcsfs's retries carry the download through
    assert read_bytes(hf) == read_bytes(open_logdir(str(PROFILES / "jax_mlp")).runs[0].hosts[0])


def test_object_deleted_after_listing(gcs_env):
    emu, _ = gcs_env
    emu.create_bucket("churn")
    emu.upload("churn", "plugins/profile/2026_03_03_00_00_00/vm.xplane.pb", b"x" * 100)
    hf = open_logdir("gs://churn").runs[0].hosts[0]
    emu.delete("churn", "plugins/profile/2026_03_03_00_00_00/vm.xplane.pb")
    with pytest.raises(LogdirError, match="object not found .deleted or replaced since it was listed"):
        read_bytes(hf)


def test_corrupted_download_is_not_cached(gcs_env, monkeypatch):
    hf = open_logdir(url("jax_mlp")).runs[0].hosts[0]
    obj = gcs._seen[hf.path]
    monkeypatch.setitem(gcs._seen, hf.path, dataclasses.replace(obj, md5="AAAAAAAAAAAAAAAAAAAAAA=="))
    with pytest.raises(LogdirError, match="download corrupted"):
        read_bytes(hf)
    assert not [p for p in _cache().rglob("*") if p.is_file()]


@pytest.mark.parametrize("damage", ["flipped", "truncated", "appended", "no checksum"])
def test_a_damaged_download_cache_is_downloaded_again(gcs_env, damage):
    """Issue 32: a cached download whose bytes are not the ones stored (a same-size flip the
    size check missed) is never decoded: it is removed and the object downloaded again."""
    _, proxy = gcs_env
    hf = open_logdir(url("jax_mlp")).runs[0].hosts[0]
    want = read_bytes(hf)
    (cached,) = [p for p in _cache().rglob("*") if p.is_file() and not p.name.endswith(".crc32")]
    data = bytearray(cached.read_bytes())
    if damage == "flipped":
        data[len(data) // 2] ^= 0xFF
        cached.write_bytes(bytes(data))
    elif damage == "truncated":
        cached.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "appended":
        cached.write_bytes(bytes(data) + b"\0" * 10)
    else:
        cached.with_name(cached.name + ".crc32").unlink()
    fresh_process()
    proxy.reset()
    again = open_logdir(url("jax_mlp")).runs[0].hosts[0]
    assert read_bytes(again) == want and proxy.downloads()  # fetched again, not decoded damaged
    assert cached.read_bytes() == want  # and replaced


def test_host_file_not_from_a_listing_costs_one_metadata_get(gcs_env):
    _, proxy = gcs_env
    hf = open_logdir(url("jax_mlp")).runs[0].hosts[0]
    fresh_process()
    proxy.reset()
    data = read_bytes(hf)
    assert [r.object for r in proxy.log if not r.is_download] == [gcs.split_url(hf.path)[1]]
    assert len(proxy.log) == 1 + len(proxy.downloads()) and len(data) == hf.size


# --- writes (capture) ------------------------------------------------------------------------------

def test_write_bytes_creates_only_the_new_object(gcs_env):
    emu, proxy = gcs_env
    emu.create_bucket("captures")
    emu.upload("captures", "logs/plugins/profile/2026_01_01_00_00_00/old.xplane.pb", b"old")
    before = emu.objects("captures")
    target = "gs://captures/logs/plugins/profile/2026_04_04_00_00_00/w0.xplane.pb"
    new = b"\x22\x02w0"  # an XSpace holding one hostname (field 4)
    gcs.write_bytes(target, new)
    after = emu.objects("captures")
    assert set(after) - set(before) == {"logs/plugins/profile/2026_04_04_00_00_00/w0.xplane.pb"}
    assert {k: after[k] for k in before} == before
    assert [r.query.get("ifGenerationMatch") for r in proxy.writes()] == ["0"]  # never overwrites
    hf = open_logdir("gs://captures/logs").runs[0].hosts[0]
    assert hf.host == "w0" and read_bytes(hf) == new


def test_write_errors(gcs_env):
    emu, proxy = gcs_env
    emu.create_bucket("locked")
    emu.upload("locked", "a/plugins/profile/r/x.xplane.pb", b"1")
    with pytest.raises(LogdirError, match=r"^gs://locked/a/plugins/profile/r/x.xplane.pb: already exists"):
        gcs.write_bytes("gs://locked/a/plugins/profile/r/x.xplane.pb", b"2")
    with pytest.raises(LogdirError, match="bucket 'gone' not found"):
        gcs.write_bytes("gs://gone/a.xplane.pb", b"2")
    proxy.fault = lambda r: (403, DENIED_403.replace("objects.get", "objects.create")) if r.is_write else None
    with pytest.raises(LogdirError, match=r"permission denied \(ci-reader@.*storage.objects.create"):
        gcs.write_bytes("gs://locked/b.xplane.pb", b"2")
    assert emu.objects("locked").keys() == {"a/plugins/profile/r/x.xplane.pb"}
    # Through capture: the same one line, naming the object once.
    from tputui.live.capture import write_remote
    from tputui.live.client import LiveError

    proxy.fault = None
    with pytest.raises(LiveError) as err:
        write_remote("gs://locked/a/plugins/profile/r/x.xplane.pb", b"2")
    assert str(err.value).count("gs://locked/a/plugins/profile/r/x.xplane.pb") == 1
    assert "already exists" in str(err.value)


def test_capture_writes_through_gcs(gcs_env):
    from tputui.live.capture import write_remote

    emu, _ = gcs_env
    emu.create_bucket("cap2")
    write_remote("gs://cap2/run/plugins/profile/2026_05_05_00_00_00/h.xplane.pb", b"abc")
    assert emu.objects("cap2").keys() == {"run/plugins/profile/2026_05_05_00_00_00/h.xplane.pb"}


def test_host_checks_on_gs_download_nothing_and_list_marks_a_bad_object(gcs_env, capsys):
    """Checking gs:// hosts goes by the listed size (no GET: a Dask or worker decode may fetch
    them instead); a bad object is found when a tool decodes it, and --list marks it."""
    from tputui.cli import main

    emu, proxy = gcs_env
    emu.create_bucket("mixed")
    good = (PROFILES / "jax_mlp").rglob("vm.xplane.pb").__next__().read_bytes()
    emu.upload("mixed", "plugins/profile/r/vm.xplane.pb", good)
    emu.upload("mixed", "plugins/profile/r/bad.xplane.pb", good[:5000])
    proxy.reset()
    rd = RunData(open_logdir("gs://mixed").runs[0], use_cache=False)
    assert rd.check_hosts() == {} and not proxy.downloads()
    code = main(["export", "gs://mixed", "--list", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 0 and "1 host file(s) unreadable" in err
    (run,) = json.loads(out)["runs"]
    assert list(run["unreadable"]) == ["bad"] and "truncated or corrupt XSpace" in run["unreadable"]["bad"]


def test_riegeli_run_reads_like_local(gcs_env):
    """A .xplane.riegeli run from gs:// (downloaded once, then read record by record) equals the local one."""
    emu, _ = gcs_env
    src = PROFILES.parent / "riegeli" / "tpu_lines_zstd"
    emu.upload_tree(str(src / "plugins"), BUCKET, "riegeli_tpu/plugins")
    (run,) = open_logdir(f"gs://{BUCKET}/riegeli_tpu").runs
    (host,) = run.hosts
    assert host.format == "riegeli" and host.path.endswith(".xplane.riegeli")
    a = RunData(run).frame()
    b = RunData(open_logdir(str(src)).runs[0]).frame()
    for table in ("planes", "lines", "events", "event_metadata", "event_stats"):
        assert getattr(a, table).equals(getattr(b, table)), table
    assert a.num_events > 20_000

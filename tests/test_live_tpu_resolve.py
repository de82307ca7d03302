"""--tpu NAME resolution: a fake gcloud on PATH (tests/helpers/fake_gcloud), and the REST path
with a local stand-in for the metadata server and the Cloud TPU API."""
from __future__ import annotations

import json
import os
import pathlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from helpers.live import closed_port

from tputui.data.logdir import open_logdir
from tputui.live.client import LiveError
from tputui.live.tpu_resolve import TpuQuery, addresses_from, resolve_tpu

FAKE_GCLOUD = pathlib.Path(__file__).parent / "helpers" / "fake_gcloud"


def node(state="READY", endpoints=(("10.130.0.2", 8470),), **extra):
    return {"name": "projects/p/locations/us-central2-b/nodes/x", "state": state,
            "acceleratorType": "v4-8", **extra,
            "networkEndpoints": [{"ipAddress": ip, "port": port} for ip, port in endpoints]}


@pytest.fixture
def gcloud(tmp_path, monkeypatch):
    """Put the fake gcloud first on PATH; returns (set_nodes(dict), calls())."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gcloud").symlink_to(FAKE_GCLOUD)
    nodes, log = tmp_path / "nodes.json", tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GCLOUD_NODES", str(nodes))
    monkeypatch.setenv("FAKE_GCLOUD_LOG", str(log))
    # No metadata server here: a closed local port refuses at once.
    monkeypatch.setenv("GCE_METADATA_HOST", f"127.0.0.1:{closed_port()}")
    monkeypatch.delenv("CLOUDSDK_COMPUTE_ZONE", raising=False)

    def set_nodes(d):
        nodes.write_text(json.dumps(d))

    def calls():
        return [json.loads(l) for l in log.read_text().splitlines()] if log.exists() else []

    set_nodes({})
    return set_nodes, calls


def test_local_and_host_port_need_no_lookup(gcloud):
    _, calls = gcloud
    assert resolve_tpu(TpuQuery("local")) == [["localhost:9012", "localhost:9999"]]
    assert resolve_tpu(TpuQuery("local", port=9999)) == [["localhost:9999"]]
    assert resolve_tpu(TpuQuery("10.0.0.7:9999")) == [["10.0.0.7:9999"]]
    assert calls() == []


def test_tpu_vm_workers_get_the_profiler_port_candidates(gcloud):
    """A TPU VM's profiler lives in the user's job: every worker gets 9012 then 9999 (not 8466)."""
    set_nodes, calls = gcloud
    set_nodes({"tpu-vm": {"my-pod": node(endpoints=[("10.130.0.2", 8470), ("10.130.0.3", 8470)],
                                         apiVersion="V2_ALPHA1")}})
    got = resolve_tpu(TpuQuery("my-pod", zone="us-central2-b", project="proj"))
    assert got == [["10.130.0.2:9012", "10.130.0.2:9999"], ["10.130.0.3:9012", "10.130.0.3:9999"]]
    (argv,) = calls()
    assert argv[:5] == ["compute", "tpus", "tpu-vm", "describe", "my-pod"]
    assert "--format=json" in argv and "--zone=us-central2-b" in argv and "--project=proj" in argv


def test_profiler_port_overrides_endpoint_port(gcloud):
    set_nodes, _ = gcloud
    set_nodes({"tpu-vm": {"t": node(endpoints=[("10.1.2.3", 8470)])}})
    assert resolve_tpu(TpuQuery("t", port=9999)) == [["10.1.2.3:9999"]]


def test_tpu_node_endpoints_port_8470_becomes_8466(gcloud):
    set_nodes, _ = gcloud
    set_nodes({"tpu-vm": {"n": node(endpoints=[("10.2.0.2", 8470), ("10.2.0.3", 8471)], apiVersion="V1")}})
    assert resolve_tpu(TpuQuery("n")) == [["10.2.0.2:8466"], ["10.2.0.3:8471"]]


def test_tpu_node_found_through_the_node_api_after_tpu_vm_not_found(gcloud):
    set_nodes, calls = gcloud
    set_nodes({"node": {"old-tpu": node(endpoints=[("10.240.1.2", 8470)])}})
    assert resolve_tpu(TpuQuery("old-tpu")) == [["10.240.1.2:8466"]]  # found by the node API: a TPU Node
    assert [c[:3] for c in calls()] == [["compute", "tpus", "tpu-vm"], ["compute", "tpus", "describe"]]


def test_not_ready_is_a_clear_error(gcloud):
    set_nodes, _ = gcloud
    set_nodes({"tpu-vm": {"t": node(state="CREATING")}})
    with pytest.raises(LiveError, match=r"^TPU t is CREATING, not READY"):
        resolve_tpu(TpuQuery("t"))


def test_missing_tpu_is_a_clear_error(gcloud):
    with pytest.raises(LiveError, match=r"^TPU nope not found \(zone z1\): .*NOT_FOUND"):
        resolve_tpu(TpuQuery("nope", zone="z1"))


def test_gcloud_failure_other_than_not_found_is_reported(gcloud):
    set_nodes, calls = gcloud
    set_nodes({"tpu-vm": {"t": "PERMISSION_DENIED: caller lacks tpu.nodes.get"}})
    with pytest.raises(LiveError, match="gcloud could not describe TPU t: .*PERMISSION_DENIED"):
        resolve_tpu(TpuQuery("t"))
    assert len(calls()) == 1  # not retried on the node API


def test_gcloud_without_zone_or_project_says_to_pass_them(gcloud):
    set_nodes, _ = gcloud
    set_nodes({"tpu-vm": {"t": "Error parsing [tpu]. The [tpu] resource is not properly specified. "
                                "Failed to find attribute [zone]."}})
    with pytest.raises(LiveError, match=r"Error parsing \[tpu\].*\(pass --zone and --project\)"):
        resolve_tpu(TpuQuery("t"))


def test_node_without_endpoints(gcloud):
    set_nodes, _ = gcloud
    set_nodes({"tpu-vm": {"t": node(endpoints=[])}})
    with pytest.raises(LiveError, match="no network endpoints"):
        resolve_tpu(TpuQuery("t"))


def test_address_or_tpu_not_both(gcloud):
    with pytest.raises(LiveError, match="either ADDRESS or --tpu"):
        addresses_from("h:1", "t")
    assert addresses_from("grpc://h:1,h:2", None) == ["h:1", "h:2"]


# --- REST path (no gcloud) -------------------------------------------------------------------
class _Cloud(BaseHTTPRequestHandler):
    nodes: dict = {}
    seen: list = []

    def do_GET(self):
        self.seen.append((self.path, dict(self.headers)))
        meta = {"/computeMetadata/v1/project/project-id": "proj-7",
                "/computeMetadata/v1/instance/zone": "projects/123/zones/europe-west4-a",
                "/computeMetadata/v1/instance/service-accounts/default/token":
                    json.dumps({"access_token": "tok", "expires_in": 100})}
        if self.path in meta:
            body, code = meta[self.path], (200 if self.headers.get("Metadata-Flavor") == "Google" else 403)
        elif self.path in self.nodes:
            body, code = json.dumps(self.nodes[self.path]), 200
        else:
            body, code = json.dumps({"error": {"code": 404}}), 404
        self.send_response(code)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *a):
        pass


@pytest.fixture
def cloud(tmp_path, monkeypatch):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Cloud)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{srv.server_address[1]}"
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))  # no gcloud
    monkeypatch.setenv("GCE_METADATA_HOST", host)
    monkeypatch.setenv("TPUTUI_TPU_API_URL", f"http://{host}/v2")
    _Cloud.nodes, _Cloud.seen = {}, []
    yield _Cloud
    srv.shutdown()
    srv.server_close()


def test_rest_api_with_metadata_credentials(cloud):
    cloud.nodes["/v2/projects/proj-7/locations/europe-west4-a/nodes/t"] = node(endpoints=[("10.9.8.7", 8470)])
    assert resolve_tpu(TpuQuery("t")) == [["10.9.8.7:9012", "10.9.8.7:9999"]]
    cloud.nodes["/v2/projects/proj-7/locations/europe-west4-a/nodes/n"] = node(endpoints=[("10.9.8.6", 8470)],
                                                                               apiVersion="V1")
    assert resolve_tpu(TpuQuery("n")) == [["10.9.8.6:8466"]]
    api_calls = [h for p, h in cloud.seen if p.startswith("/v2/")]
    assert api_calls and api_calls[0]["Authorization"] == "Bearer tok"


def test_rest_api_not_found(cloud):
    with pytest.raises(LiveError, match=r"^TPU gone not found \(zone europe-west4-a, project proj-7\)$"):
        resolve_tpu(TpuQuery("gone"))


def test_no_gcloud_and_no_metadata_server(tmp_path, monkeypatch):
    empty_bin = tmp_path / "b"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    monkeypatch.setenv("GCE_METADATA_HOST", f"127.0.0.1:{closed_port()}")
    with pytest.raises(LiveError, match="gcloud is not installed and the GCE metadata server"):
        resolve_tpu(TpuQuery("t"))


def test_capture_and_monitor_with_tpu_name_end_to_end(gcloud, tmp_path):
    """`tputui capture --tpu NAME` / `monitor --tpu NAME`: fake gcloud -> endpoint -> (fake) server."""
    import subprocess
    import sys

    from conftest import xplane
    from helpers.live import FakeProfiler, fake_server, response_with

    set_nodes, calls = gcloud
    data = xplane("jax_live_capture").read_bytes()
    with fake_server(FakeProfiler([response_with(data)])) as addr:
        port = int(addr.rsplit(":", 1)[1])
        set_nodes({"tpu-vm": {"my-tpu": node(endpoints=[("127.0.0.1", 8470)])}})

        def run(*args):
            return subprocess.run([sys.executable, "-m", "tputui.cli", *args], capture_output=True, text=True,
                                  timeout=120)

        p = run("capture", "--tpu", "my-tpu", "--zone", "us-east5-a", "--profiler-port", str(port),
                str(tmp_path / "logs"), "--duration-ms", "100")
        assert p.returncode == 0, p.stderr
        p2 = run("monitor", "--tpu", "my-tpu", "--profiler-port", str(port), "--plain", "--num-queries", "1")
        assert p2.returncode == 0, p2.stderr
        assert "over 325 steps" in p2.stdout  # the fixture window the fake server answers with
        set_nodes({"tpu-vm": {"my-tpu": node(state="STOPPED")}})
        p3 = run("capture", "--tpu", "my-tpu", str(tmp_path / "other"))
    (run_,) = open_logdir(str(tmp_path / "logs")).runs
    assert run_.hosts[0].host == f"127.0.0.1_{port}"
    assert "--zone=us-east5-a" in calls()[0]
    assert p3.returncode == 2
    assert p3.stderr.strip() == "tputui: error: TPU my-tpu is STOPPED, not READY: wait for it to be READY and try again"


# --- which port answered ---------------------------------------------------------------------
def test_pick_ports_tries_candidates_in_order_and_says_which_answered():
    """Real listeners on 127.0.0.1: the first candidate that answers wins, within a short deadline."""
    from helpers.live import FakeProfiler, fake_server

    from tputui.live.tpu_resolve import pick_ports

    dead = f"127.0.0.1:{closed_port()}"
    said: list[str] = []
    with fake_server(FakeProfiler()) as live, fake_server(FakeProfiler()) as other:
        assert pick_ports([[dead, live, other]], said.append) == [live]
        assert said == [f"profiler server: {live} answered ({dead.rsplit(':', 1)[1]} did not)"]
        said.clear()
        assert pick_ports([[live], [dead, other], [dead]], said.append, timeout=0.3) == [live, other, dead]
    assert said[0] == "profiler servers: 2 of 3 workers answered (port " + ", ".join(
        sorted({live.rsplit(":", 1)[1], other.rsplit(":", 1)[1]})) + ")"
    assert said[1] == f"  127.0.0.1: none of ports {dead.rsplit(':', 1)[1]} answered; following {dead}"
    said.clear()
    assert pick_ports([[dead, dead]], said.append, timeout=0.2) == [dead]
    assert said[0].startswith("no profiler server answered on 127.0.0.1 ports ")


def test_monitor_follows_every_worker_of_a_multi_host_tpu(gcloud):
    """`tputui monitor --tpu NAME`: two TPU VM workers (127.0.0.1 and 127.0.0.2, one profiler port),
    each answering its own window; one block per worker and the slowest named."""
    from conftest import xplane
    from helpers.live import FakeProfiler, fake_server, response_with, tputui

    set_nodes, _ = gcloud
    slow, fast = xplane("jax_mlp").read_bytes(), xplane("jax_live_capture").read_bytes()
    with fake_server(FakeProfiler([response_with(fast)])) as a:
        port = int(a.rsplit(":", 1)[1])
        with fake_server(FakeProfiler([response_with(slow)]), host="127.0.0.2", port=port) as b:
            set_nodes({"tpu-vm": {"pod": node(endpoints=[("127.0.0.1", 8470), ("127.0.0.2", 8470)],
                                              apiVersion="V2")}})
            p = tputui("monitor", "--tpu", "pod", "--profiler-port", str(port), "--plain", "--num-queries", "1")
    assert p.returncode == 0, p.stderr
    blocks = [blk.splitlines() for blk in p.stdout.strip().split("\n\n")]
    assert sorted(blk[1] for blk in blocks) == [f"Worker: {a}", f"Worker: {b}"]
    steps = {blk[1]: next(ln for ln in blk if ln.startswith("Step time")) for blk in blocks}
    assert steps[f"Worker: {a}"].endswith("over 325 steps") and steps[f"Worker: {b}"].endswith("over 18 steps")
    slowest = [ln for blk in blocks for ln in blk if ln.startswith("Slowest worker: ")]
    assert slowest and slowest[-1].startswith(f"Slowest worker: {b} (")
    assert f"monitoring 2 workers: {a}, {b}" in p.stderr

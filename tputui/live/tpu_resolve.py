"""`--tpu NAME` -> profiler addresses, the way capture_tpu_profile resolved them.

`local` is this machine; a `host:port` passes through; any other NAME is a Cloud TPU, described
through `gcloud compute tpus ... describe` when gcloud is installed, else the Cloud TPU REST API
with the metadata server's credentials, and every worker (network endpoint) is followed.

Which port: on a TPU VM the profiler server lives in the user's job on a port they chose, so each
worker gets candidates (`--profiler-port`, else 9012 then 9999) tried in order with a short
deadline; only the old TPU Nodes have a fixed profiler port (8466, beside the runtime's 8470).
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tputui.live.client import LiveError, normalize_address, parse_addresses, server_answers

TPU_RUNTIME_PORT = 8470
TPU_PROFILER_PORT = 8466  # TPU Nodes only
# TPU VMs: where users start the profiler (XProf's docs use 9012, JAX's examples 9999), in order.
PROFILER_PORTS = (9012, 9999)
PROBE_TIMEOUT_S = 1.0
GCLOUD_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 10.0
METADATA_TIMEOUT_S = 2.0
TPU_API = "https://tpu.googleapis.com/v2"  # TPUTUI_TPU_API_URL overrides it (tests, private endpoints)


@dataclass(frozen=True)
class TpuQuery:
    name: str
    zone: str | None = None
    project: str | None = None
    port: int | None = None  # profiler port to use instead of the endpoints' (8470 -> 8466)


def _ports(q: TpuQuery) -> tuple[int, ...]:
    return (q.port,) if q.port else PROFILER_PORTS


def resolve_tpu(q: TpuQuery) -> list[list[str]]:
    """Each worker's candidate profiler addresses (`host:port`, in the order to try) of TPU `q.name`."""
    name = q.name.strip()
    if not name:
        raise LiveError("--tpu needs a name (a Cloud TPU name, 'local', or host:port)")
    if name == "local":
        return [[f"localhost:{p}" for p in _ports(q)]]
    if ":" in name and "/" not in name:
        return [[normalize_address(name)]]
    node = describe_with_gcloud(q) if shutil.which("gcloud") else describe_with_rest(q)
    return node_addresses(node, q)


def is_tpu_node(node: dict) -> bool:
    """An old TPU Node (the v1 API: a runtime on 8470 and the profiler on 8466), not a TPU VM."""
    return str(node.get("apiVersion", "")).upper().startswith("V1") or node.get("_api") == "node"


def node_addresses(node: dict, q: TpuQuery) -> list[list[str]]:
    """READY node -> its endpoints' candidate profiler addresses; a clear error for anything else."""
    state = node.get("state", "STATE_UNSPECIFIED")
    if state != "READY":
        raise LiveError(f"TPU {q.name} is {state}, not READY: wait for it to be READY and try again")
    out = []
    tpu_node = is_tpu_node(node)
    for ep in node.get("networkEndpoints") or []:
        ip = ep.get("ipAddress")
        if not ip:
            continue
        if tpu_node:
            port = int(ep.get("port") or TPU_RUNTIME_PORT)
            ports: tuple[int, ...] = (q.port or (TPU_PROFILER_PORT if port == TPU_RUNTIME_PORT else port),)
        else:
            ports = _ports(q)
        out.append([f"[{ip}]:{p}" if ":" in ip else f"{ip}:{p}" for p in ports])
    if not out:
        raise LiveError(f"TPU {q.name} has no network endpoints to profile")
    return out


def on_tpu_vm() -> bool:
    """This machine has TPU chips (the accel or vfio devices libtpu opens)."""
    return bool(glob.glob("/dev/accel[0-9]*") or glob.glob("/dev/vfio/[0-9]*"))


def pick_ports(workers: list[list[str]], say: Callable[[str], None] | None = None,
               answers: Callable[[str, float], bool] = server_answers, timeout: float = PROBE_TIMEOUT_S) -> list[str]:
    """The first candidate of each worker that answers (all workers at once); says which answered.

    A worker where none answers keeps its first candidate: the monitor then shows it failing
    (and retries), a capture reports it."""
    say = say or (lambda _m: None)
    if all(len(c) == 1 for c in workers):
        return [c[0] for c in workers]

    def first(cands: list[str]) -> str | None:
        return next((a for a in cands if answers(a, timeout)), None)

    with ThreadPoolExecutor(max_workers=min(16, len(workers))) as pool:
        found = list(pool.map(first, workers))
    tried = lambda c: ", ".join(a.rsplit(":", 1)[1] for a in c)  # noqa: E731
    if len(workers) == 1:
        c, a = workers[0], found[0]
        if a is None:
            say(f"no profiler server answered on {c[0].rsplit(':', 1)[0]} ports {tried(c)}; "
                f"following {c[0]} (start one with jax.profiler.start_server(PORT), or pass --profiler-port)")
        else:
            skipped = c[:c.index(a)]
            say(f"profiler server: {a} answered" + (f" ({tried(skipped)} did not)" if skipped else ""))
        return [a or c[0]]
    ok = [a for a in found if a]
    ports = sorted({a.rsplit(":", 1)[1] for a in ok})
    say(f"profiler servers: {len(ok)} of {len(workers)} workers answered (port {', '.join(ports) or '-'})")
    for c, a in zip(workers, found):
        if a is None:
            say(f"  {c[0].rsplit(':', 1)[0]}: none of ports {tried(c)} answered; following {c[0]}")
    return [a or c[0] for c, a in zip(workers, found)]


def _where(q: TpuQuery) -> str:
    bits = [f"zone {q.zone}" if q.zone else "", f"project {q.project}" if q.project else ""]
    bits = [b for b in bits if b]
    return f" ({', '.join(bits)})" if bits else ""


# --- gcloud --------------------------------------------------------------------------------
def describe_with_gcloud(q: TpuQuery) -> dict:
    """TPU VM API first (`tpu-vm describe`), then the TPU node API (`tpus describe`)."""
    # gcloud falls back to its compute/zone property; on a TPU VM without one, use the VM's zone.
    zone = q.zone or (None if os.environ.get("CLOUDSDK_COMPUTE_ZONE") else metadata_zone())
    q = TpuQuery(q.name, zone, q.project, q.port)
    first_error = None
    for group in (["compute", "tpus", "tpu-vm"], ["compute", "tpus"]):
        cmd = ["gcloud", *group, "describe", q.name, "--format=json"]
        if q.zone:
            cmd.append(f"--zone={q.zone}")
        if q.project:
            cmd.append(f"--project={q.project}")
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=GCLOUD_TIMEOUT_S,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise LiveError(f"gcloud did not answer within {GCLOUD_TIMEOUT_S:g} s describing TPU {q.name}") from None
        except OSError as e:
            raise LiveError(f"cannot run gcloud: {e.strerror or e}") from None
        if p.returncode == 0:
            try:
                return dict(json.loads(p.stdout), _api="node" if group[-1] == "tpus" else "tpu-vm")
            except json.JSONDecodeError:
                raise LiveError(f"gcloud printed no JSON describing TPU {q.name}") from None
        err = _gcloud_error_line(p.stderr)
        if "NOT_FOUND" not in err and "not found" not in err.lower():
            # Without a configured zone / project gcloud says "Error parsing [tpu]": say the fix.
            hint = (" (pass --zone and --project)" if not (q.zone and q.project)
                    and any(w in err.lower() for w in ("parsing", "zone", "project")) else "")
            raise LiveError(f"gcloud could not describe TPU {q.name}{_where(q)}: {err}{hint}")
        first_error = first_error or err
    raise LiveError(f"TPU {q.name} not found{_where(q)}: {first_error}")


def _gcloud_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("ERROR:"):
            return ln[len("ERROR:"):].strip()
    return lines[-1] if lines else "no error message"


# --- REST with metadata-server credentials --------------------------------------------------
def _metadata_base() -> str:
    host = os.environ.get("GCE_METADATA_HOST") or os.environ.get("GCE_METADATA_IP") or "169.254.169.254"
    return f"http://{host}/computeMetadata/v1"


def _metadata(path: str) -> str:
    req = urllib.request.Request(f"{_metadata_base()}/{path}", headers={"Metadata-Flavor": "Google"})
    with urllib.request.urlopen(req, timeout=METADATA_TIMEOUT_S) as r:
        return r.read().decode()


def metadata_zone() -> str | None:
    """This VM's zone from the GCE metadata server, or None off GCE."""
    try:
        return _metadata("instance/zone").rsplit("/", 1)[-1] or None
    except (OSError, ValueError):
        return None


def describe_with_rest(q: TpuQuery) -> dict:
    try:
        project = q.project or _metadata("project/project-id")
        zone = q.zone or _metadata("instance/zone").rsplit("/", 1)[-1]
        token = json.loads(_metadata("instance/service-accounts/default/token"))["access_token"]
    except (OSError, ValueError, KeyError):
        raise LiveError(
            f"cannot resolve TPU {q.name}: gcloud is not installed and the GCE metadata server "
            f"(credentials, project, zone) is not reachable; pass the profiler address instead") from None
    q = TpuQuery(q.name, zone, project, q.port)
    base = os.environ.get("TPUTUI_TPU_API_URL", TPU_API).rstrip("/")
    url = f"{base}/projects/{urllib.parse.quote(project)}/locations/{urllib.parse.quote(zone)}/nodes/{urllib.parse.quote(q.name)}"
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as r:
            return json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise LiveError(f"TPU {q.name} not found{_where(q)}") from None
        raise LiveError(f"the Cloud TPU API refused to describe TPU {q.name}{_where(q)}: HTTP {e.code} {e.reason}") from None
    except (OSError, ValueError) as e:
        raise LiveError(f"cannot reach the Cloud TPU API to describe TPU {q.name}: {e}") from None


# --- shared CLI flags (capture and monitor) -------------------------------------------------
def add_tpu_arguments(parser) -> None:
    g = parser.add_argument_group("Cloud TPU (instead of ADDRESS)")
    g.add_argument("--tpu", metavar="NAME",
                   help="profile a Cloud TPU: its name, 'local' (this TPU VM) or host:port")
    g.add_argument("--zone", help="the TPU's zone (default: gcloud's setting, or this VM's zone)")
    g.add_argument("--project", help="the TPU's project (default: gcloud's setting, or this VM's project)")
    ports = " then ".join(str(p) for p in PROFILER_PORTS)
    g.add_argument("--profiler-port", type=int, metavar="PORT",
                   help=f"the port your job started its profiler server on (default: try {ports}; "
                        f"TPU Nodes: {TPU_PROFILER_PORT})")


def addresses_from(address: str | None, tpu: str | None, zone=None, project=None, port=None,
                   say: Callable[[str], None] | None = None,
                   answers: Callable[[str, float], bool] = server_answers) -> list[str]:
    """The addresses to profile: an explicit ADDRESS list or the --tpu resolution (not both)."""
    if address and tpu:
        raise LiveError("give either ADDRESS or --tpu NAME, not both")
    if tpu:
        return pick_ports(resolve_tpu(TpuQuery(tpu, zone, project, port)), say, answers)
    if not address:
        raise LiveError("no profiler address given (host:port, grpc://host:port, or --tpu NAME)")
    return parse_addresses(address)

"""Build small synthetic TPU profiles that fire XProf's smart-suggestion rules, with XProf's outputs
beside them.

usage: python scripts/make_suggestion_fixtures.py [OUT_DIR] [--no-oracle] [--only NAME]
       (default tests/fixtures/suggestions)

XProf's open-source `smart_suggestion` tool runs only BarrierCoresRule; the other rules
(tputui/analysis/suggestion_rules.py) read figures of XProf's overview page, input pipeline and
op stats. Each fixture is one TPU v5 lite host with 4 TensorCores and 6 steps, built with
scripts/make_pod_fixtures.py's simulation, then bent so one bottleneck dominates:

  collective_bound   the all-reduce takes 1.1 ms more per step          -> CollectiveBoundRule
  input_bound        infeed takes 1.5 ms more, no host input ops         -> InputBoundRule
  host_input         as input_bound, plus tf.data iterators and infeed
                     enqueue ops on the host (enqueuing a third of the
                     time: XProf's enqueue share of input time)           -> DataTransferBoundRule,
                                                                             HostProcessingBoundRule
  compute_bound      the host's MXU utilization counter reads 82.5%       -> ComputeBoundRule
  memory_bound       MXU 12%, ops move 2x the bytes                       -> MemoryBoundRule
  tc_idle            MXU 5%, ops move 1/5 of the bytes, 0.7 ms gap per step
                     inside the step                                      -> TensorCoreIdleBoundRule
  data_shuffle       two fusions become a gather and a sort, the gather
                     0.4 ms longer                                        -> DataShuffleBoundRule
  debug_print        a `debug_print` op and a `barrier-cores` op of the
                     same length each step                                -> DebugPrintRule and
                                                                             (XProf too) BarrierCoresRule

`oracle/` holds XProf 2.24.2's outputs (../shared/tools/oracle.py under XPROF_PYTHON, default
/work/xvenv/bin/python): overview_page, input_pipeline_analyzer, pod_viewer, hlo_stats and
smart_suggestion. The tests check the rules' signals against them.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import make_pod_fixtures as pods  # noqa: E402

ORACLE_PY = os.environ.get("XPROF_PYTHON", "/work/xvenv/bin/python")
ORACLE = os.environ.get("XPROF_ORACLE", "/work/shared/tools/oracle.py")
TOOLS = ("overview_page", "input_pipeline_analyzer", "pod_viewer", "hlo_stats", "smart_suggestion")
US = pods.US


@dataclass
class Bend:
    """How one fixture departs from the plain pod simulation."""
    name: str
    grow: dict[str, int] = field(default_factory=dict)  # op name -> extra us of duration
    gap_after: dict[str, int] = field(default_factory=dict)  # op name -> idle us after it
    rename: dict[str, tuple[str, str]] = field(default_factory=dict)  # op name -> (new name, category)
    bytes_factor: float = 1.0
    mxu_percent: float | None = None  # the host plane's matrix_unit_utilization_percent counter
    host_input: bool = False  # tf.data iterators and infeed enqueues on the host
    add_after: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # op -> (new op, category, us)


BENDS = [
    Bend("collective_bound", grow={"all-reduce.3": 1100}, rename={"all-gather.5": ("fusion.5", "loop fusion")}),
    Bend("input_bound", grow={"infeed.0": 1500}),
    Bend("host_input", grow={"infeed.0": 1500}, host_input=True),
    Bend("compute_bound", mxu_percent=82.5, bytes_factor=0.5),
    Bend("memory_bound", mxu_percent=12.0, bytes_factor=2.0),
    Bend("tc_idle", mxu_percent=5.0, bytes_factor=0.2, gap_after={"fusion.14": 700}),
    Bend("data_shuffle", grow={"fusion.13": 400},
         rename={"fusion.13": ("gather.13", "gather"), "fusion.14": ("sort.14", "sort")}),
    Bend("debug_print", grow={"copy.6": 420}, rename={"copy.6": ("debug_print.6", "custom-call")},
         add_after={"copy.6": ("barrier-cores.8", "barrier-cores", 450)}),
]


def bend_sim(sim: dict, b: Bend) -> dict:
    """Apply `b` to every core alike, shifting later ops and steps so nothing overlaps."""
    for steps in sim.values():
        shift = 0
        out = []
        for s0, s1, ops in steps:
            s0 += shift
            new_ops = []
            for op in ops:
                name = op.name
                op.start += shift
                for ch in op.children:
                    ch.start += shift
                op.bytes_accessed = int(op.bytes_accessed * b.bytes_factor)
                for ch in op.children:
                    ch.bytes_accessed = int(ch.bytes_accessed * b.bytes_factor)
                extra = b.grow.get(name, 0) * US
                op.dur += extra
                shift += extra
                if name in b.rename:
                    op.name, op.category = b.rename[name]
                new_ops.append(op)
                if name in b.add_after:
                    n, cat, dur_us = b.add_after[name]
                    new_ops.append(pods.Op(n, cat, op.start + op.dur + US, dur_us * US))
                    shift += (dur_us + 1) * US
                shift += b.gap_after.get(name, 0) * US
            out.append((s0, s1 + shift, new_ops))
        steps[:] = out
    return sim


def _builder(plane) -> pods.PlaneBuilder:
    """A PlaneBuilder over an existing plane, its metadata ids kept."""
    pb = pods.PlaneBuilder(plane)
    pb._events = {(m.name, m.display_name): i for i, m in plane.event_metadata.items()}
    pb._stats = {m.name: i for i, m in plane.stat_metadata.items()}
    return pb


# Host input ops per step (name, us): XProf's input categories read the TF op type / iterator name.
ENQUEUE = ("input_pipeline_task0/while/InfeedQueue/enqueue/0:InfeedEnqueueTuple", 1500)
ITERATORS = [("Iterator::Root::Prefetch::ParallelMapV2", 300),
             ("Iterator::Root::Prefetch::ParallelMapV2::TFRecord", 300)]


def add_host(xs, b: Bend, sim: dict) -> None:
    cpu = next(p for p in xs.planes if p.name == "/host:CPU")
    pb = _builder(cpu)
    if b.mxu_percent is not None:
        pb.add_stats(cpu, {"matrix_unit_utilization_percent": float(b.mxu_percent)})
    if not b.host_input:
        return
    enq, it = pb.line(6001, "tf_Compute"), pb.line(6002, "tf_data_iterator_get_next")
    for s0, _s1, _ops in sim[(0, 0)]:
        pb.event(enq, pb.metadata(ENQUEUE[0]), s0 + 100 * US, ENQUEUE[1] * US)
        t = s0 + 50 * US
        for name, dur in ITERATORS:
            pb.event(it, pb.metadata(name), t, dur * US)
            t += (dur + 10) * US


def build(b: Bend, run_dir: pathlib.Path) -> list[pathlib.Path]:
    spec = pods.PodSpec(b.name, "TPU v5 lite", hosts_per_slice=1, chips_per_host=4, cores_per_chip=1, steps=6,
                        seed=11, host_prefix=f"{b.name.replace('_', '-')}-w")
    run_dir.mkdir(parents=True, exist_ok=True)
    sim = bend_sim(pods.simulate(spec), b)
    hlo = pods.hlo_module_proto(spec)
    xs = pods.build_host(spec, 0, sim, hlo)
    add_host(xs, b, sim)
    path = run_dir / f"{spec.host_name(0)}.xplane.pb"
    path.write_bytes(xs.SerializeToString())
    return [path]


def run_oracle(logdir: pathlib.Path, tool: str) -> bytes:
    return subprocess.run([ORACLE_PY, ORACLE, str(logdir), tool], check=True, capture_output=True,
                          timeout=600).stdout


def main(argv: list[str] | None = None, oracle: Callable[[pathlib.Path, str], bytes] = run_oracle) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=str(ROOT / "tests" / "fixtures" / "suggestions"))
    ap.add_argument("--no-oracle", action="store_true")
    ap.add_argument("--only", help="build one fixture by name")
    a = ap.parse_args(argv)
    out = pathlib.Path(a.out)
    for b in BENDS:
        if a.only and b.name != a.only:
            continue
        base = out / b.name
        shutil.rmtree(base, ignore_errors=True)
        paths = build(b, base / "plugins" / "profile" / pods.RUN)
        print(f"{b.name}: {sum(p.stat().st_size for p in paths)} bytes")
        if a.no_oracle:
            continue
        od = base / "oracle"
        od.mkdir(parents=True, exist_ok=True)
        index = {"tool": "xprof 2.24.2 via shared/tools/oracle.py", "outputs": {}}
        for tool in TOOLS:
            (od / f"{tool}.json").write_bytes(oracle(base, tool))
            index["outputs"][tool] = f"{tool}.json"
        (od / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()

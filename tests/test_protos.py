"""The generated protobuf modules are current, and our XSpace proto reads real files."""
from __future__ import annotations

import importlib.util

from conftest import ROOT


def test_generated_modules_are_current(tmp_path):
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    fresh = {p.name: p.read_text() for p in gen.generate(tmp_path)}
    committed = {p.name: p.read_text() for p in (ROOT / "tputui" / "proto").glob("*.py")}
    assert sorted(fresh) == sorted(committed), "run scripts/gen_protos.py"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"stale generated modules (run scripts/gen_protos.py): {stale}"


def test_profile_request_wire_numbers():
    from tputui.proto import profiler_service_pb2 as ps

    f = ps.ProfileRequest.DESCRIPTOR.fields_by_name
    assert (f["duration_ms"].number, f["opts"].number, f["repository_root"].number,
            f["session_id"].number, f["host_name"].number, f["emit_xspace"].number) == (1, 4, 5, 6, 7, 9)
    assert ps.ProfileResponse.DESCRIPTOR.fields_by_name["xspace"].number == 8
    mr = ps.ProfilerServiceMonitorResult.DESCRIPTOR.fields_by_name
    assert mr["step_time_ms_avg"].number == 4 and mr["infeed_percent_max"].number == 9

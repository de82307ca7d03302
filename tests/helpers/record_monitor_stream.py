"""Record tests/fixtures/live/monitor_stream.jsonl: monitor samples from a real JAX profiler server
(tests/helpers/live_server.py), then the error samples once that server is killed mid-monitor.

usage (from the repo root): python tests/helpers/record_monitor_stream.py [--samples 12]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from helpers.live import LiveServer  # noqa: E402

from tputui.live import monitor  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "live" / "monitor_stream.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=12)
    ap.add_argument("--errors", type=int, default=3)
    a = ap.parse_args()
    server = LiveServer(seconds=120)
    try:
        session = monitor.MonitorSession(server.address, duration_ms=500)
        samples = list(session.samples(a.samples))
        server.stop()
        monitor.BACKOFF_S = (1.0, 2.0, 4.0)  # recorded as the real schedule; no need to wait it out here
        session._stop.wait = lambda _t: False  # type: ignore[method-assign]  # no real back-off waits
        samples += list(session.samples(a.errors))
    finally:
        server.stop()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w") as f:
        for s in samples:
            f.write(json.dumps(s.to_json(), sort_keys=True) + "\n")
    print(f"wrote {len(samples)} samples to {OUT}")


if __name__ == "__main__":
    main()

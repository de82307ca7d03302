"""Record what Google's tpu-info (0.14.2) reads from our fake libtpu server, as the oracle for
tests/test_live_runtime_metrics.py: tests/fixtures/live/tpu_info_<layout>.json.

usage: python record_tpu_info_oracle.py TPU_INFO_PYTHON   (an interpreter with tpu-info installed)
The server runs with this interpreter (frozen at tick 3, so every read sees the same values);
tpu-info's own functions read it from the other interpreter.
"""
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parent / "fixtures" / "live"
CHIPS = {"v5e-4": "V5E", "v3-8": "V3"}
READ = r'''
import json, sys
from tpu_info import device, metrics
addr, chip = sys.argv[1], getattr(device.TpuChip, sys.argv[2])
out = {"usage": [list(u) for u in metrics.get_chip_usage(chip, addr)],
       "hlo_queue": [list(q) for q in metrics.get_hlo_queue_size(chip, addr)],
       "hlo_exec": [list(t) for t in metrics.get_hlo_exec_timing(chip, addr)],
       "dcn": [list(x) for x in metrics.get_transfer_latency("buffer_transfer_latency", addr)],
       "collective": [list(x) for x in metrics.get_transfer_latency("collective_e2e_latency", addr)]}
print(json.dumps(out))
'''


def main() -> None:
    tpu_info_python = sys.argv[1]
    for layout, chip in CHIPS.items():
        server = subprocess.Popen([sys.executable, str(HERE / "libtpu_server.py"), "--port", "0", "--layout", layout,
                                   "--frozen", "3"], stdout=subprocess.PIPE, text=True)
        try:
            address = server.stdout.readline().split()[1]
            got = subprocess.run([tpu_info_python, "-c", READ, address, chip], capture_output=True, text=True,
                                 check=True, timeout=60).stdout
        finally:
            server.kill()
        (OUT / f"tpu_info_{layout}.json").write_text(json.dumps(json.loads(got), indent=1) + "\n")
        print(OUT / f"tpu_info_{layout}.json")


if __name__ == "__main__":
    main()

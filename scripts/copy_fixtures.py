"""Copy the shared real profiles and XProf's oracle outputs into tests/fixtures/.

usage: python scripts/copy_fixtures.py [SHARED_PROFILES_DIR]   (default ../shared/profiles)

Big trace_viewer JSONs are not copied; they are reduced to a digest of XProf's
complete ("X") and instant ("i") events: per event its pid, tid, ts and dur in ns and its
name, sorted (oracle/trace_viewer.digest.npz). The test compares our export to it.
"""
from __future__ import annotations

import gzip
import json
import pathlib
import shutil
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEST = ROOT / "tests" / "fixtures" / "profiles"
SKIP = {"trace_viewer.json", "trace_viewer.json.gz", "trace_viewer_stream.json", "trace_viewer_stream.json.gz"}


def digest(trace_file: pathlib.Path, out: pathlib.Path) -> None:
    raw = trace_file.read_bytes()
    if trace_file.suffix == ".gz":
        raw = gzip.decompress(raw)
    events = json.loads(raw)["traceEvents"]
    rows = [e for e in events if e.get("ph") in ("X", "i")]
    names = sorted({e["name"] for e in rows})
    index = {n: i for i, n in enumerate(names)}
    arr = np.array([(int(e["pid"]), int(e.get("tid", 0)), round(float(e["ts"]) * 1000),
                     round(float(e.get("dur", 0)) * 1000), index[e["name"]], e["ph"] == "X")
                    for e in rows], dtype=np.int64).reshape(-1, 6)
    arr = arr[np.lexsort(arr.T[::-1])]
    np.savez_compressed(out, events=arr, names=np.array(names, dtype=object).astype(str))


def main(src: pathlib.Path) -> None:
    for prof in sorted(p for p in src.iterdir() if p.is_dir()):
        dst = DEST / prof.name
        shutil.rmtree(dst, ignore_errors=True)
        for f in sorted(prof.rglob("*")):
            if f.is_dir():
                continue
            rel = f.relative_to(prof)
            if rel.name in SKIP or rel.suffix == ".long_txt" or "graph_viewer" in rel.parts:
                if rel.name.startswith("trace_viewer.json"):
                    out = dst / rel.parent / "trace_viewer.digest.npz"
                    out.parent.mkdir(parents=True, exist_ok=True)
                    digest(f, out)
                continue
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dst / rel)
        print(prof.name, sum(p.stat().st_size for p in dst.rglob("*") if p.is_file()))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "profiles")

"""Regenerate tputui/proto/*_pb2.py from protos/*.proto.

usage: python scripts/gen_protos.py [OUT_DIR]   (default: tputui/proto)

Needs grpcio-tools (a test extra). The generated files are committed; a test
regenerates them into a temp dir and fails when the committed ones are stale.
"""
from __future__ import annotations

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROTOS = ROOT / "protos"
# Files whose gRPC stubs we also generate.
SERVICES = {"profiler_service.proto", "tpu_metric_service.proto"}


def generate(out_dir: pathlib.Path) -> list[pathlib.Path]:
    from grpc_tools import protoc  # imported here: only this script needs it

    out_dir.mkdir(parents=True, exist_ok=True)
    # protoc.main() does not add the well-known types (google/protobuf/timestamp.proto) on its own.
    well_known = pathlib.Path(protoc.__file__).parent / "_proto"
    written = []
    for proto in sorted(PROTOS.glob("*.proto")):
        args = ["protoc", f"-I{PROTOS}", f"-I{well_known}", f"--python_out={out_dir}"]
        if proto.name in SERVICES:
            args.append(f"--grpc_python_out={out_dir}")
        args.append(str(proto))
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed on {proto.name}")
    names = [p.stem for p in PROTOS.glob("*.proto")]
    for py in sorted(out_dir.glob("*_pb2*.py")):
        text = py.read_text()
        # protoc writes flat imports (`import xplane_pb2`); make them package-relative.
        for name in names:
            text = re.sub(rf"^import {name}_pb2 as", f"from . import {name}_pb2 as", text, flags=re.M)
        py.write_text(text)
        written.append(py)
    init = out_dir / "__init__.py"
    init.write_text('"""Generated protobuf modules (scripts/gen_protos.py). Do not edit."""\n')
    written.append(init)
    return written


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tputui" / "proto"
    for path in generate(out):
        print(path.relative_to(out.parent) if out.parent in path.parents else path)

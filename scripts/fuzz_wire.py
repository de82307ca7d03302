"""Fuzz target: the XSpace decoders (C fast path and protobuf reference) on mutated profiles.

usage: python scripts/fuzz_wire.py [--seconds N] [--runs N] [--corpus DIR] [LIBFUZZER_ARGS ...]

Each input goes through both decoders; the target fails on a crash, on any exception other
than a clean rejection (ValueError), on the two decoders disagreeing (accept / reject, or the
content), and on accepted output that does not validate (`raw.validate`). The corpus is seeded
from the fixtures' profiles (small cuts of each, tests/helpers/xspace_corpus.py), and the
structure-aware mutator there runs beside libFuzzer's byte mutations.

Coverage: the Python side through atheris; the C decoder is compiled again for the campaign
with gcc's comparison tracing (-fsanitize-coverage=trace-cmp, which atheris's libFuzzer reads
as value profile) into the cache dir and used instead of the installed build (--no-instrument
keeps the installed one, e.g. without gcc).

CI runs a bounded campaign (`--seconds 60`); by hand, run it longer. Without atheris
(`pip install 'tputui[fuzz]'`) it says so and exits 0, so CI skips cleanly. Findings are
written under the user cache dir (never into the repository), and their paths printed.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers.xspace_corpus import mutate, seeds  # noqa: E402

from tputui.data import storage  # noqa: E402
from tputui.data.raw import decode_with_protobuf, validate  # noqa: E402

PROFILES = ROOT / "tests" / "fixtures" / "profiles"


def instrumented_wire(folder: pathlib.Path) -> str | None:
    """Build _wire.c with comparison tracing into `folder` and make it tputui.data._wire for
    this process (before tputui.data.wire is imported). None when gcc is missing or fails."""
    import atheris

    gcc = shutil.which("gcc")
    # The tracing hooks are atheris's libFuzzer core (the copy Setup loaded): link against it.
    core = next(pathlib.Path(atheris.__file__).parent.glob("core_with_libfuzzer*.so"), None)
    if not gcc or core is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / ("_wire" + sysconfig.get_config_var("EXT_SUFFIX"))
    cmd = [gcc, "-shared", "-fPIC", "-O1", "-g", "-std=c99", "-fsanitize-coverage=trace-cmp",
           f"-I{sysconfig.get_paths()['include']}", str(ROOT / "tputui" / "data" / "_wire.c"), "-o", str(target),
           str(core), f"-Wl,-rpath,{core.parent}"]
    if subprocess.run(cmd, capture_output=True).returncode:
        return None
    spec = importlib.util.spec_from_file_location("tputui.data._wire", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["tputui.data._wire"] = module
    return str(target)


def _wire_decode(data: bytes):
    from tputui.data import wire  # after instrumented_wire, when the campaign uses it

    return wire.decode(data)


def decode_both(data: bytes) -> tuple:
    """(C result, protobuf result), each a RawXSpace or None when that decoder rejects the input."""
    out = []
    for decode in (_wire_decode, decode_with_protobuf):
        try:
            out.append(decode(data))
        except ValueError:  # a clean rejection (the CLI turns it into one line)
            out.append(None)
    return tuple(out)


def check_one(data: bytes) -> None:
    """The property under test; raises AssertionError on a finding."""
    fast, ref = decode_both(data)
    if (fast is None) != (ref is None):
        raise AssertionError(f"decoders disagree: C {'rejects' if fast is None else 'accepts'}, "
                             f"protobuf {'rejects' if ref is None else 'accepts'}")
    if fast is None:
        return
    validate(fast)
    validate(ref)
    if summary(fast) != summary(ref):
        raise AssertionError("decoders accept with different content")


def summary(raw) -> tuple:
    """Order-independent content (map entries sorted; everything else in file order)."""
    em = sorted(zip(raw.em_plane.tolist(), raw.em_id.tolist(), raw.em_name, raw.em_display_name))
    sm = sorted(zip(raw.sm_plane.tolist(), raw.sm_id.tolist(), raw.sm_name, raw.sm_description))
    return (raw.plane_id.tolist(), raw.plane_name, raw.line_name, raw.line_display_name, raw.line_id.tolist(),
            raw.line_num_events.tolist(), raw.event_metadata_id.tolist(), raw.event_offset_ps.tolist(),
            raw.event_duration_ps.tolist(), raw.event_num_occurrences.tolist(), raw.hostnames, raw.errors,
            raw.warnings, em, sm, len(raw.event_stats.owner), len(raw.metadata_stats.owner),
            len(raw.plane_stats.owner), sorted(raw.strings), len(raw.blobs))


def write_seeds(folder: pathlib.Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    found = seeds(PROFILES)
    for i, data in enumerate(found):
        (folder / f"seed-{i:03d}").write_bytes(data)
    return len(found)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, help="stop after this many seconds (libFuzzer -max_total_time)")
    p.add_argument("--runs", type=int, help="stop after this many inputs (libFuzzer -runs)")
    p.add_argument("--corpus", help="corpus folder (default: a fresh one seeded from the fixtures)")
    p.add_argument("--no-instrument", action="store_true", help="use the installed C decoder as it is")
    a, rest = p.parse_known_args(argv)
    try:
        import atheris
    except ImportError:
        print("fuzz_wire: atheris is not installed (pip install 'tputui[fuzz]'); fuzz campaign skipped")
        return 0
    out = pathlib.Path(storage.cache_root()) / "fuzz-findings"
    out.mkdir(parents=True, exist_ok=True)
    corpus = pathlib.Path(a.corpus) if a.corpus else pathlib.Path(tempfile.mkdtemp(prefix="tputui-fuzz-"))
    if not any(corpus.glob("*")):
        print(f"fuzz_wire: {write_seeds(corpus)} seeds from {PROFILES} in {corpus}")
    args = [sys.argv[0], str(corpus), f"-artifact_prefix={out}{os.sep}", "-rss_limit_mb=2048", "-timeout=10",
            "-use_value_profile=1"]
    if a.seconds:
        args.append(f"-max_total_time={a.seconds}")
    if a.runs:
        args.append(f"-runs={a.runs}")

    def one_input(data: bytes) -> None:
        check_one(data)

    def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if rng.random() < 0.3:  # libFuzzer's own byte-level mutations a third of the time
            return atheris.Mutate(data, max_size)
        return mutate(data, rng)[:max_size]

    atheris.Setup(args + rest, one_input, custom_mutator=custom_mutator)
    # After Setup: the tracing hooks our build calls live in the libFuzzer core Setup loads.
    built = None if a.no_instrument else instrumented_wire(pathlib.Path(storage.cache_root()) / "fuzz-build")
    print(f"fuzz_wire: C decoder {'with comparison tracing: ' + built if built else 'as installed'}")
    with atheris.instrument_imports(include=["tputui.data"]):
        from tputui.data import wire  # noqa: F401  (Python-side coverage of the decoder glue)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The TPU runtime's own log (`tpu_driver.INFO`), read beside a profile.

libtpu writes a glog file per process under /tmp/tpu_logs (`tpu_driver.INFO` links to the newest).
The Cloud TPU performance guide reads three things from it, and so do we:
- how long TPU initialization took (`CreateTpuSystemState: TPU initialization is successful and it
  took 5.583190661s`): over 15 s, the premapped host buffer may be too large;
- the size of that buffer (`using TPU host premapped buffer of size: 4294967296`; 4 GiB by
  default, set with TPU_PREMAPPED_BUFFER_SIZE, a multiple of 4096);
- allocations that did not fit in it (`Allocating buffer from premapped region failed with:
  RESOURCE_EXHAUSTED: Attempting to allocate 8.00M. That was not possible. There are 6.43M free.`).
The log is the machine's, not the profile's: results name the file they came from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tputui.analysis.perf_guide import Check, Finding
from tputui.analysis.tpu_log_files import find_log
from tputui.errors import UserError

SLOW_INIT_SECONDS = 15.0  # the guide: a too-large buffer can make initialization take over 15 s
DEFAULT_BUFFER_BYTES = 4294967296

_INIT = re.compile(r"TPU initialization is successful and it took ([0-9.]+)\s*s")
_BUFFER = re.compile(r"premapped buffer of size:?\s*(\d+)")
_FAILED = re.compile(r"premapped region failed.*RESOURCE_EXHAUSTED:?\s*(.*)$")
_SIZES = re.compile(r"allocate ([0-9.]+\s*[KMGT]?i?B?)\b.*?There (?:are|is) ([0-9.]+\s*[KMGT]?i?B?) free", re.I)


@dataclass
class TpuRuntime:
    """What the runtime log says about this machine's TPU start-up and premapped buffer."""

    log: str  # the file read
    init_seconds: float | None = None  # the last successful initialization's time
    premapped_buffer_bytes: int | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)  # line, message, requested, free

    def to_json(self) -> dict[str, Any]:
        return {"init_seconds": self.init_seconds, "premapped_buffer_bytes": self.premapped_buffer_bytes,
                "premapped_allocation_failures": len(self.failures), "log": self.log}


def parse_lines(lines, log: str = "") -> TpuRuntime:
    out = TpuRuntime(log=log)
    for n, line in enumerate(lines, 1):
        if "premapped" not in line and "initialization" not in line:
            continue  # most lines: one substring test each
        if m := _INIT.search(line):
            out.init_seconds = float(m.group(1))
        elif m := _BUFFER.search(line):
            out.premapped_buffer_bytes = int(m.group(1))
        elif m := _FAILED.search(line):
            sizes = _SIZES.search(m.group(1))
            out.failures.append({"line": n, "message": m.group(1).strip(),
                                 "requested": sizes.group(1).strip() if sizes else "",
                                 "free": sizes.group(2).strip() if sizes else ""})
    return out


def read(path: str | None) -> TpuRuntime | None:
    """The runtime log under `path` parsed; None when `path` is None or holds no log."""
    log = find_log(path) if path else None
    if log is None:
        return None
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            return parse_lines(f, log)
    except OSError as e:
        raise UserError(f"cannot read the TPU runtime log {log}: {(e.strerror or str(e)).lower()}") from None


def checks(rt: TpuRuntime | None) -> list[Check]:
    """The guide's two diagnoses: premapped-buffer allocation failures, slow initialization."""
    if rt is None:
        return []
    out = []
    size = rt.premapped_buffer_bytes
    size_text = f"{size:,} bytes" if size else f"the default {DEFAULT_BUFFER_BYTES:,} bytes"
    if rt.failures:
        first = rt.failures[0]
        want = f" (first: {first['requested']} requested, {first['free']} free)" if first["requested"] else ""
        out.append(Check(
            "premapped_buffer_exhausted", "Host transfers did not fit in the TPU premapped buffer", "high",
            f"The TPU runtime log ({rt.log}) has {len(rt.failures)} RESOURCE_EXHAUSTED allocation failure(s) from "
            f"the premapped host buffer{want}; the buffer is {size_text}.",
            "Raise TPU_PREMAPPED_BUFFER_SIZE (bytes, a multiple of 4096) so the largest host<->device transfer "
            "fits, or lower TPU_PREMAPPED_BUFFER_TRANSFER_THRESHOLD_BYTES so that transfers above it do not go "
            "through the premapped buffer; a larger buffer pins more host memory.",
            [Finding("premapped buffer", "", {"log_line": f["line"], "requested": f["requested"], "free": f["free"]})
             for f in rt.failures[:50]]))
    if rt.init_seconds is not None and rt.init_seconds > SLOW_INIT_SECONDS:
        out.append(Check(
            "slow_tpu_init", "TPU initialization was slow", "medium",
            f"TPU initialization took {rt.init_seconds:.1f} s (over {SLOW_INIT_SECONDS:.0f} s) by the runtime log "
            f"({rt.log}); the premapped host buffer is {size_text}. A buffer that is too large makes "
            "initialization slow enough to look like a hung TPU.",
            "Lower TPU_PREMAPPED_BUFFER_SIZE (bytes, a multiple of 4096; the default is 4294967296) unless your "
            "transfers need it.",
            [Finding("TPU initialization", "", {"init_seconds": rt.init_seconds,
                                                "premapped_buffer_bytes": size})]))
    return out

"""Memory viewer: what an XLA program keeps in device memory, from its compiled HLO.

Each XLA program in a profile has an `Hlo Proto` stat (a serialized `xla.HloProto`) on an
event metadata of the `/host:metadata` plane. Its buffer assignment says which logical
buffers share which allocations, and its heap-simulator trace replays allocations in program
order. We replay that trace the way XProf's memory viewer does
(xprof/convert/hlo_proto_to_memory_visualization_utils.cc): the heap size at every program
point, the peak and the buffers live there (in program order and by size), buffers of
"indefinite" lifetime (parameters, outputs, constants, thread-local) added on top, buffers
smaller than 16 KiB folded into one "small" entry. One memory space (XLA memory color) at a
time: 0 = HBM, 1 = VMEM, 5 = host, ...

Where XProf iterates a hash map (the order of indefinite buffers, which temporary allocation's
trace to replay when several exist), we use allocation index order.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tputui.analysis import host_map
from tputui.analysis.hbm_capacity import Headroom, device_capacity, device_kind, headroom
from tputui.analysis.hlo_modules import HloModuleEntry, find_module, hlo_modules  # noqa: F401 (re-exported)
from tputui.analysis.hlo_shape import shape_text, subshape, unpadded_bytes
from tputui.analysis.result import NoDataError
from tputui.data.run_data import RunData
from tputui.errors import UserError
from tputui.proto import hlo_pb2

SMALL_BUFFER_BYTES = 16 * 1024  # XProf's default small_buffer_size
MIB = float(1 << 20)

# Names XProf's memory viewer gives the memory spaces (XLA memory colors) it offers.
MEMORY_SPACE_NAMES = {0: "HBM", 1: "VMEM", 2: "Sflag", 3: "CMEM", 4: "SMEM", 5: "Host", 6: "SparseCore"}

_EV = hlo_pb2.HeapSimulatorTrace.Event
ALLOC, FREE, SHARE_WITH = _EV.ALLOC, _EV.FREE, _EV.SHARE_WITH


def memory_space_name(color: int) -> str:
    return MEMORY_SPACE_NAMES.get(color, f"space {color}")


def to_mib(n_bytes: int | float) -> float:
    return n_bytes / MIB


def has_data(run: RunData) -> bool:
    return host_map.has_hlo_modules(run)


# --- the replay ---------------------------------------------------------------------------
@dataclass
class _Buffer:
    """A logical buffer with its allocation, defining instruction and replay state."""

    id: int
    size: int
    color: int
    offset: int
    alloc: Any  # BufferAllocationProto
    instr: Any  # HloInstructionProto
    shape_index: tuple[int, ...]
    shape: Any  # ShapeProto of the defined subshape
    unpadded: int
    span: list[int] | None = None
    span_closed: bool = False
    ref_count: int = 0
    canonical: _Buffer | None = None

    def inc(self) -> int:
        if self.canonical is not None:
            return self.canonical.inc()
        self.ref_count += 1
        return self.ref_count

    def dec(self) -> int:
        if self.canonical is not None:
            return self.canonical.dec()
        self.ref_count -= 1
        return self.ref_count

    def root(self) -> _Buffer:
        return self.canonical.root() if self.canonical is not None else self

    @property
    def name_with_index(self) -> str:
        if not self.shape_index:
            return self.instr.name
        return f"{self.instr.name}{{{','.join(map(str, self.shape_index))}}}"


def _category(a) -> str:
    if a.is_entry_computation_parameter:
        return "Parameter"
    if a.maybe_live_out:
        return "Output"
    if a.is_thread_local:
        return "Thread-local"
    if a.is_constant:
        return "Constant"
    return "Temporary"


def _indefinite(a) -> bool:
    """Live for the whole program. XProf 2.24 leaves thread-local allocations out (they are not
    in device memory), so they count neither here nor in the total."""
    return not a.is_thread_local and (a.is_entry_computation_parameter or a.is_constant or a.maybe_live_out)


def _reusable(a) -> bool:
    return not a.is_thread_local and not a.is_tuple


class _Module:
    """Lookup tables over one HloProto (XProf's HloProtoBufferWrapper)."""

    def __init__(self, proto: hlo_pb2.HloProto):
        self.proto = proto
        instrs = {i.id: i for c in proto.hlo_module.computations for i in c.instructions}
        lb_protos = {lb.id: lb for lb in proto.buffer_assignment.logical_buffers}
        self.allocations = sorted(proto.buffer_assignment.buffer_allocations, key=lambda a: a.index)
        self.buffers: dict[int, _Buffer] = {}
        self.trace_of_alloc: dict[int, int] = {}
        for a in self.allocations:
            for asg in a.assigned:
                lb = lb_protos.get(asg.logical_buffer_id)
                if lb is None:
                    continue
                instr = instrs.get(lb.defined_at.instruction_id)
                if instr is None:
                    continue
                index = tuple(lb.defined_at.shape_index)
                shape = subshape(instr.shape, index)
                self.buffers[lb.id] = _Buffer(lb.id, lb.size, lb.color, asg.offset, a, instr, index,
                                              shape, unpadded_bytes(shape))
        # A trace's own buffer_allocation_index is not trusted: its first event's buffer says.
        for i, trace in enumerate(proto.buffer_assignment.heap_simulator_traces):
            if trace.events and trace.events[0].buffer_id in self.buffers:
                self.trace_of_alloc[self.buffers[trace.events[0].buffer_id].alloc.index] = i

    def allocations_of(self, color: int) -> list:
        return [a for a in self.allocations if a.color == color]

    def trace_for(self, color: int) -> int:
        for a in self.allocations_of(color):
            if not _indefinite(a) and a.index in self.trace_of_alloc:
                return self.trace_of_alloc[a.index]
        # Else the trace with the most events on buffers of this color.
        best, best_count = -1, 0
        for i, trace in enumerate(self.proto.buffer_assignment.heap_simulator_traces):
            n = sum(1 for e in trace.events if e.buffer_id in self.buffers and self.buffers[e.buffer_id].color == color)
            if n > best_count:
                best, best_count = i, n
        return best

    def memory_spaces(self) -> list[int]:
        return sorted({a.color for a in self.allocations})


@dataclass
class PeakBuffer:
    """One bar of the peak-usage chart: a logical buffer live at the peak (or the small ones)."""

    number: int  # XProf's colour number: the position in program order
    label: str
    logical_buffer_id: int  # -1 for the folded small buffers
    size_bytes: int
    unpadded_bytes: int
    name: str = ""  # instruction name with shape index, e.g. "copy-start{1}"
    category: str = ""  # Parameter / Output / Thread-local / Constant / Temporary
    shape: str = ""
    tf_op_name: str = ""
    op_code: str = ""
    source_file: str = ""
    source_line: int = 0
    stack_frame: str = ""
    op_category: str = ""  # the op's kind: "loop fusion", "output fusion", ... for fusions, else the opcode

    @property
    def is_small(self) -> bool:
        return self.logical_buffer_id == -1

    @property
    def size_mib(self) -> float:
        return to_mib(self.size_bytes)

    @property
    def unpadded_mib(self) -> float:
        return to_mib(self.unpadded_bytes)

    @property
    def extra_bytes(self) -> int:
        """Padding the layout adds on top of the data (XProf's "extra memory")."""
        return self.size_bytes - self.unpadded_bytes if self.unpadded_bytes else 0

    @property
    def expansion(self) -> float | None:
        return self.size_bytes / self.unpadded_bytes if self.unpadded_bytes else None


def _source_info(instr, index) -> tuple[str, int, str]:
    """(file, line, stack) as XProf's GetSourceInfo: the innermost stack frame, else metadata."""
    frames = []
    frame_id = instr.metadata.stack_frame_id
    while 0 < frame_id <= len(index.stack_frames):
        frame = index.stack_frames[frame_id - 1]
        frame_id = frame.parent_frame_id
        file_name, line, column = "", -1, -1
        loc_id = frame.file_location_id
        if 0 < loc_id <= len(index.file_locations):
            loc = index.file_locations[loc_id - 1]
            line, column = loc.line, loc.column
            if 0 < loc.file_name_id <= len(index.file_names):
                file_name = index.file_names[loc.file_name_id - 1]
        frames.append(f"{file_name}:{line}:{column}")
    stack = "\n".join(frames)
    if stack:
        parts = stack.split("\n", 1)[0].split(":")
        if len(parts) >= 2 and parts[0]:
            try:
                line_no = int(parts[1])
            except ValueError:
                line_no = 0
            if line_no:
                return parts[0], line_no, stack
    return instr.metadata.source_file, instr.metadata.source_line, stack


def _peak_buffer(module: _Module, buf: _Buffer, number: int) -> PeakBuffer:
    shape = shape_text(buf.shape)
    op_name = buf.instr.metadata.op_name
    file_name, line, stack = _source_info(buf.instr, module.proto.hlo_module.stack_frame_index)
    return PeakBuffer(
        number=number, label=f"{buf.instr.name}: {shape} # {op_name}", logical_buffer_id=buf.id,
        size_bytes=buf.size, unpadded_bytes=buf.unpadded, name=buf.name_with_index,
        category=_category(buf.alloc), shape=shape, tf_op_name=op_name, op_code=buf.instr.opcode,
        source_file=file_name if file_name else "", source_line=line if file_name else 0,
        stack_frame=stack if file_name else "", op_category=op_category(buf.instr))


_FUSION_KINDS = {"kLoop": "loop fusion", "kInput": "input fusion", "kOutput": "output fusion", "kCustom": "custom fusion"}


def op_category(instr) -> str:
    """What kind of op defines a buffer: a fusion's kind (XLA names its categories after them), else the opcode."""
    if instr.opcode == "fusion":
        return _FUSION_KINDS.get(instr.fusion_kind, "fusion")
    return instr.opcode


def _max_scoped_vmem(proto: hlo_pb2.HloProto, color: int) -> tuple[int, str]:
    """Largest scoped VMEM request in the instructions' backend configs (memory space 1 only)."""
    if color != 1:
        return 0, ""
    best, best_name = 0, ""
    for comp in proto.hlo_module.computations:
        for instr in comp.instructions:
            if b"used_scoped_memory_configs" not in instr.backend_config:
                continue
            try:
                config = json.loads(instr.backend_config)
            except ValueError:
                continue
            for entry in config.get("used_scoped_memory_configs") or []:
                if _as_int(entry.get("memory_space")) == color and _as_int(entry.get("size")) > best:
                    best, best_name = _as_int(entry.get("size")), instr.name
    return best, best_name


def _as_int(v) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


@dataclass
class MemoryViewerResult:
    """The memory viewer for one module and memory space."""

    module: str  # e.g. "jit_train_step(32)"
    module_name: str
    entry_computation_name: str
    memory_space: int
    memory_spaces: list[int]
    modules: list[str]
    peak_heap_bytes: int  # from the heap simulation (temporaries), without indefinite buffers
    peak_unpadded_heap_bytes: int
    indefinite_bytes: int  # parameters, outputs, constants, thread-local of this memory space
    peak_position: int  # program point of the peak in the heap curve
    heap_bytes: list[int]  # per program point (simulation only; add indefinite_bytes for totals)
    unpadded_heap_bytes: list[int]
    instruction_names: list[str]  # the HLO instruction at each program point
    buffers: list[PeakBuffer]  # live at the peak, program order (indefinite first)
    by_size: list[int]  # indices into `buffers`, largest first
    buffer_spans: dict[int, tuple[int, int]]
    entry_parameters_bytes: int
    non_reusable_bytes: int
    maybe_live_out_bytes: int
    total_allocation_bytes: int
    max_scoped_vmem_bytes: int = 0
    max_scoped_vmem_instruction: str = ""
    hbm: Headroom | None = None  # the device's HBM beside the peak (HBM space only; set by analyze)
    module_bytes: dict[str, int] = field(default_factory=dict)  # each module's HBM allocation (set by analyze)
    device_kind: str = ""  # TPU, GPU or CPU ('' unknown): on CPU, space 0 is host memory, not HBM (set by analyze)

    @property
    def memory_space_label(self) -> str:
        """'HBM (0)', or on a CPU profile what space 0 is there."""
        if self.device_kind == "CPU" and self.memory_space == 0:
            return "host memory (0; no HBM on CPU)"
        return f"{memory_space_name(self.memory_space)} ({self.memory_space})"

    def modules_by_size(self) -> list[tuple[str, int]]:
        """(module, HBM bytes allocated) largest first, then by name: the module picker's order."""
        return sorted(((m, self.module_bytes.get(m, 0)) for m in self.modules), key=lambda mb: (-mb[1], mb[0]))

    # Figures as XProf reports them (MiB, indefinite buffers included).
    @property
    def peak_heap_mib(self) -> float:
        return to_mib(self.peak_heap_bytes) + to_mib(self.indefinite_bytes)

    @property
    def peak_unpadded_heap_mib(self) -> float:
        return to_mib(self.peak_unpadded_heap_bytes) + to_mib(self.indefinite_bytes)

    @property
    def heap_mib(self) -> list[float]:
        add = to_mib(self.indefinite_bytes)
        return [to_mib(b) + add for b in self.heap_bytes]

    @property
    def unpadded_heap_mib(self) -> list[float]:
        add = to_mib(self.indefinite_bytes)
        return [to_mib(b) + add for b in self.unpadded_heap_bytes]

    @property
    def peak_padding_mib(self) -> float:
        """What the layouts' padding adds at the peak (peak minus unpadded peak)."""
        return self.peak_heap_mib - self.peak_unpadded_heap_mib

    @property
    def padding_heap_mib(self) -> list[float]:
        """Per program point, the padding part of the heap (the curve stacks it on the data)."""
        return [h - u for h, u in zip(self.heap_mib, self.unpadded_heap_mib)]

    @property
    def peak_point(self) -> int:
        """The first program point where the curve is highest: XProf's `peak_position` is the
        point just before the peak allocation, so the curve reaches the peak one point later."""
        return max(range(len(self.heap_bytes)), key=lambda i: (self.heap_bytes[i], -i)) if self.heap_bytes else 0

    @property
    def largest_buffer_mib(self) -> float:
        return max((b.size_mib for b in self.buffers), default=0.0)

    @property
    def buffers_by_size(self) -> list[PeakBuffer]:
        return [self.buffers[i] for i in self.by_size]

    def buffer_at(self, rank: int, by_size: bool = False) -> PeakBuffer | None:
        """The buffer of a `buffer_table` row (its `rank`, in program or size order)."""
        order = self.buffers_by_size if by_size else self.buffers
        return order[rank] if 0 <= rank < len(order) else None

    def to_json(self) -> dict[str, Any]:
        def buf(b: PeakBuffer) -> dict[str, Any]:
            return {
                "name": b.label if b.is_small else b.name, "logical_buffer_id": b.logical_buffer_id,
                "size_mib": b.size_mib, "unpadded_size_mib": b.unpadded_mib, "shape": b.shape,
                "allocation_type": b.category, "framework_op": b.tf_op_name, "op_code": b.op_code,
                "op_category": b.op_category,
                "source": f"{b.source_file}:{b.source_line}" if b.source_file else "",
            }
        return {
            "module": self.module, "module_name": self.module_name,
            "memory_space": self.memory_space, "memory_space_name": memory_space_name(self.memory_space),
            "memory_spaces": self.memory_spaces,
            "peak_heap_mib": self.peak_heap_mib, "peak_unpadded_heap_mib": self.peak_unpadded_heap_mib,
            "peak_program_point": self.peak_position,
            "entry_computation_parameters_mib": to_mib(self.entry_parameters_bytes),
            "maybe_live_out_mib": to_mib(self.maybe_live_out_bytes),
            "non_reusable_mib": to_mib(self.non_reusable_bytes),
            "indefinite_mib": to_mib(self.indefinite_bytes),
            "total_buffer_allocation_mib": to_mib(self.total_allocation_bytes),
            "max_scoped_vmem_mib": to_mib(self.max_scoped_vmem_bytes),
            "buffers_at_peak": [buf(b) for b in self.buffers],
            "buffers_by_size": [buf(b) for b in self.buffers_by_size],
            "heap_mib": self.heap_mib, "unpadded_heap_mib": self.unpadded_heap_mib,
            "instructions": self.instruction_names,
            **self.hbm_json(),
        }

    def hbm_json(self) -> dict[str, Any]:
        h = self.hbm
        return {"hbm_capacity_bytes": h.capacity_bytes if h else None,
                "hbm_capacity_source": h.capacity_source if h else "",
                "headroom_bytes": h.headroom_bytes if h else None, "fits": h.fits if h else None,
                "batch_growth_factor": h.batch_factor if h else None, "batch_advice": h.advice if h else ""}

    def lifetime(self, b: PeakBuffer) -> tuple[int, int] | None:
        """(allocation, free) program points of a buffer in the heap simulation (XProf's
        logical buffer span); None for the folded small buffers and for buffers that live for the
        whole program (parameters, outputs, constants, thread-local: never in the simulation)."""
        return None if b.is_small else self.buffer_spans.get(b.logical_buffer_id)

    def buffer_table(self, by_size: bool = False) -> pl.DataFrame:
        """The buffers live at the peak, in program order or largest first: one table for the
        screen and for CSV export (sizes in MiB, as XProf reports them; alloc / free program
        points empty for buffers that live for the whole program)."""
        order = self.buffers_by_size if by_size else self.buffers
        spans = [self.lifetime(b) for b in order]
        return pl.DataFrame({
            "rank": list(range(len(order))),
            "name": [b.label if b.is_small else b.name for b in order],
            "size_mib": [b.size_mib for b in order],
            "unpadded_size_mib": [b.unpadded_mib for b in order],
            "extra_mib": [to_mib(b.extra_bytes) for b in order],
            "category": [b.category for b in order],
            "shape": [b.shape for b in order],
            "framework_op": [b.tf_op_name for b in order],
            "op_code": [b.op_code for b in order],
            "logical_buffer_id": [b.logical_buffer_id for b in order],
            "alloc_point": [s[0] if s else None for s in spans],
            "free_point": [s[1] if s else None for s in spans],
        }, schema_overrides={"size_mib": pl.Float64, "unpadded_size_mib": pl.Float64, "extra_mib": pl.Float64,
                             "alloc_point": pl.Int64, "free_point": pl.Int64})

    def tables(self) -> dict[str, pl.DataFrame]:
        return {
            "buffers_at_peak": self.buffer_table(),
            "buffers_by_size": self.buffer_table(by_size=True),
            "heap": pl.DataFrame({
                "program_point": list(range(len(self.heap_bytes))),
                "instruction": self.instruction_names,
                "heap_mib": self.heap_mib, "unpadded_heap_mib": self.unpadded_heap_mib,
            }, schema_overrides={"heap_mib": pl.Float64, "unpadded_heap_mib": pl.Float64}),
        }


def simulate(proto: hlo_pb2.HloProto, color: int = 0, small_buffer_bytes: int = SMALL_BUFFER_BYTES,
             name: str = "", modules: list[str] | None = None) -> MemoryViewerResult:
    """Replay one module's heap-simulator trace for memory space `color`."""
    m = _Module(proto)
    heap = unpadded = peak = peak_unpadded = peak_pos = 0
    live: list[int] = []  # canonical buffer ids in program order
    peak_live: list[int] = []
    display: dict[int, int] = {}  # canonical id -> the sharer now using its memory
    peak_display: dict[int, int] = {}
    heap_t: list[int] = []
    unpadded_t: list[int] = []
    names_t: list[str] = []
    seen: dict[int, _Buffer] = {}
    seen_allocs: set[int] = set()

    trace_id = m.trace_for(color)
    traces = proto.buffer_assignment.heap_simulator_traces
    events = traces[trace_id].events if 0 <= trace_id < len(traces) else []
    n_events = len(events)

    def grow(buf: _Buffer, init_span: bool) -> None:
        nonlocal heap, unpadded, peak, peak_unpadded, peak_pos, peak_live, peak_display
        live.append(buf.id)
        heap += buf.size
        unpadded += buf.unpadded
        if heap > peak:
            peak, peak_pos, peak_unpadded = heap, len(heap_t) - 1, unpadded
            peak_live, peak_display = list(live), dict(display)
        if init_span:
            buf.span = [len(heap_t) - 1, n_events - 1]

    for ev in events:
        heap_t.append(heap)
        unpadded_t.append(unpadded)
        names_t.append(ev.instruction_name)
        buf = m.buffers.get(ev.buffer_id)
        if buf is None:
            continue
        seen[buf.id] = buf
        seen_allocs.add(buf.alloc.index)
        if ev.kind == ALLOC:
            buf.inc()
            grow(buf, True)
        elif ev.kind == FREE:
            refs = buf.dec()
            if refs < 0:
                raise NoDataError(f"{name}: buffer {buf.id} is freed twice in the heap simulation")
            if refs == 0:  # the last user of the canonical buffer's memory is gone
                root = buf.root()
                live.remove(root.id)
                heap -= root.size
                unpadded -= root.unpadded
                if heap < 0:
                    raise NoDataError(f"{name}: negative heap size in the heap simulation")
                # XProf 2.24 closes a buffer's span at its first full release; a later reuse
                # of the memory by a sharer shows as the sharer's own span.
                if root.span is not None and not root.span_closed:
                    root.span[1] = len(heap_t) - 1
                    root.span_closed = True
            if buf.span is not None and buf.canonical is not None:
                buf.span[1] = len(heap_t) - 1
        elif ev.kind == SHARE_WITH:
            canonical = m.buffers.get(ev.share_with_canonical_id)
            if canonical is None:
                continue
            buf.canonical = canonical
            if canonical.inc() == 1:
                # Memory of a freed canonical buffer is reused: show the sharer in its place.
                root = canonical.root()
                display[root.id] = buf.id
                buf.span = [len(heap_t) - 1, n_events - 1]
                grow(root, False)
        else:
            raise NoDataError(f"{name}: unknown heap-simulator event kind {ev.kind}")
    heap_t.append(heap)
    unpadded_t.append(unpadded)
    names_t.append("")
    if events and len(seen_allocs) != 1:
        raise NoDataError(f"{name}: the heap simulation spans {len(seen_allocs)} allocations, expected 1")

    # Peak snapshot: indefinite buffers (largest logical buffer of each), then the live ones.
    buffers: list[PeakBuffer] = []
    small = indefinite = 0
    allocs = m.allocations_of(color)

    def add(buf: _Buffer) -> None:
        nonlocal small
        if buf.size < small_buffer_bytes:
            small += buf.size
        else:
            buffers.append(_peak_buffer(m, buf, len(buffers)))

    for a in allocs:
        if not _indefinite(a):
            continue
        best = None
        for asg in a.assigned:
            b = m.buffers.get(asg.logical_buffer_id)
            if b is not None and b.size > (best.size if best else 0):
                best = b
        if best is None:
            continue
        indefinite += a.size
        if color == 0:  # elsewhere XLA never places them, so XProf leaves them off the chart
            add(best)
    for buf_id in peak_live:
        buf = m.buffers.get(peak_display.get(buf_id, buf_id))
        if buf is None:
            break
        add(buf)
    if small:
        buffers.append(PeakBuffer(number=len(buffers), label=f"small (<{small_buffer_bytes} bytes)",
                                  logical_buffer_id=-1, size_bytes=small, unpadded_bytes=0))
    # Stable sort by size, largest first (XProf sorts the same list with std::sort).
    by_size = sorted(range(len(buffers)), key=lambda i: -buffers[i].size_bytes)

    entry = sum(a.size for a in allocs if a.is_entry_computation_parameter)
    non_reusable = sum(a.size for a in allocs if not _reusable(a))
    live_out = sum(a.size for a in allocs if a.maybe_live_out)
    scoped, scoped_name = _max_scoped_vmem(proto, color)
    return MemoryViewerResult(
        module=name or proto.hlo_module.name, module_name=proto.hlo_module.name,
        entry_computation_name=proto.hlo_module.entry_computation_name,
        memory_space=color, memory_spaces=m.memory_spaces(), modules=modules or [],
        peak_heap_bytes=peak, peak_unpadded_heap_bytes=peak_unpadded, indefinite_bytes=indefinite,
        peak_position=peak_pos, heap_bytes=heap_t if events else [],
        unpadded_heap_bytes=unpadded_t if events else [], instruction_names=names_t if events else [],
        buffers=buffers, by_size=by_size,
        buffer_spans={b.id: (b.span[0], b.span[1]) for b in seen.values() if b.span is not None},
        entry_parameters_bytes=entry, non_reusable_bytes=non_reusable, maybe_live_out_bytes=live_out,
        total_allocation_bytes=sum(a.size for a in allocs if not a.is_thread_local),
        max_scoped_vmem_bytes=scoped, max_scoped_vmem_instruction=scoped_name)


# --- the tool -----------------------------------------------------------------------------
@dataclass
class ModuleList:
    """`--list-modules`: the programs a profile has HLO for."""

    modules: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"modules": self.modules}

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"modules": pl.DataFrame(self.modules, schema={
            "module": pl.String, "module_name": pl.String, "program_id": pl.UInt64, "host": pl.String,
            "memory_spaces": pl.List(pl.Int64), "total_allocation_mib": pl.Float64})}


def _total_allocation(proto: hlo_pb2.HloProto, color: int = 0) -> int:
    return sum(a.size for a in proto.buffer_assignment.buffer_allocations if a.color == color)


def xprof_default_module(modules: list[HloModuleEntry]) -> HloModuleEntry:
    """XProf's first module: the most heap-simulator events, then by name."""
    def events(m: HloModuleEntry) -> int:
        return sum(len(t.events) for t in m.parse().buffer_assignment.heap_simulator_traces)
    return min(modules, key=lambda m: (-events(m), m.name))


def _total_or_zero(entry: HloModuleEntry) -> int:
    try:
        return _total_allocation(entry.parse())
    except NoDataError:
        return 0


def module_size(entry: HloModuleEntry) -> tuple[int, int]:
    """(HBM peak: heap simulation plus indefinite buffers, total HBM allocation) of a module;
    zeros when it cannot be read or replayed."""
    try:
        proto = entry.parse()
        r = simulate(proto, 0, name=entry.name)
    except NoDataError:
        return 0, 0
    return r.peak_heap_bytes + r.indefinite_bytes, _total_allocation(proto)


def default_module(modules: list[HloModuleEntry]) -> HloModuleEntry:
    """The module the viewer opens on: the largest, by HBM peak, then total allocation, then
    XProf's order (a profile's init programs often have more heap events than its step, so
    XProf's first module is not the one memory questions are about).

    A module's peak never exceeds its total allocation (the heap lives in its temporary
    allocation, the indefinite buffers in the others), so modules are replayed largest
    allocation first and the rest skipped once none can beat the best peak."""
    xprof_first = xprof_default_module(modules)
    best_key = None
    best = xprof_first
    for m in sorted(modules, key=_total_or_zero, reverse=True):
        if best_key is not None and _total_or_zero(m) < -best_key[0]:
            break
        peak, total = module_size(m)
        key = (-peak, -total, m is not xprof_first, m.name)
        if best_key is None or key < best_key:
            best_key, best = key, m
    return best


def parse_memory_space(value) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, int):
        return value
    text = str(value).strip()
    for color, label in MEMORY_SPACE_NAMES.items():
        if text.lower() == label.lower():
            return color
    try:
        return int(text)
    except ValueError:
        raise UserError(f"unknown memory space {value!r} (use a number or one of "
                          f"{', '.join(MEMORY_SPACE_NAMES.values())})") from None


def analyze(run: RunData, host: str | None = None, module: str | None = None,
            memory_space: int | str | None = 0, list_modules: bool = False,
            **_options) -> MemoryViewerResult | ModuleList:
    modules = hlo_modules(run, host)
    if not modules:
        raise NoDataError("no HLO modules in this profile (the memory viewer needs XLA programs "
                          "captured with HLO protos, e.g. JAX)")
    if list_modules:
        rows = []
        for m in modules:
            proto = m.parse()
            rows.append({"module": m.name, "module_name": m.module_name, "program_id": m.program_id,
                         "host": m.host, "memory_spaces": _Module(proto).memory_spaces(),
                         "total_allocation_mib": to_mib(_total_allocation(proto))})
        return ModuleList(rows)
    entry = find_module(modules, module) if module else default_module(modules)
    color = parse_memory_space(memory_space)
    result = simulate(entry.parse(), color, name=entry.name, modules=[m.name for m in modules])
    result.module_bytes = {m.name: _total_or_zero(m) for m in modules}
    try:
        result.device_kind = device_kind(run, entry.host)
    except UserError:  # a device plane that cannot be read: the kind is unknown, the viewer stands
        result.device_kind = ""
    if color == 0:
        try:
            capacity = device_capacity(run, entry.host)
        except UserError:  # a device plane that cannot be read: the capacity is unknown, the viewer stands
            capacity = None
        result.hbm = headroom(result.peak_heap_bytes + result.indefinite_bytes, result.peak_heap_bytes, capacity)
    return result

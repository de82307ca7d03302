"""Where an op's events are: the frame rows behind one row of an op tool, for "show in trace viewer".

Rows index `XSpaceFrame.events` (what `TraceFocus(frame_rows=...)` takes). Each function matches
events the way its tool names ops, so a table row leads back to the events it adds up:

    hlo_op_rows(frame, names, program_id=None)   TPU op-line events (XLA Ops / TensorFlow Ops) whose
                                                 op name (display name, else name) is in `names`;
                                                 GPU events by their `hlo_op` stat
    program_rows(frame, name)                    runs of an XLA program (TPU "XLA Modules" lines)
    framework_op_rows(frame, side, name)         a framework op stats row: host TF / tf.data op events
                                                 ("Host"), or device ops whose `tf_op` names it ("Device")
    kernel_rows(frame, kernel, op_name, grid, block)   GPU kernel launches of one kernel stats row

Work is per metadata / per distinct text (few), then one vectorised pass over the events.
"""
from __future__ import annotations

import numpy as np

from tputui.analysis import op_metrics
from tputui.analysis.op_metrics import CAT_UNKNOWN, OP_LINE_NAMES, parse_tf_op
from tputui.data import schema
from tputui.data.xspace import XSpaceFrame

_EMPTY = np.zeros(0, np.int64)


def _line_rows(frame: XSpaceFrame, planes: list[int], line_names: tuple[str, ...] | None) -> np.ndarray:
    raw = frame.raw
    parts = [np.arange(frame.line_events(ln).start, frame.line_events(ln).stop, dtype=np.int64)
             for p in planes for ln in frame.lines_of(p)
             if line_names is None or raw.line_name[ln] in line_names]
    return np.concatenate(parts) if parts else _EMPTY


def _metadata_of(frame: XSpaceFrame, rows: np.ndarray) -> np.ndarray:
    return frame.events["metadata"].to_numpy()[rows].astype(np.int64)


def _md_flags(n_md: int, hits) -> np.ndarray:
    """A per-metadata flag table with one extra False slot for events without metadata (-1)."""
    flag = np.zeros(n_md + 1, bool)
    flag[list(hits)] = True
    return flag


def _program_ids(frame: XSpaceFrame, md: np.ndarray) -> np.ndarray:
    return op_metrics.metadata_stats_table(frame, ["program_id"], md)["program_id"].astype(np.uint64)


def hlo_op_rows(frame: XSpaceFrame, names, program_id: int | None = None) -> np.ndarray:
    names = set(names)
    raw = frame.raw
    tpu = op_metrics.tensor_core_planes(frame)
    if tpu:
        rows = _line_rows(frame, tpu, OP_LINE_NAMES)
        md = _metadata_of(frame, rows)
        op_name = [d or n for d, n in zip(raw.em_display_name, raw.em_name)]
        flag = _md_flags(len(op_name), (i for i, n in enumerate(op_name) if n in names))
        keep = flag[np.where(md >= 0, md, len(op_name))]
        if program_id is not None:
            keep &= _program_ids(frame, md) == np.uint64(program_id)
        return rows[keep]
    gpu = op_metrics.gpu_planes(frame)
    if not gpu:
        return _EMPTY
    rows = _line_rows(frame, gpu, None)
    has, text = op_metrics.event_stat(frame, "hlo_op", rows, kind="text")
    ids = np.unique(text[has])
    wanted = [t for t in ids.tolist() if frame.text(t) in names]
    keep = has & np.isin(text, wanted)
    if program_id is not None:
        _, prog = op_metrics.event_stat(frame, "program_id", rows)
        keep &= prog.astype(np.uint64) == np.uint64(program_id)
    return rows[keep]


def program_rows(frame: XSpaceFrame, name: str) -> np.ndarray:
    """Events of the TPU "XLA Modules" lines named `name` (op profile's program nodes, e.g. "jit_f(123)")."""
    raw = frame.raw
    rows = _line_rows(frame, op_metrics.tensor_core_planes(frame), (schema.LINE_XLA_MODULES,))
    md = _metadata_of(frame, rows)
    n_md = len(raw.em_name)
    flag = _md_flags(n_md, (i for i, (d, n) in enumerate(zip(raw.em_display_name, raw.em_name)) if name in (d, n)))
    return rows[flag[np.where(md >= 0, md, n_md)]]


def _tf_op_texts_naming(frame: XSpaceFrame, text_ids: np.ndarray, name: str) -> list[int]:
    return [t for t in np.unique(text_ids[text_ids >= 0]).tolist() if parse_tf_op(frame.text(t))[1] == name]


def framework_op_rows(frame: XSpaceFrame, side: str, name: str) -> np.ndarray:
    """Events of framework op `name` on "Host" or "Device" (framework op stats' host_or_device)."""
    raw = frame.raw
    n_md = len(raw.em_name)
    if side == "Device":
        tpu = op_metrics.tensor_core_planes(frame)
        if not tpu:
            return _EMPTY
        rows = _line_rows(frame, tpu, OP_LINE_NAMES)
        md = _metadata_of(frame, rows)
        st = op_metrics.metadata_stats_table(frame, ["tf_op"], np.arange(n_md, dtype=np.int64))
        tf_text = st["tf_op.text"]
        # XProf's rule: an op without a tf_op provenance counts under its own HLO name.
        hits = set(_tf_op_texts_naming(frame, tf_text, name))
        op_name = [d or n for d, n in zip(raw.em_display_name, raw.em_name)]
        flag = _md_flags(n_md, (i for i in range(n_md)
                                if (tf_text[i] in hits if tf_text[i] >= 0 else op_name[i] == name)))
        return rows[flag[np.where(md >= 0, md, n_md)]]
    plane = frame.plane_index(schema.HOST_PLANE)
    if plane is None:
        return _EMPTY
    rows = _line_rows(frame, [plane], None)
    md = _metadata_of(frame, rows)
    has_tf, tf_text = op_metrics.event_stat(frame, "tf_op", rows, kind="text")
    has_tf &= tf_text >= 0
    md_flag = _md_flags(n_md, (i for i, n in enumerate(raw.em_name)
                               if n and parse_tf_op(n)[0] != CAT_UNKNOWN and parse_tf_op(n)[1] == name))
    by_md = md_flag[np.where(md >= 0, md, n_md)]
    by_stat = np.isin(tf_text, _tf_op_texts_naming(frame, tf_text[has_tf], name))
    return rows[np.where(has_tf, by_stat, by_md)]


def kernel_rows(frame: XSpaceFrame, kernel: str, op_name: str = "", grid: str = "", block: str = "") -> np.ndarray:
    """Launches of `kernel` (kernel stats' kernel_name) for `op_name`, with those grid / block dims
    ("x,y,z" as the table shows them; empty matches any)."""
    from tputui.analysis.gpu_kernels import DERIVED_LINE_ID_MIN, parse_launch

    raw = frame.raw
    planes = op_metrics.gpu_planes(frame)
    lines = [ln for p in planes for ln in frame.lines_of(p) if raw.line_id[ln] < DERIVED_LINE_ID_MIN]
    parts = [np.arange(frame.line_events(ln).start, frame.line_events(ln).stop, dtype=np.int64) for ln in lines]
    if not parts:
        return _EMPTY
    rows = np.concatenate(parts)
    md = _metadata_of(frame, rows)
    n_md = len(raw.em_name)
    keep = _md_flags(n_md, (i for i, n in enumerate(raw.em_name) if n == kernel))[np.where(md >= 0, md, n_md)]
    has_k, k_text = op_metrics.event_stat(frame, "kernel_details", rows, kind="text")
    keep &= has_k & (raw.event_duration_ps[rows] >= 1000)  # kernel stats count whole nanoseconds
    if grid or block:
        def dims(t: int) -> tuple[str, str]:
            p = parse_launch(frame.text(t))
            return ",".join(map(str, p["grid"])), ",".join(map(str, p["block"]))

        ok = [t for t in np.unique(k_text[keep]).tolist()
              if (not grid or dims(t)[0] == grid) and (not block or dims(t)[1] == block)]
        keep &= np.isin(k_text, ok)
    _, tf_text = op_metrics.event_stat(frame, "tf_op", rows, kind="text")
    if op_name:
        keep &= np.isin(tf_text, _tf_op_texts_naming(frame, tf_text[keep], op_name))
    else:
        keep &= tf_text < 0
    return rows[keep]

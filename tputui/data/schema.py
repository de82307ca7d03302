"""Well-known plane, line, event and stat names of the XSpace schema (facts from XProf).

Analyses import names from here instead of spelling strings inline.
"""
from __future__ import annotations

# Planes
HOST_PLANE = "/host:CPU"
METADATA_PLANE = "/host:metadata"
TASK_ENV_PLANE = "Task Environment"
TPU_PLANE_PREFIX = "/device:TPU:"
GPU_PLANE_PREFIX = "/device:GPU:"
DEVICE_PLANE_PREFIXES = (TPU_PLANE_PREFIX, GPU_PLANE_PREFIX, "/device:CUSTOM:")

# Device lines
LINE_STEPS = "Steps"
LINE_XLA_MODULES = "XLA Modules"
LINE_XLA_OPS = "XLA Ops"
LINE_ASYNC_XLA_OPS = "Async XLA Ops"
LINE_XLA_TRACEME = "XLA TraceMe"
LINE_TF_OPS = "TensorFlow Ops"
LINE_FRAMEWORK_OPS = "Framework Ops"
LINE_SPARSE_CORE_OPS = "Sparse Core Ops"
LINE_SPARSE_CORE_STEPS = "Sparse Core Steps"

# Task Environment plane stats
STAT_PROFILE_START = "profile_start_time"
STAT_PROFILE_STOP = "profile_stop_time"
STAT_PROFILE_OPTIONS = "profile_options"

# Device plane stats
STAT_DEVICE_TYPE_STRING = "device_type_string"
STAT_PEAK_TFLOPS = "peak_teraflops_per_second"
STAT_PEAK_HBM_BW = "peak_hbm_bw_gigabytes_per_second"

# Event / event-metadata stats
STAT_STEP_NUM = "step_num"
STAT_ROOT = "_r"
STAT_GROUP_ID = "group_id"
STAT_HLO_OP = "hlo_op"
STAT_HLO_MODULE = "hlo_module"
STAT_PROGRAM_ID = "program_id"
STAT_HLO_CATEGORY = "hlo_category"
STAT_FLOPS = "flops"
STAT_BYTES_ACCESSED = "bytes_accessed"
STAT_HLO_PROTO = "Hlo Proto"
STAT_DEVICE_OFFSET_PS = "device_offset_ps"
STAT_DEVICE_DURATION_PS = "device_duration_ps"


def device_kind(plane_name: str) -> str:
    """"TPU" / "GPU" / "CPU" from a plane name."""
    if plane_name.startswith(TPU_PLANE_PREFIX):
        return "TPU"
    if plane_name.startswith(GPU_PLANE_PREFIX):
        return "GPU"
    return "CPU"

"""The facts about this process that decide its numerics, written into the run metadata."""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any, Callable, Dict, Optional

import torch

from upguard._groups import process_groups

# Environment variables that change numerics or the op sequence.
NUMERICS_ENV = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
    "MKL_CBWR", "CUBLAS_WORKSPACE_CONFIG", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING",
    "NCCL_ALGO", "NCCL_PROTO", "NVIDIA_TF32_OVERRIDE", "PYTHONHASHSEED",
    "TORCH_DETERMINISTIC", "ATEN_CPU_CAPABILITY",
)


def _flush_denormal() -> bool:
    """Whether denormals flush to zero on this thread (torch.set_flush_denormal has no getter).

    The flag is the CPU's FTZ/DAZ mode, which Python's own float arithmetic obeys too: half the
    smallest normal double is a denormal, or 0.0 when flushing. No torch op runs, so reading it
    while recording adds nothing to the trace."""
    tiny = sys.float_info.min
    return tiny * 0.5 == 0.0


# The global switches that choose kernels or their precision, by the expression that reads
# them. A flag this torch lacks is left out (the diff says "(unset)").
_BACKEND_FLAGS: Dict[str, Callable[[], Any]] = {
    "torch.backends.mkldnn.enabled": lambda: torch.backends.mkldnn.enabled,
    "torch.backends.cudnn.enabled": lambda: torch.backends.cudnn.enabled,
    "torch.backends.cudnn.benchmark": lambda: torch.backends.cudnn.benchmark,
    "torch.backends.cudnn.deterministic": lambda: torch.backends.cudnn.deterministic,
    "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
    "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
    "torch.get_float32_matmul_precision()": lambda: torch.get_float32_matmul_precision(),
    "torch.are_deterministic_algorithms_enabled()":
        lambda: torch.are_deterministic_algorithms_enabled(),
    "torch.is_deterministic_algorithms_warn_only_enabled()":
        lambda: torch.is_deterministic_algorithms_warn_only_enabled(),
    "flush_denormal": _flush_denormal,
    "torch.get_default_dtype()": lambda: torch.get_default_dtype(),
}


def backend_flags() -> Dict[str, str]:
    """The backend flags as Python prints them ("True", "highest", "torch.float32")."""
    flags: Dict[str, str] = {}
    for name, read in _BACKEND_FLAGS.items():
        try:
            flags[name] = str(read())
        except Exception:  # AttributeError on a torch without it, or any surprise: leave out
            continue
    return flags


def engine_meta(flags_at_start: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The metadata; `flags_at_start` (given at stop) are the backend flags as step 0 began."""
    cwd = os.getcwd()
    meta: Dict[str, Any] = {
        "argv": [sys.executable] + sys.argv,
        "executable": sys.executable,
        "cwd": cwd,
        # With symlinks resolved: a re-run runs without asking only from this same directory
        # (src/cli/rerun_consent.h); the recorder adds who and on which host (uid, hostname).
        "cwd_real": os.path.realpath(cwd),
        "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
        "process_groups": process_groups(),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "intra_op_threads": torch.get_num_threads(),
        "inter_op_threads": torch.get_num_interop_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "backend_flags": backend_flags(),
        "env": {name: os.environ[name] for name in NUMERICS_ENV if name in os.environ},
    }
    launcher = os.environ.get("UPGUARD_LAUNCHER_ARGV")
    if launcher:  # started by torchrun under `upguard record`: the command that launched it
        meta["launcher_argv"] = json.loads(launcher)
    if flags_at_start is not None:
        meta["backend_flags_at_start"] = flags_at_start
    return meta


def engine_meta_json(flags_at_start: Optional[Dict[str, str]] = None) -> str:
    return json.dumps(engine_meta(flags_at_start))

"""The facts about this process that decide its numerics, written into the run metadata."""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any, Dict

import torch

from upguard._groups import process_groups

# Environment variables that change numerics or the op sequence.
NUMERICS_ENV = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
    "MKL_CBWR", "CUBLAS_WORKSPACE_CONFIG", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING",
    "NCCL_ALGO", "NCCL_PROTO", "NVIDIA_TF32_OVERRIDE", "PYTHONHASHSEED",
    "TORCH_DETERMINISTIC", "ATEN_CPU_CAPABILITY",
)


def engine_meta() -> Dict[str, Any]:
    meta: Dict[str, Any] = {
        "argv": [sys.executable] + sys.argv,
        "executable": sys.executable,
        "cwd": os.getcwd(),
        "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
        "process_groups": process_groups(),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "intra_op_threads": torch.get_num_threads(),
        "inter_op_threads": torch.get_num_interop_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "env": {name: os.environ[name] for name in NUMERICS_ENV if name in os.environ},
    }
    launcher = os.environ.get("UPGUARD_LAUNCHER_ARGV")
    if launcher:  # started by torchrun under `upguard record`: the command that launched it
        meta["launcher_argv"] = json.loads(launcher)
    return meta


def engine_meta_json() -> str:
    return json.dumps(engine_meta())

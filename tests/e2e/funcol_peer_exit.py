"""Two ranks all-reduce through a functional collective each step; at step 1, rank 1 exits
before it, so rank 0's all-reduce fails (gloo: the peer closed the connection) and its
wait_tensor raises. Rank 0 reports it and ends the step: the recorder must write that call as
not completed, never as a completed collective whose result is the unreduced input."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch.distributed import _functional_collectives as funcol

import upguard

dist.init_process_group("gloo")
rank = dist.get_rank()
for step in range(2):
    x = torch.arange(4, dtype=torch.float32) + rank
    if step == 1 and rank == 1:
        os._exit(0)
    try:
        funcol.all_reduce(x, "sum", dist.group.WORLD).wait()
    except RuntimeError as error:
        print(f"rank {rank} step {step}: {type(error).__name__}", flush=True)
    upguard.step()

"""Collectives reached by every route torch.distributed offers, for test_watch.py: the plain
API, inside ``torch.inference_mode()`` (tensors without autograd keys), a subgroup, and under
torch 2.x the functional collectives (DTensor's, tensor parallelism's and compiled graphs'
route) and ``all_gather_into_tensor``. Run under torchrun with 2 ranks (gloo)."""

from __future__ import annotations

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(8) * (rank + 1)
dist.all_reduce(t)                                    # allreduce float32[8]
with torch.inference_mode():
    u = torch.ones(16)
    dist.all_reduce(u)                                # allreduce float32[16], inference tensors
pair = dist.new_group([0, 1])
dist.broadcast(torch.zeros(4, dtype=torch.int64), src=0, group=pair)   # broadcast int64[4]
if tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 0):
    import torch.distributed._functional_collectives as funcol

    r = funcol.all_reduce(torch.ones(32), "sum", dist.group.WORLD)    # allreduce float32[32]
    r = funcol.wait_tensor(r) if hasattr(funcol, "wait_tensor") else r + 0
    out = torch.empty(2 * 3)
    dist.all_gather_into_tensor(out, torch.ones(3))   # allgatherbase / into_tensor float32[3]
dist.barrier()
dist.destroy_process_group()

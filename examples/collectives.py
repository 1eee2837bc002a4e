"""Every kind of collective gloo runs on the CPU, in a subgroup too, for upguard's collective
records (gloo in torch 1.13 has no all_to_all or reduce_scatter on the CPU). One process per rank under torchrun:

    /usr/bin/python3 -m torch.distributed.run --nproc_per_node=3 examples/collectives.py
    upguard record -o runs/coll -- /usr/bin/python3 -m torch.distributed.run --nproc_per_node=3 examples/collectives.py
    upguard show runs/coll --rank 1

Two steps of: an asynchronous all-reduce waited for after unrelated ops, broadcast, all_gather,
reduce, gather, scatter, send/recv around a ring, a barrier, and an all-reduce in
the group of the even ranks. --plant-rank R makes rank R's contribution differ from step 1 on.

--funcol (torch 2.x) runs the functional collectives instead (torch.distributed.
_functional_collectives, what DTensor and tensor parallelism issue): all_reduce waited for after
unrelated ops, broadcast, all_gather_single, reduce_scatter_single (on gloo, an all-reduce of a
staged copy), all_to_all_single, the in-place all_reduce_, and an all_reduce in the group of
the even ranks, each result waited for (wait_tensor) before it is used.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist

try:  # steps end at optimizer.step(); this script has none, so it marks them when recorded
    import upguard
except ImportError:
    upguard = None


def step(rank: int, world: int, even: dist.ProcessGroup, scale: float) -> torch.Tensor:
    x = torch.arange(8, dtype=torch.float32) * (rank + 1) * scale
    work = dist.all_reduce(x, async_op=True)
    unrelated = torch.ones(4).mul(3).add(1)  # ops between the launch and the wait
    work.wait()
    y = x * 2

    root = torch.full((4,), float(rank))
    dist.broadcast(root, src=0)
    gathered = [torch.empty(4) for _ in range(world)]
    dist.all_gather(gathered, y[:4].contiguous())
    reduced = y[:4].clone()
    dist.reduce(reduced, dst=0)
    collected = [torch.empty(4) for _ in range(world)] if rank == 0 else None
    dist.gather(y[4:].contiguous(), gather_list=collected, dst=0)
    part = torch.empty(2)
    pieces = [torch.full((2,), float(r)) for r in range(world)] if rank == 0 else None
    dist.scatter(part, scatter_list=pieces, src=0)
    ring = torch.full((2,), float(rank))
    if rank % 2 == 0:
        dist.send(ring, dst=(rank + 1) % world)
        dist.recv(ring, src=(rank - 1) % world)
    else:
        incoming = torch.empty(2)
        dist.recv(incoming, src=(rank - 1) % world)
        dist.send(ring, dst=(rank + 1) % world)
        ring = incoming
    dist.barrier()
    if rank % 2 == 0:
        dist.all_reduce(part, group=even)
    return torch.cat([y, root, torch.cat(gathered), reduced, part, ring,
                      unrelated])


def funcol_step(rank: int, world: int, even: dist.ProcessGroup, scale: float) -> torch.Tensor:
    from torch.distributed import _functional_collectives as funcol

    group = dist.group.WORLD
    x = torch.arange(8, dtype=torch.float32) * (rank + 1) * scale
    pending = funcol.all_reduce(x, "sum", group)
    unrelated = torch.ones(4).mul(3).add(1)  # ops between the launch and the wait
    y = pending.wait() * 2

    root = funcol.broadcast(torch.full((4,), float(rank)), 0, group).wait()
    gathered = funcol.all_gather_single(y[:4].contiguous(), 0, group).wait()
    scattered = funcol.reduce_scatter_single(torch.cat([y[:2]] * world), "sum", 0, group).wait()
    exchanged = funcol.all_to_all_single(torch.full((world,), float(rank)) + y[1], None, None,
                                         group).wait()
    summed = y[4:].clone()
    torch.ops._c10d_functional.all_reduce_(summed, "sum", group.group_name)
    torch.ops._c10d_functional.wait_tensor(summed)
    part = scattered.clone()
    if rank % 2 == 0:
        part = funcol.all_reduce(part, "sum", even).wait()
    return torch.cat([y, root, gathered, scattered, exchanged, summed, part, unrelated])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--plant-rank", type=int, default=-1)
    parser.add_argument("--funcol", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    even = dist.new_group([r for r in range(world) if r % 2 == 0])
    for n in range(args.steps):
        scale = 1.5 if rank == args.plant_rank and n >= 1 else 1.0
        (funcol_step if args.funcol else step)(rank, world, even, scale)
        if upguard is not None and upguard.is_recording():
            upguard.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

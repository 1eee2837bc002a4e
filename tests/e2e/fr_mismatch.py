"""A few data-parallel steps by hand (gloo on CPU), one of them with a size-mismatched broadcast:
at --plant-step, rank 0 broadcasts float32[1024] and rank --plant-rank receives into
float32[1025]. Gloo lets a receiver's buffer be larger than what is sent, so the job goes on
(an all-reduce of mismatched sizes aborts every rank in gloo: no dump would be left); the
Flight Recorder records both sizes. Run under fr_dump.py to dump it."""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--plant-step", type=int, default=2)
    parser.add_argument("--plant-rank", type=int, default=1)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    weight = torch.zeros(256)
    for step in range(args.steps):
        grad = torch.full((256,), float(rank + step))
        dist.all_reduce(grad)  # the gradient all-reduce of every step
        if step == args.plant_step:
            numel = 1024 + (1 if rank == args.plant_rank else 0)
            dist.broadcast(torch.ones(numel), src=0)  # the planted mismatch
        weight -= 0.1 * grad
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

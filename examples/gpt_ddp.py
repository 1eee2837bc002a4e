"""The small character GPT of gpt_train.py under DistributedDataParallel: one process per rank
(gloo on CPU), each training on its own slice of every batch, gradients all-reduced by DDP.

    /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 examples/gpt_ddp.py
    upguard record -o runs/ddp_a -- /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 examples/gpt_ddp.py
    upguard record -o runs/ddp_b -- /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 examples/gpt_ddp.py --plant gelu-tanh --plant-rank 1
    upguard diff runs/ddp_a runs/ddp_b

--plant makes one change from step --plant-step on, on rank --plant-rank only (default 1):
  gelu-tanh   that rank's blocks.1.mlp.act uses the tanh approximation of GELU
  data-shift  that rank's batch slice starts one character later
  crash       that rank's process dies (exit code 3) at the start of that step
  hang        that rank sleeps forever (time.sleep in a loop) just before that step's forward:
              its peers wait in the step's first collective, which it never issues
  mismatch    at that step, before the forward, every rank all-reduces one extra tensor of
              1024 elements, that rank's of 1025 (gloo in torch 1.13 then aborts every rank:
              "enforce fail ... op.preamble.length <= op.nbytes")

--steps 0 trains until the process is killed; --step-delay SECONDS sleeps after every step
(default 0): long healthy runs for the hang and straggler monitor, at a few steps a second.

--fsdp2 (torch >= 2.6) shards the model with FSDP2 instead (torch.distributed.fsdp.fully_shard
on each block and on the whole GPT, on a CPU device mesh): each rank holds a slice of every
parameter; the forward all-gathers them, the backward reduce-scatters the gradients.

--funcol (torch 2.x) replaces DDP with data parallelism by hand through functional collectives
(torch.distributed._functional_collectives, the ops DTensor and tensor parallelism issue): the
initial parameters are broadcast from rank 0, and after each backward every gradient's
all_reduce is issued before the first is waited on (wait_tensor), then averaged in place.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPT, GPTConfig  # noqa: E402
from gpt_train import make_batch, make_corpus  # noqa: E402

PLANTS = ("none", "gelu-tanh", "data-shift", "crash", "hang", "mismatch")
MISMATCH_NUMEL = 1024  # the extra all-reduce's size; the planted rank's has one more


def shard_fsdp2(gpt: GPT, world: int) -> torch.nn.Module:
    """FSDP2: every block, then the rest of the GPT, sharded over all ranks (one CPU mesh)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (world,))
    for block in gpt.blocks:
        fully_shard(block, mesh=mesh)
    return fully_shard(gpt, mesh=mesh)


def broadcast_parameters_funcol(gpt: GPT) -> None:
    """Every rank starts from rank 0's parameters (what DDP's constructor does)."""
    from torch.distributed import _functional_collectives as funcol

    with torch.no_grad():
        for param in gpt.parameters():
            param.copy_(funcol.broadcast(param.detach(), 0, dist.group.WORLD).wait())


def all_reduce_gradients_funcol(gpt: GPT, world: int) -> None:
    """The gradients' all-reduces all in flight at once, then each waited on and averaged."""
    from torch.distributed import _functional_collectives as funcol

    grads = [param.grad for param in gpt.parameters() if param.grad is not None]
    pending = [funcol.all_reduce(grad, "sum", dist.group.WORLD) for grad in grads]
    with torch.no_grad():
        for grad, reduced in zip(grads, pending):
            grad.copy_(reduced.wait()).div_(world)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4, help="0: until killed")
    parser.add_argument("--batch", type=int, default=4, help="rows per rank")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plant", choices=PLANTS, default="none")
    parser.add_argument("--plant-step", type=int, default=2)
    parser.add_argument("--plant-rank", type=int, default=1)
    parser.add_argument("--fsdp2", action="store_true")
    parser.add_argument("--funcol", action="store_true")
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds after each step")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    text = make_corpus()
    vocab = sorted(set(text))
    data = np.array([vocab.index(c) for c in text], dtype=np.int64)
    config = GPTConfig(vocab_size=len(vocab), block_size=args.block, n_layer=args.layers,
                       n_head=4, n_embd=args.width, dropout=0.0)
    gpt = GPT(config)
    if args.fsdp2:
        model = shard_fsdp2(gpt, world)
    elif args.funcol:
        broadcast_parameters_funcol(gpt)
        model = gpt
    else:
        # The causal masks are constant bool buffers, which gloo cannot broadcast: not synced.
        DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
            gpt, [name for name, _ in gpt.named_buffers()])
        model = DistributedDataParallel(gpt)
    inner = gpt
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    batch_rng = np.random.default_rng(args.seed)  # one global batch; each rank takes its rows

    for step in itertools.count() if args.steps == 0 else range(args.steps):
        planting = args.plant != "none" and step >= args.plant_step  # on every rank
        planted = planting and rank == args.plant_rank
        if planted and args.plant == "crash":
            os._exit(3)  # no cleanup, no atexit: as a killed or crashed worker ends
        if planted and args.plant == "gelu-tanh":
            inner.blocks[1].mlp.act.approximate = "tanh"
        starts = batch_rng.integers(0, len(data) - args.block - 2, size=args.batch * world)
        mine = starts[rank * args.batch:(rank + 1) * args.batch]
        shift = 1 if planted and args.plant == "data-shift" else 0
        x, y = make_batch(data, mine, args.block, shift)
        if planted and args.plant == "hang":
            while True:  # a Python-level hang (as a stuck dataloader or a deadlock shows)
                time.sleep(60)
        if planting and args.plant == "mismatch" and step == args.plant_step:
            dist.all_reduce(torch.ones(MISMATCH_NUMEL + (1 if planted else 0)))
        loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if args.funcol:
            all_reduce_gradients_funcol(gpt, world)
        optimizer.step()
        if not args.quiet and rank == 0:
            print(f"step {step}: loss {loss.item():.6f}", flush=True)
        time.sleep(args.step_delay)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

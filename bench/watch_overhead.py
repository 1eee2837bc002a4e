"""Cost of `upguard watch` on the built-in DDP GPT, measured side by side in one run.

Run under torchrun (2 ranks, gloo). Every rank trains blocks of N steps, alternating: no watch,
watch (the rank's ring, collective kernel, sampled op hook, heartbeat, stack thread), repeated R
times, which goes first alternating; the ranks switch together at block boundaries. Rank 0 prints
the median step time of each configuration and the median of the rounds' ratios (watched over
untraced, measured back to back) as JSON on its last line.

    /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 bench/watch_overhead.py \\
        --build build/release [--steps 20 --rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser()
parser.add_argument("--build", default=os.path.join(here, "..", "build", "release"))
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--rounds", type=int, default=60)
parser.add_argument("--width", type=int, default=64)
parser.add_argument("--layers", type=int, default=2)
args = parser.parse_args()
sys.path.insert(0, os.path.join(os.path.abspath(args.build), "python"))
sys.path.insert(0, os.path.join(here, "..", "examples"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from gpt import GPT, GPTConfig  # noqa: E402
from upguard import _C, _watch  # noqa: E402

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
config = GPTConfig(vocab_size=64, block_size=32, n_layer=args.layers, n_head=4, n_embd=args.width)
gpt = GPT(config)
# The causal masks are constant bool buffers, which gloo cannot broadcast: not synced.
DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
    gpt, [name for name, _ in gpt.named_buffers()])
model = DistributedDataParallel(gpt)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
rng = np.random.default_rng(rank)


def block(steps: int) -> float:
    """Seconds per step over `steps` DDP steps (all ranks in step at the start)."""
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        x = torch.from_numpy(rng.integers(0, 64, size=(4, 32)))
        loss = model(x, x)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return (time.perf_counter() - start) / steps


block(3)  # warm up
times = {"untraced": [], "watch": []}
pairs = []  # each round's watched block over its untraced neighbour
with tempfile.TemporaryDirectory() as tmp:
    run_dir = os.path.join(tmp, "w")
    for round_idx in range(args.rounds):
        # Alternate which goes first, so that a drift in the machine's speed cancels out.
        order = ("untraced", "watch") if round_idx % 2 == 0 else ("watch", "untraced")
        measured = {}
        for config in order:
            if config == "watch":
                _watch.start(run_dir, rank, world)
            measured[config] = block(args.steps)
            if config == "watch":
                _watch.close()
                assert not _C.watch_ring_path()
            times[config].append(measured[config])
        pairs.append(measured["watch"] / measured["untraced"])
dist.destroy_process_group()
if rank == 0:
    base = statistics.median(times["untraced"])
    watched = statistics.median(times["watch"])
    print(json.dumps({"ranks": world, "steps_per_block": args.steps, "rounds": args.rounds,
                      "untraced_ms": base * 1e3, "watch_ms": watched * 1e3,
                      "ratio": statistics.median(pairs),
                      "blocks_ms": {k: [round(v * 1e3, 2) for v in vs] for k, vs in times.items()}}))

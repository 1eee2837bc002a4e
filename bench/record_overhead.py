"""First figure of recording overhead: the example GPT's training step, untraced vs recorded,
measured side by side in one process (alternating blocks, medians).

    PYTHONPATH=build/release/python /usr/bin/python3 bench/record_overhead.py [--layers 2 --width 64]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import upguard  # noqa: E402
from gpt import GPT, GPTConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5, help="steps per timed block")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-depth", type=int, default=None)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=64, block_size=args.block, n_layer=args.layers, n_head=4,
                       n_embd=args.width)
    model = GPT(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)

    def steps(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            x = torch.from_numpy(rng.integers(0, 64, size=(args.batch, args.block)))
            loss = model(x, x)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return (time.perf_counter() - start) / n

    steps(2)  # warm up
    plain, traced = [], []
    ops = 0
    size = 0
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            plain.append(steps(args.steps))
            run = os.path.join(tmp, f"r{repeat}")
            with upguard.record(run, max_depth=args.max_depth) as rec:
                traced.append(steps(args.steps))
            ops = rec.ops_recorded // args.steps
            size = os.path.getsize(rec.trace_path) // args.steps
    p, t = statistics.median(plain), statistics.median(traced)
    print(f"GPT {args.layers}x{args.width}, seq {args.block}, batch {args.batch}, "
          f"max_depth={args.max_depth}")
    print(f"  untraced step   {p * 1e3:8.2f} ms")
    print(f"  recorded step   {t * 1e3:8.2f} ms   ratio {t / p:.2f}x")
    print(f"  ops per step    {ops}   trace bytes per step {size}   ({size / max(ops, 1):.0f} B/op)")


if __name__ == "__main__":
    main()

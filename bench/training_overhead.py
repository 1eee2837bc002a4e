"""Training-step overhead of recording, measured side by side in one process.

For each model size, blocks of N training steps run in turn under each configuration, the
configurations interleaved and repeated; each configuration's median step time is compared to
the untraced median measured in the same rounds:

  untraced          plain PyTorch
  digests           upguard, digest of every op's inputs and outputs (stats off)
  digests+stats     upguard, digests + min/max/mean/L2/NaN/Inf counts (the default)
  top-level         upguard, digests + stats, only ops called from user code (--max-depth 0),
                    about the op granularity the two baselines see
  baseline A        a pure-Python TorchDispatchMode that hashes every output's bytes (blake2b)
  baseline B        a Python statistics dumper in the style of msprobe: per-op min/max/mean/
                    norm of every floating output, computed with torch ops

    PYTHONPATH=build/release/python /usr/bin/python3 bench/training_overhead.py [--quick]

Prints a Markdown table per size; exit 0 (targets are judged by bench/run_all.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import upguard  # noqa: E402
from gpt import GPT, GPTConfig  # noqa: E402


class PerOutputMode(TorchDispatchMode):
    """A Python recorder: runs every op, then looks at each tensor it returned."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def look(self, tensor: torch.Tensor) -> None:
        raise NotImplementedError

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        self.ops += 1
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.look(t)
        return out


class HashEveryOutput(PerOutputMode):
    """Baseline A: what a user writes in an afternoon."""

    def look(self, tensor: torch.Tensor) -> None:
        if tensor.layout == torch.strided:
            hashlib.blake2b(tensor.detach().contiguous().numpy().tobytes()).digest()


class StatsEveryOutput(PerOutputMode):
    """Baseline B: per-op statistics with torch ops, like msprobe's statistics mode."""

    def look(self, tensor: torch.Tensor) -> None:
        if tensor.is_floating_point() and tensor.numel() > 0:
            d = tensor.detach()
            (d.min().item(), d.max().item(), d.mean().item(), d.norm().item())


def make_trainer(layers: int, width: int, block: int, batch: int) -> Callable[[int], float]:
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=64, block_size=block, n_layer=layers, n_head=4, n_embd=width)
    model = GPT(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)

    def steps(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            x = torch.from_numpy(rng.integers(0, 64, size=(batch, block)))
            loss = model(x, x)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return (time.perf_counter() - start) / n

    return steps


def measure(name: str, layers: int, width: int, block: int, batch: int, steps_per_block: int,
            repeats: int) -> List[Dict]:
    steps = make_trainer(layers, width, block, batch)
    steps(1)  # warm up
    times: Dict[str, List[float]] = {k: [] for k in
                                     ("untraced", "digests", "digests+stats", "top-level", "A",
                                      "B")}
    facts: Dict[str, Dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):
            times["untraced"].append(steps(steps_per_block))
            for config, stats, depth in (("digests", False, None), ("digests+stats", True, None),
                                         ("top-level", True, 0)):
                with upguard.record(os.path.join(tmp, f"{config}{repeat}"), stats=stats,
                                    max_depth=depth) as rec:
                    times[config].append(steps(steps_per_block))
                facts[config] = {"ops": rec.ops_recorded / steps_per_block,
                                 "bytes": os.path.getsize(rec.trace_path) / steps_per_block}
            for config, mode in (("A", HashEveryOutput), ("B", StatsEveryOutput)):
                with mode() as m:
                    times[config].append(steps(steps_per_block))
                facts[config] = {"ops": m.ops / steps_per_block, "bytes": None}
    base = statistics.median(times["untraced"])
    rows = []
    for config, values in times.items():
        median = statistics.median(values)
        row = {"size": name, "config": config, "step_ms": median * 1e3,
               "ratio": median / base}
        row.update(facts.get(config, {}))
        rows.append(row)
    return rows


def table(rows: List[Dict]) -> str:
    labels = {"untraced": "untraced", "digests": "upguard digests",
              "digests+stats": "upguard digests + stats",
              "top-level": "upguard digests + stats, top-level ops only",
              "A": "baseline A: Python dispatch mode hashing outputs",
              "B": "baseline B: Python per-op statistics (msprobe-style)"}
    out = ["| model | configuration | step (ms) | ratio to untraced | ops/step | trace bytes/step | bytes/op |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        ops = f"{r['ops']:.0f}" if r.get("ops") else "-"
        size = f"{r['bytes']:.0f}" if r.get("bytes") else "-"
        per_op = f"{r['bytes'] / r['ops']:.0f}" if r.get("bytes") and r.get("ops") else "-"
        out.append(f"| {r['size']} | {labels[r['config']]} | {r['step_ms']:.1f} | "
                   f"{r['ratio']:.2f}x | {ops} | {size} | {per_op} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="demo size only")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = measure("demo GPT 2x64, seq 32, batch 8", 2, 64, 32, 8, steps_per_block=5,
                   repeats=5)
    if not args.quick:
        rows += measure("GPT 6x256, seq 128, batch 4", 6, 256, 128, 4, steps_per_block=1,
                        repeats=3)
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

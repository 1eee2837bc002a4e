"""How far torch.compile (Inductor, CPU) moves the example GPT's numbers from eager mode.

    .venv-torch2/bin/python bench/compile_spread.py [--layers 2 --width 64 --steps 3]

The same model (same initial weights, dropout 0 so no random draws differ) trains from the
same batches twice, eager and compiled; after each step it prints, for the loss, the gradients
and the weights, the distance in float32 ULPs (units in the last place) between the two runs:
the largest, the median, and how many elements are bitwise equal. docs/torch-compile.md quotes
one run of it: the spread a user should expect when an eager run and a compiled run differ.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from typing import Dict, List, Tuple

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from gpt import GPT, GPTConfig  # noqa: E402
from gpt_train import make_batch, make_corpus  # noqa: E402


def ulps(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """|a - b| in float32 ULPs, elementwise (the distance between their ordered bit patterns)."""
    def ordered(t: torch.Tensor) -> np.ndarray:
        bits = t.detach().float().contiguous().view(torch.int32).numpy().astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    return np.abs(ordered(a).ravel() - ordered(b).ravel())


def spread(pairs: List[Tuple[torch.Tensor, torch.Tensor]]) -> str:
    """ULPs (whose maximum comes from values near 0, where one ULP is tiny, so also the
    largest difference relative to the tensor's largest magnitude) and the share equal."""
    dist = np.concatenate([ulps(a, b) for a, b in pairs])
    scaled = max(float((a - b).detach().abs().max() / a.detach().abs().max().clamp_min(1e-30))
                 for a, b in pairs)
    equal = float(np.mean(dist == 0)) * 100
    return (f"ULP median {int(np.median(dist)):>3}, 99th pct {int(np.percentile(dist, 99)):>6}; "
            f"max |diff|/max|x| {scaled:.1e}; bitwise equal {equal:5.1f}% of {dist.size}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    text = make_corpus()
    chars = sorted(set(text))
    data = np.array([chars.index(c) for c in text], dtype=np.int64)
    config = GPTConfig(vocab_size=len(chars), n_layer=args.layers, n_embd=args.width,
                       dropout=0.0)
    eager = GPT(config)
    compiled_model = copy.deepcopy(eager)
    compiled = torch.compile(compiled_model)
    opt_e = torch.optim.AdamW(eager.parameters(), lr=3e-3)
    opt_c = torch.optim.AdamW(compiled_model.parameters(), lr=3e-3)
    rng = np.random.default_rng(0)
    print(f"torch {torch.__version__}, GPT {args.layers}x{args.width}, eager vs torch.compile "
          "(inductor, CPU), float32")
    for step in range(args.steps):
        starts = rng.integers(0, len(data) - config.block_size - 1, size=8)
        x, y = make_batch(data, starts, config.block_size)
        results: Dict[str, torch.Tensor] = {}
        for name, model, forward, opt in (("eager", eager, eager, opt_e),
                                          ("compiled", compiled_model, compiled, opt_c)):
            opt.zero_grad()
            loss = forward(x, y)
            loss.backward()
            results[name] = loss.detach()
            opt.step()
        grads = [(a.grad, b.grad) for a, b in zip(eager.parameters(),
                                                  compiled_model.parameters())]
        weights = [(a, b) for a, b in zip(eager.parameters(), compiled_model.parameters())]
        print(f"step {step}: loss {results['eager'].item():.7f} vs "
              f"{results['compiled'].item():.7f}  "
              f"({int(ulps(results['eager'], results['compiled'])[0])} ULP)")
        print(f"  gradients  {spread(grads)}")
        print(f"  weights    {spread(weights)}")


if __name__ == "__main__":
    main()

"""Train the small character GPT for a few steps: upguard's demo and end-to-end test workload.

    /usr/bin/python3 examples/gpt_train.py --steps 4
    upguard record -o runs/a -- /usr/bin/python3 examples/gpt_train.py
    upguard record -o runs/b -- /usr/bin/python3 examples/gpt_train.py --plant gelu-tanh
    upguard diff runs/a runs/b

--plant makes one realistic change from step --plant-step on, so the diff has something to find:
  gelu-tanh       blocks.1.mlp.act uses the tanh approximation of GELU      (forward culprit)
  backward-scale  blocks.1.attn scales its gradient by 1 + 2^-20 in backward (backward culprit)
  adamw-eps       AdamW's eps becomes 1e-7 (with --optim came: CAME's eps1)   (optimizer culprit)
  lr-warmup       a linear learning-rate warm-up over 4 steps (lr/4, lr/2, ...) (optimizer culprit)
  extra-op        blocks.0.mlp multiplies its hidden activations by 1.0      (structural)
  data-shift      the batches start one character later                      (data)
  data-order      the same batch rows in reverse order                       (data)
  dropout-seed    the random generator is reseeded before the step           (rng)
  reseed-in-forward  the model reseeds the generator inside forward         (rng)
  extra-contiguous  blocks.0.attn copies its queries with .contiguous()       (structural)
  mkldnn-off      torch.backends.mkldnn.enabled = False                      (environment)
Several plants combine: --plant extra-contiguous,gelu-tanh.
Two more plant a NaN/Inf for `upguard nan RUN` (no reference run needed):
  log-zero        blocks.1.attn adds the log of its attention probabilities, some exactly 0 (-inf)
  overflow        blocks.0.mlp applies exp to its activations times 1e4 (+inf)
The text is generated here (a seeded toy grammar), so nothing is downloaded.

torch 2.x training idioms, each off by default (the 1.13 op stream is unchanged):
  --sdpa                      attention by F.scaled_dot_product_attention
  --checkpoint reentrant|non-reentrant   each block under torch.utils.checkpoint
  --autocast bf16             the forward and loss under torch.autocast("cpu", bfloat16)
  --dtype bf16                bfloat16 parameters
  --adamw foreach|fused       AdamW's multi-tensor (foreach) or fused implementation

--optim came trains with upguard.optim.CAME (docs/optim.md) instead of AdamW.
  --compile model|method      torch.compile(model), or model.compile() (torch.nn.Module.compile)
  --module-hooks              a global forward hook on every module (register_module_forward_hook)

--noisy-sum makes the run nondeterministic by design: blocks.0.mlp sums its output projection's
eight partial products in an order drawn from the OS at each call, as GPU atomics would
(`upguard calibrate` learns that noise, docs/long-runs.md).

--resume-every N calls upguard.resume_point at the top of each step: recorded, the run keeps a
snapshot every N steps, from which `upguard diff --zoom` re-runs start (docs/long-runs.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
from typing import Tuple

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPT, GPTConfig  # noqa: E402

PLANTS = ("none", "gelu-tanh", "backward-scale", "adamw-eps", "extra-op", "data-shift",
          "extra-contiguous", "lr-warmup",
          "log-zero", "overflow", "data-order", "dropout-seed", "reseed-in-forward", "mkldnn-off")


def plant_names(text: str) -> str:
    """--plant's value: one plant, or several separated by commas."""
    for name in text.split(","):
        if name not in PLANTS:
            raise argparse.ArgumentTypeError(f"unknown plant {name!r}; choose from {PLANTS}")
    return text


def make_corpus(chars: int = 20000, seed: int = 1234) -> str:
    """Sentences from a small grammar: enough structure for a model to learn a little."""
    rng = random.Random(seed)
    subjects = ["the model", "a gradient", "the optimizer", "every layer", "one kernel",
                "the loss", "a tensor", "the cluster", "our run", "the reference"]
    verbs = ["drifts", "matches", "diverges", "learns", "repeats", "records", "compares",
             "accumulates", "rounds", "reduces"]
    objects = ["the weights", "each step", "its inputs", "the digest", "a small error",
               "the first op", "every bit", "the batch", "two runs", "the curve"]
    tails = [".", " today.", " again.", " slowly.", " bitwise.", " at step nine."]
    parts = []
    while sum(len(p) for p in parts) < chars:
        parts.append(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}"
                     f"{rng.choice(tails)}\n")
    return "".join(parts)[:chars]


def make_batch(data: np.ndarray, starts: np.ndarray, block: int,
               shift: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-character targets for windows of `block` characters at `starts`."""
    x = np.stack([data[s + shift:s + shift + block] for s in starts])
    y = np.stack([data[s + shift + 1:s + shift + 1 + block] for s in starts])
    return torch.from_numpy(x), torch.from_numpy(y)


def resume_points(every: int):  # type: ignore[no-untyped-def]
    """upguard.resume_point with snapshots every `every` steps; a no-op for 0 (so the script
    runs without upguard installed)."""
    if every <= 0:
        return lambda step, state: False
    import upguard
    return lambda step, state: upguard.resume_point(step, state, every=every)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--plant", type=plant_names, default="none")
    parser.add_argument("--plant-step", type=int, default=2)
    parser.add_argument("--sdpa", action="store_true")
    parser.add_argument("--checkpoint", choices=("none", "reentrant", "non-reentrant"),
                        default="none")
    parser.add_argument("--autocast", choices=("none", "bf16"), default="none")
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--adamw", choices=("default", "foreach", "fused"), default="default")
    parser.add_argument("--optim", choices=("adamw", "came"), default="adamw",
                        help="came: upguard.optim.CAME (float32 master weights with --dtype bf16)")
    parser.add_argument("--compile", choices=("none", "model", "method"), default="none")
    parser.add_argument("--module-hooks", action="store_true")
    parser.add_argument("--noisy-sum", action="store_true",
                        help="blocks.0.mlp sums its projection in a random order (nondeterministic)")
    parser.add_argument("--resume-every", type=int, default=0,
                        help="a upguard.resume_point snapshot every N steps (0: no call)")
    parser.add_argument("--save", help="write the final parameters here (torch.save)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    text = make_corpus()
    vocab = sorted(set(text))
    data = np.array([vocab.index(c) for c in text], dtype=np.int64)
    config = GPTConfig(vocab_size=len(vocab), block_size=args.block, n_layer=args.layers,
                       n_head=4, n_embd=args.width, sdpa=args.sdpa, checkpoint=args.checkpoint)
    model = GPT(config)
    model.blocks[0].mlp.noisy_sum = args.noisy_sum
    if args.dtype == "bf16":
        model = model.to(torch.bfloat16)
    adamw = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}[args.adamw]
    if args.optim == "came":  # upguard.optim.CAME: the fused C++ step (docs/optim.md)
        try:
            from upguard.optim import CAME
        except ImportError as error:
            raise SystemExit(f"--optim came needs the upguard package ({error}): run under "
                             "`upguard record`, or with PYTHONPATH=build/release/python")

        optimizer = CAME(model.parameters(), lr=args.lr, weight_decay=0.01,
                         master_weights=args.dtype == "bf16")
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1, **adamw)
    if args.module_hooks:
        torch.nn.modules.module.register_module_forward_hook(lambda module, inputs, output: None)
    forward = model
    if args.compile == "model":
        forward = torch.compile(model)
    elif args.compile == "method":
        model.compile()
    batch_rng = np.random.default_rng(args.seed)
    state = {"model": model, "optimizer": optimizer, "batches": batch_rng}
    resume_point = resume_points(args.resume_every)

    for step in range(args.steps):
        if resume_point(step, state):
            continue  # a re-run of `upguard diff --zoom` resumes at a later snapshot
        planted = args.plant != "none" and step >= args.plant_step
        plants = args.plant.split(",")
        if planted and "gelu-tanh" in plants:
            model.blocks[1].mlp.act.approximate = "tanh"
        if planted and "backward-scale" in plants:
            model.blocks[1].attn.grad_scale = 1.0 + 2.0 ** -20
        if planted and "adamw-eps" in plants:
            for group in optimizer.param_groups:  # CAME's eps1 (added to g^2) instead
                group["eps"] = (1e-7, group["eps"][1]) if args.optim == "came" else 1e-7
        if planted and "lr-warmup" in plants:
            for group in optimizer.param_groups:
                group["lr"] = args.lr * min(1.0, (step - args.plant_step + 1) / 4)
        if planted and "extra-op" in plants:
            model.blocks[0].mlp.extra_op = True
        if planted and "extra-contiguous" in plants:
            model.blocks[0].attn.extra_contiguous = True
        if planted and args.plant == "log-zero":
            model.blocks[1].attn.log_zero = True
        if planted and args.plant == "overflow":
            model.blocks[0].mlp.overflow = True
        if planted and "dropout-seed" in plants:
            torch.manual_seed(args.seed + 1000 + step)
        if planted and "reseed-in-forward" in plants:
            model.reseed = args.seed + 1000 + step
        if planted and "mkldnn-off" in plants:
            torch.backends.mkldnn.enabled = False
        shift = 1 if planted and "data-shift" in plants else 0
        starts = batch_rng.integers(0, len(data) - args.block - 2, size=args.batch)
        if planted and "data-order" in plants:
            starts = starts[::-1]
        x, y = make_batch(data, starts, args.block, shift)

        autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.autocast == "bf16"
                    else contextlib.nullcontext())
        with autocast:
            loss = forward(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if not args.quiet:
            print(f"step {step}: loss {loss.item():.6f}", flush=True)

    if args.save:
        torch.save({name: p.detach().clone() for name, p in model.named_parameters()}, args.save)


if __name__ == "__main__":
    main()

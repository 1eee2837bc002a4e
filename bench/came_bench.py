"""CAME's memory and speed (issue 17, part 4): optimizer state bytes against AdamW on the
built-in GPT's parameters, and the step time of the fused step against a straightforward Python
implementation written with torch ops from the algorithm, and against torch.optim.AdamW.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/came_bench.py [--quick]

Step times are medians over rounds in which the three optimizers take turns (the machine is
shared and noisy); each optimizer steps on the same fixed gradients.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from gpt import GPT, GPTConfig  # noqa: E402

from upguard.optim import CAME  # noqa: E402


class PythonCAME(torch.optim.Optimizer):
    """The algorithm of issue 17 written with torch ops, one tensor at a time: the baseline."""

    def __init__(self, params, lr, betas=(0.9, 0.999, 0.9999), eps=(1e-30, 1e-16),
                 clip_threshold=1.0, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, clip_threshold=clip_threshold,
                                      weight_decay=weight_decay))

    @staticmethod
    def _approx(row, col):
        return ((row / row.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1) *
                col.unsqueeze(-2).rsqrt())

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2, b3 = group["betas"]
            e1, e2 = group["eps"]
            for p in group["params"]:
                g = p.grad.float()
                state = self.state[p]
                factored = g.dim() >= 2
                if not state:
                    state["m"] = torch.zeros_like(g)
                    if factored:
                        for key in ("r", "R"):
                            state[key] = torch.zeros(g.shape[:-1])
                        for key in ("c", "C"):
                            state[key] = torch.zeros(g.shape[:-2] + g.shape[-1:])
                    else:
                        state["v"] = torch.zeros_like(g)
                q = g * g + e1
                if factored:
                    state["r"].mul_(b2).add_(q.mean(dim=-1), alpha=1 - b2)
                    state["c"].mul_(b2).add_(q.mean(dim=-2), alpha=1 - b2)
                    u = self._approx(state["r"], state["c"]) * g
                else:
                    state["v"].mul_(b2).add_(q, alpha=1 - b2)
                    u = state["v"].rsqrt() * g
                u.div_((u.norm(2) / u.numel() ** 0.5 / group["clip_threshold"]).clamp_(min=1.0))
                m = state["m"].mul_(b1).add_(u, alpha=1 - b1)
                if factored:
                    res = (u - m) ** 2 + e2
                    state["R"].mul_(b3).add_(res.mean(dim=-1), alpha=1 - b3)
                    state["C"].mul_(b3).add_(res.mean(dim=-2), alpha=1 - b3)
                    update = self._approx(state["R"], state["C"]) * m
                else:
                    update = m
                if group["weight_decay"] != 0:
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(update, alpha=-group["lr"])


def state_bytes(optimizer: torch.optim.Optimizer, matrices: bool) -> int:
    total = 0
    for param, state in optimizer.state.items():
        if (param.dim() >= 2) != matrices:
            continue
        total += sum(v.numel() * v.element_size() for v in state.values() if torch.is_tensor(v)
                     and v.numel() > 1)  # not the step counter
    return total


def model(layers: int, width: int) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=65, block_size=128, n_layer=layers, n_head=4, n_embd=width))


def memory_rows() -> list:
    net = model(2, 64)
    rows = []
    optimizers = {"AdamW": torch.optim.AdamW(net.parameters(), lr=1e-3),
                  "CAME": CAME(net.parameters(), lr=1e-3)}
    for param in net.parameters():
        param.grad = torch.ones_like(param)
    for optimizer in optimizers.values():
        optimizer.step()
    for kind, matrices in (("matrices", True), ("vectors", False)):
        adamw = state_bytes(optimizers["AdamW"], matrices)
        came = state_bytes(optimizers["CAME"], matrices)
        rows.append((kind, adamw, came, came / adamw))
    return rows


def speed(layers: int, width: int, rounds: int, steps: int) -> dict:
    net = model(layers, width)
    params = list(net.parameters())
    generator = torch.Generator().manual_seed(1)
    grads = [torch.randn(p.shape, generator=generator) * 1e-2 for p in params]
    made = {"CAME (fused)": lambda: CAME(params, lr=1e-4, weight_decay=1e-2),
            "CAME (torch ops)": lambda: PythonCAME(params, lr=1e-4, weight_decay=1e-2),
            "AdamW": lambda: torch.optim.AdamW(params, lr=1e-4, weight_decay=1e-2)}
    optimizers = {name: make() for name, make in made.items()}
    for param, grad in zip(params, grads):
        param.grad = grad
    times = {name: [] for name in optimizers}
    for _ in range(rounds):
        for name, optimizer in optimizers.items():
            optimizer.step()  # warm
            start = time.perf_counter()
            for _ in range(steps):
                optimizer.step()
            times[name].append((time.perf_counter() - start) / steps)
    return {name: statistics.median(values) for name, values in times.items()}, sum(
        p.numel() for p in params)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("Optimizer state on the built-in GPT's parameters (2x64, one step taken), bytes:\n")
    print("| parameters | AdamW | CAME | CAME / AdamW |")
    print("|---|---:|---:|---:|")
    memory = memory_rows()
    for kind, adamw, came, ratio in memory:
        print(f"| {kind} | {adamw:,} | {came:,} | {ratio:.3f}x |")
    rounds, steps = (3, 2) if args.quick else (7, 3)
    print(f"\nStep time (torch {torch.__version__}, 1 thread; median of {rounds} rounds of "
          f"{steps} steps, the optimizers taking turns):\n")
    print("| model | parameters | CAME fused (ms) | CAME torch ops (ms) | AdamW (ms) | "
          "torch ops / fused | AdamW / fused |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    verdicts = []
    for layers, width in ((2, 64), (6, 256)):
        times, count = speed(layers, width, rounds, steps)
        fused, ops, adamw = (times["CAME (fused)"], times["CAME (torch ops)"], times["AdamW"])
        print(f"| GPT {layers}x{width} | {count:,} | {fused * 1e3:.2f} | {ops * 1e3:.2f} | "
              f"{adamw * 1e3:.2f} | {ops / fused:.2f}x | {adamw / fused:.2f}x |")
        if (layers, width) == (6, 256):
            verdicts.append(f"- step time on the larger GPT: {ops / fused:.2f}x faster than "
                            f"the torch-ops implementation, target >= 2x: "
                            f"**{'PASS' if ops / fused >= 2 else 'MISS'}**")
    matrices = memory[0][3]
    verdicts.insert(0, f"- state of the matrices: {matrices:.3f}x AdamW's, target <= 0.55x: "
                       f"**{'PASS' if matrices <= 0.55 else 'MISS'}**")
    print("\n" + "\n".join(verdicts))


if __name__ == "__main__":
    main()

"""A tiny regression trained by a plain loop (forward, backward, optimizer.step()) or by LBFGS,
whose step calls the closure (forward and backward) several times; test_phases.py records it.

    upguard record -o runs/a -- python3 tests/e2e/closure_train.py --optim lbfgs
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--optim", choices=("sgd", "lbfgs"), default="sgd")
parser.add_argument("--steps", type=int, default=2)
args = parser.parse_args()

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
x, y = torch.randn(16, 4), torch.randn(16, 1)
loss_of = lambda x, y: F.mse_loss(model(x), y)  # noqa: E731

if args.optim == "sgd":
    optimizer: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(args.steps):
        loss = loss_of(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
else:
    # max_iter 3: up to four closure calls a step (one, then one per iteration).
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=3)

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        return loss

    for _ in range(args.steps):
        optimizer.step(closure)

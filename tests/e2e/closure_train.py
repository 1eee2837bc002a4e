"""A tiny regression trained by a plain loop (forward, backward, optimizer.step()) or by LBFGS,
whose step calls the closure (forward and backward) several times; test_phases.py records it.
With --task the model is `net` of a Task module whose own forward never runs (as a
LightningModule's): its loss method calls self.net.

    upguard record -o runs/a -- python3 tests/e2e/closure_train.py --optim lbfgs --task
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--optim", choices=("sgd", "lbfgs"), default="sgd")
parser.add_argument("--steps", type=int, default=2)
parser.add_argument("--task", action="store_true", help="call the model from a Task's method")
args = parser.parse_args()


class Task(torch.nn.Module):
    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(self.net(x), y)


torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
x, y = torch.randn(16, 4), torch.randn(16, 1)
loss_of = Task(model).loss if args.task else lambda x, y: F.mse_loss(model(x), y)

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

"""A small model whose submodule `flaky` raises in forward at step --raise-step; the program
catches it and trains on. The workload of test_module_stack.py.

    --raise-where inner   Net.forward catches the error and goes on without `flaky`
    --raise-where outer   the training loop catches it from model(x), then calls model(x) again
    --shift-step S        the batch of step S is shifted by 1 (a data difference)
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from torch import nn


class FlakyError(RuntimeError):
    pass


class Flaky(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.fail = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if self.fail:
            raise FlakyError("planted failure")
        return torch.relu(h)


class Net(nn.Module):
    def __init__(self, catch: bool) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.flaky = Flaky()
        self.out = nn.Linear(16, 1)
        self.catch = catch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        if not self.catch:
            return self.out(self.flaky(h))
        try:
            h = self.flaky(h)
        except FlakyError:
            h = torch.tanh(h)  # an op of Net itself: module path ""
        return self.out(h)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--raise-step", type=int, default=1)
    parser.add_argument("--raise-where", choices=("inner", "outer"), default="inner")
    parser.add_argument("--shift-step", type=int, default=-1)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Net(catch=args.raise_where == "inner")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    # Batches made outside torch, so a shifted one differs only as the model's input.
    rng = np.random.default_rng(0)
    data = rng.standard_normal((args.steps, 4, 8), dtype=np.float32)
    target = rng.standard_normal((args.steps, 4, 1), dtype=np.float32)
    for step in range(args.steps):
        x = torch.from_numpy(data[step] + (1.0 if step == args.shift_step else 0.0))
        model.flaky.fail = step == args.raise_step
        if model.flaky.fail and args.raise_where == "outer":
            try:
                model(x)
            except FlakyError:
                pass
            model.flaky.fail = False
        loss = nn.functional.mse_loss(model(x), torch.from_numpy(target[step]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()

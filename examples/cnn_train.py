"""Train a small CNN with normalization layers (or torchvision's ResNet-18) for a few steps.

    /usr/bin/python3 examples/cnn_train.py --steps 3
    upguard record -o runs/a -- /usr/bin/python3 examples/cnn_train.py
    upguard record -o runs/b -- /usr/bin/python3 examples/cnn_train.py --plant bn-momentum
    upguard diff runs/a runs/b

The model: conv -> BatchNorm2d (bn1) -> ReLU -> conv -> GroupNorm (gn) -> InstanceNorm2d with
running statistics (inorm) -> ReLU -> pool -> linear, trained with SGD (momentum). `--model
resnet18` trains torchvision's ResNet-18 instead (code nobody here wrote). Batches come from a
DataLoader over a generated dataset (nothing is downloaded), shuffled with a seeded generator;
`--workers`, `--pin-memory`, `--persistent-workers` and `--prefetch` configure it. `--eval`
evaluates after every step (under torch.inference_mode(), or no_grad with `--eval-mode
no_grad`); `--raise-step N` makes bn1's forward raise once at step N (the script catches it). `--compile`
trains and evaluates through torch.compile(model) (torch 2.x).

--plant makes one change from step --plant-step (default 0) on:
  bn-momentum     bn1's momentum 0.1 -> 0.2          (the running statistics differ, outputs do not)
  bn-eps          bn1's eps 1e-5 -> 1e-3             (culprit: its output differs)
  inorm-momentum  inorm's momentum 0.1 -> 0.3        (running statistics of an InstanceNorm)
  channels-last   model and batches in channels_last memory format
  mkldnn-off      torch.backends.mkldnn.enabled = False (set after import, before training)
  buffer-numpy    bn1.running_var[0] += 0.5 through numpy before optimizer.step (memory written
                  outside PyTorch: no op shows it; the model state at the step's end does)
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

PLANTS = ("none", "bn-momentum", "bn-eps", "inorm-momentum", "channels-last", "mkldnn-off",
          "buffer-numpy")


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.gn = nn.GroupNorm(4, 16)
        self.inorm = nn.InstanceNorm2d(16, affine=True, track_running_stats=True)
        self.fc = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.inorm(self.gn(self.conv2(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Raising(nn.Module):
    """Wraps a module; raises from inside its forward once, when armed (--raise-step)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.armed = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.inner(x)
        if self.armed:
            self.armed = False
            raise RuntimeError("planted failure inside forward")
        return y


class Images(torch.utils.data.Dataset):
    """Deterministic images: sample i is generated from seed i."""

    def __init__(self, count: int, size: int, classes: int) -> None:
        self.count, self.size, self.classes = count, size, classes

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):  # type: ignore[no-untyped-def]
        gen = torch.Generator().manual_seed(10_000 + index)
        image = torch.randn(3, self.size, self.size, generator=gen)
        return image, index % self.classes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=16, help="image height and width")
    parser.add_argument("--model", choices=("small", "resnet18"), default="small")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--pin-memory", action="store_true")
    parser.add_argument("--persistent-workers", action="store_true")
    parser.add_argument("--prefetch", type=int, default=None, help="prefetch_factor (workers > 0)")
    parser.add_argument("--eval", action="store_true", help="evaluate after every step")
    parser.add_argument("--eval-mode", choices=("inference_mode", "no_grad"),
                        default="inference_mode")
    parser.add_argument("--raise-step", type=int, default=-1)
    parser.add_argument("--plant", choices=PLANTS, default="none")
    parser.add_argument("--plant-step", type=int, default=0)
    parser.add_argument("--compile", action="store_true", help="torch.compile(model) (torch 2.x)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.plant == "mkldnn-off":
        torch.backends.mkldnn.enabled = False
    if args.model == "resnet18":
        import torchvision  # Debian's python3-torchvision

        model: nn.Module = torchvision.models.resnet18(num_classes=10)
        bn1, inorm = model.bn1, None
    else:
        small = SmallCNN()
        bn1, inorm = small.bn1, small.inorm
        model = small
    raising = Raising(bn1)
    if args.raise_step >= 0:  # bn1 runs inside the wrapper: its path becomes bn1.inner
        model.bn1 = raising
    channels_last = args.plant == "channels-last"
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    forward = torch.compile(model) if args.compile else model
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)

    data = Images(args.batch * (args.steps + 1), args.size, 10)
    loader_args = dict(batch_size=args.batch, shuffle=True, num_workers=args.workers,
                       generator=torch.Generator().manual_seed(args.seed),
                       pin_memory=args.pin_memory, drop_last=True)
    if args.workers > 0:
        loader_args["persistent_workers"] = args.persistent_workers
        if args.prefetch is not None:
            loader_args["prefetch_factor"] = args.prefetch
    loader = torch.utils.data.DataLoader(data, **loader_args)
    probe = torch.stack([data[i][0] for i in range(2)])

    batches = iter(loader)
    for step in range(args.steps):
        if args.plant != "none" and step >= args.plant_step:
            if args.plant == "bn-momentum":
                bn1.momentum = 0.2
            if args.plant == "bn-eps":
                bn1.eps = 1e-3
            if args.plant == "inorm-momentum" and inorm is not None:
                inorm.momentum = 0.3
        x, y = next(batches)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        model.train()
        if step == args.raise_step:
            raising.armed = True
            try:
                model(x)
            except RuntimeError:
                pass
        loss = F.cross_entropy(forward(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if args.plant == "buffer-numpy" and step >= args.plant_step:
            bn1.running_var.numpy()[0] += 0.5  # no torch op: invisible to the op stream
        optimizer.step()
        line = f"step {step}: loss {loss.item():.6f}"
        if args.eval:
            model.eval()
            with (torch.inference_mode() if args.eval_mode == "inference_mode"
                  else torch.no_grad()):
                line += f" eval {forward(probe).float().abs().sum().item():.6f}"
        if not args.quiet:
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())

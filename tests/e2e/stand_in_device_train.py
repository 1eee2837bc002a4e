"""A tiny MLP trained with Adam on the stand-in accelerator (tests/device/stand_in_device.cc), a
PrivateUse1 backend whose kernels upguard cannot see, as it cannot see a GPU's.

    upguard record -o runs/a -- PYTHON tests/e2e/stand_in_device_train.py \
        --device-lib build/release/tests/device/libupguard_standin_device.so
    (the same with --nudge: one weight element differs in device memory)

--device cpu trains the same model on the CPU (no library needed).
"""

from __future__ import annotations

import argparse
import ctypes
import types

import torch
import torch.nn as nn


def stand_in_device(library: str) -> torch.device:
    """Loads the stand-in backend: "standin" where torch can rename PrivateUse1 (2.x). Once
    per process: a second call (main() run again) finds it loaded."""
    torch.ops.load_library(library)
    rename = getattr(torch.utils, "rename_privateuse1_backend", None)
    if rename is None:  # torch 1.13
        return torch.device("privateuseone")
    if hasattr(torch, "standin"):
        return torch.device("standin")
    rename("standin")
    # torch 2.x imports torch.<backend> before a device's first tensor; the optimizers ask
    # torch.accelerator, which asks it whether the device is available.
    module = types.ModuleType("torch.standin")
    module.is_available = lambda: True  # type: ignore[attr-defined]
    module.device_count = lambda: 1  # type: ignore[attr-defined]
    # Random ops on the device run CPU kernels, which draw from the CPU generator that
    # torch.manual_seed seeds: the device has no generator of its own to seed.
    module._is_in_bad_fork = lambda: False  # type: ignore[attr-defined]
    module.manual_seed_all = lambda seed: None  # type: ignore[attr-defined]
    torch._register_device_module("standin", module)
    return torch.device("standin")


def nudge(weight: torch.Tensor) -> None:
    """Adds 2^-10 to the first element of `weight` where it lives, without any ATen op.

    This is what a device's kernel that upguard cannot see does to a GPU's memory; any op would
    be recorded (its scalar, or the CPU tensor it copies from). The stand-in device's memory is
    host memory, so its address can be written to directly.
    """
    assert weight.dtype == torch.float32 and weight.is_contiguous()
    element = ctypes.c_float.from_address(weight.data_ptr())
    element.value += 2.0 ** -10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["standin", "cpu"], default="standin")
    parser.add_argument("--device-lib", help="libupguard_standin_device.so (for --device standin)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--nudge", action="store_true", help="one weight element differs")
    parser.add_argument("--print-loss", action="store_true",
                        help="read each step's loss back to the host and print it")
    args = parser.parse_args()
    if args.device == "cpu":
        device = torch.device("cpu")
    else:
        if not args.device_lib:
            parser.error("--device standin needs --device-lib")
        device = stand_in_device(args.device_lib)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    inputs, targets = torch.randn(32, 8), torch.randn(32, 1)
    model.to(device)
    inputs, targets = inputs.to(device), targets.to(device)
    if args.nudge:
        nudge(model[0].weight)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(args.steps):
        loss = nn.functional.mse_loss(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        # Off by default: a loss read back to the host is a value upguard could compare.
        if args.print_loss:
            print(f"step {step}: loss {loss.item():.8f} on {loss.device}")


if __name__ == "__main__":
    main()

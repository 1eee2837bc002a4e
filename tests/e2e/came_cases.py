"""upguard.optim.CAME cases for test_came.py, run in the interpreter under test; each prints
one JSON object.

    python came_cases.py reference THREADS   # the authors' 20 steps (tests/data/came/README.md)
    python came_cases.py roundtrip           # state_dict saved mid-run and loaded: same bits
    python came_cases.py sparse              # a sparse gradient: the error
    python came_cases.py bf16                # small updates: nearest, master, stochastic
    python came_cases.py threads THREADS     # a digest of the parameters and state after 5 steps
    python came_cases.py layouts             # a channels-last weight steps as a contiguous one
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

from upguard.optim import CAME

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "came"


def x(k: int, i: np.ndarray, t: int) -> np.ndarray:
    return np.sin(0.37 * i + 1.3 * t + 0.71 * k) + 0.25 * np.cos(0.113 * i * (k + 1) - 0.5 * t)


def reference(threads: int) -> dict:
    torch.set_num_threads(threads)
    shapes = [(64, 32), (32,), (16, 8, 4)]
    params = [torch.nn.Parameter(torch.from_numpy(
        (0.1 * x(k, np.arange(math.prod(s)), 0)).astype(np.float32)).reshape(s))
        for k, s in enumerate(shapes)]
    optimizer = CAME([{"params": params[:2], "lr": 1e-2, "weight_decay": 1e-2},
                      {"params": params[2:], "lr": 5e-3}], lr=1.0)
    sums = {}
    for t in range(1, 21):
        for k, (p, shape) in enumerate(zip(params, shapes)):
            i = np.arange(p.numel())
            scale = 1 + ((i // shape[-1]) % 7) / 3
            target = 0.05 * x(k + 3, i, 0)
            grad = scale * (0.5 * (p.detach().double().numpy().ravel() - target) + 0.1 * x(k, i, t))
            p.grad = torch.from_numpy(grad.astype(np.float32)).reshape(shape)
        optimizer.step()
        if t in (1, 2, 10, 20):
            sums[t] = [p.detach().double().sum().item() for p in params]
    ours = np.concatenate([p.detach().numpy().ravel() for p in params]).astype(np.float64)
    ref = np.fromfile(DATA / "official_params_after_20_steps.f32", dtype="<f4").astype(np.float64)
    relative = np.abs(ours - ref) / np.maximum(np.abs(ref), 1e-9)
    return {"sums": sums, "max_relative_error": float(relative.max()),
            "same_bits": int((ours == ref).sum()), "values": int(ref.size)}


def model(dtype: torch.dtype) -> torch.nn.Module:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.LayerNorm(24), torch.nn.GELU(),
                              torch.nn.Linear(24, 4))
    return net.to(dtype)


def train(net: torch.nn.Module, optimizer: torch.optim.Optimizer, steps: range) -> None:
    for step in steps:
        generator = torch.Generator().manual_seed(step)
        inputs = torch.randn(32, 16, generator=generator).to(next(net.parameters()).dtype)
        loss = net(inputs).float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def make_optimizer(net: torch.nn.Module, **options) -> CAME:
    params = list(net.parameters())
    return CAME([{"params": params[:2], "lr": 3e-3}, {"params": params[2:]}], lr=1e-3,
                weight_decay=1e-2, **options)


def roundtrip() -> dict:
    out = {}
    for name, dtype, options in (("float32", torch.float32, {}),
                                 ("bf16_master", torch.bfloat16, {"master_weights": True})):
        straight = model(dtype)
        train(straight, make_optimizer(straight, **options), range(6))
        first = model(dtype)
        optimizer = make_optimizer(first, **options)
        train(first, optimizer, range(3))
        saved = io.BytesIO()
        torch.save({"model": first.state_dict(), "optimizer": optimizer.state_dict()}, saved)
        saved.seek(0)
        loaded = torch.load(saved)
        second = model(dtype)
        second.load_state_dict(loaded["model"])
        resumed = make_optimizer(second, **options)
        resumed.load_state_dict(loaded["optimizer"])
        state_dtypes = sorted({str(value.dtype) for state in resumed.state.values()
                               for value in state.values() if torch.is_tensor(value)})
        train(second, resumed, range(3, 6))
        out[name] = {
            "same_bits": all(torch.equal(a, b) for a, b in
                             zip(straight.parameters(), second.parameters())),
            "state_dtypes": state_dtypes,
            "lrs": [group["lr"] for group in resumed.param_groups],
            "keys": sorted(next(iter(resumed.state.values())).keys()),
        }
    return out


def sparse() -> dict:
    embedding = torch.nn.Embedding(10, 4, sparse=True)
    optimizer = CAME(embedding.parameters(), lr=1e-3)
    embedding(torch.tensor([1, 2])).sum().backward()
    try:
        optimizer.step()
    except RuntimeError as error:
        return {"error": str(error)}
    return {"error": None}


def bf16() -> dict:
    out = {}
    for name, options in (("nearest", {}), ("master", {"master_weights": True}),
                          ("stochastic", {"stochastic_rounding": True, "seed": 7})):
        # 1-D: each step moves a value by lr * m <= 1e-4, far below half a bfloat16 ulp (2^-9).
        param = torch.nn.Parameter(torch.ones(32768, dtype=torch.bfloat16))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            optimizer = CAME([param], lr=1e-4, **options)
            for _ in range(20):
                param.grad = torch.ones_like(param)
                optimizer.step()
        state = optimizer.state[param]
        out[name] = {"mean": param.detach().double().mean().item(),
                     "master_mean": state["master"].double().mean().item()
                     if "master" in state else None,
                     "warnings": [str(w.message) for w in caught]}
    return out


def threads(count: int) -> dict:
    """Tensors large enough that the step's blocks run on several threads (300x700: 13 row
    blocks, 3 column chunks), gradients from a seeded generator: a digest of the bits."""
    torch.set_num_threads(count)
    generator = torch.Generator().manual_seed(3)
    params = [torch.nn.Parameter(torch.randn(shape, generator=generator))
              for shape in ((300, 700), (4, 64, 300), (100000,), (7, 3))]
    optimizer = CAME(params, lr=1e-3, weight_decay=1e-2)
    for _ in range(5):
        for param in params:
            param.grad = torch.randn(param.shape, generator=generator)
        optimizer.step()
    digest = hashlib.sha256()
    for param in params:
        digest.update(param.detach().numpy().tobytes())
        for key, value in sorted(optimizer.state[param].items()):
            if torch.is_tensor(value):
                digest.update(value.numpy().tobytes())
    return {"threads": torch.get_num_threads(), "digest": digest.hexdigest()}


def layouts() -> dict:
    generator = torch.Generator().manual_seed(4)
    weight = torch.randn(8, 3, 5, 5, generator=generator)
    grads = [torch.randn(weight.shape, generator=generator) for _ in range(3)]
    params = [torch.nn.Parameter(weight.clone()),
              torch.nn.Parameter(weight.clone().to(memory_format=torch.channels_last))]
    for param in params:
        optimizer = CAME([param], lr=1e-2)
        for grad in grads:
            param.grad = grad.clone()
            optimizer.step()
    return {"channels_last": params[1].is_contiguous(memory_format=torch.channels_last),
            "same": torch.equal(params[0], params[1])}


if __name__ == "__main__":
    case = sys.argv[1]
    if case == "reference":
        result = reference(int(sys.argv[2]))
    else:
        result = threads(int(sys.argv[2])) if case == "threads" else \
            {"roundtrip": roundtrip, "sparse": sparse, "bf16": bf16, "layouts": layouts}[case]()
    print(json.dumps(result))

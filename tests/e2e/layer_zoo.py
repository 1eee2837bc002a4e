"""A zoo of every `torch.nn` layer class, run in train and eval mode, for the hidden-write probe.

Some ATen kernels write an input tensor that their schema does not declare as written:
`aten::native_batch_norm` updates `running_mean`/`running_var` in train mode,
`aten::rrelu_with_noise` fills `noise`, an embedding with `max_norm` renormalizes its weight,
and so on. A probe (C++, outside this file) watches every op while this script runs; this file's
only job is to make every such kernel run. It therefore exercises:

* every public `torch.nn` layer class (`layer_cases()`), several configurations for some, each
  built with a fixed seed and run `steps` times in train mode (forward + backward) and in eval
  mode (forward with autograd on, then once under `torch.no_grad()` for the fast paths);
* every `torch.optim` optimizer, with `foreach=False` and `foreach=True` where accepted, and
  `torch.nn.utils.clip_grad_norm_`;
* a few functional paths and `no_grad()` / `inference_mode()` evaluation of a small CNN.

`coverage_problems()` names each `torch.nn` module class that is neither run here nor listed in
`excluded()`, so that a test fails when a torch upgrade adds a layer. Pure torch: works on
torch 1.13 (Debian) and 2.x; classes that only some versions have are looked up with getattr.

    /usr/bin/python3 tests/e2e/layer_zoo.py    # runs everything; exit 1 on coverage problems
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import time
import warnings
from typing import Any, Callable, Dict, List, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from layer_zoo_inputs import Case
from layer_zoo_layers import (activations, attention, convolution, dropout, normalization,
                              padding, pooling, recurrent, sparse)
from layer_zoo_losses import linear_and_shape, losses


def layer_cases() -> List[Case]:
    """(name, make_module, make_inputs) for every torch.nn layer class; several configs for some.

    `name` is "Class" or "Class/config". make_inputs returns the positional arguments of
    forward(); it is called after the case's seed is set, once per step."""
    return (activations() + attention() + normalization() + convolution() + pooling()
            + padding() + dropout() + recurrent() + sparse() + linear_and_shape() + losses())


def excluded() -> Dict[str, str]:
    """torch.nn module classes deliberately not run by layer_cases(), with the reason."""
    container = "container: holds modules/parameters, runs no op of its own"
    return {
        "Module": "base class of every layer",
        "Container": "deprecated container, " + container,
        "Sequential": container + " (used by the channels_last conv+BN case)",
        "ModuleList": container,
        "ModuleDict": container,
        "ParameterList": container,
        "ParameterDict": container,
        "SyncBatchNorm": "needs an initialized torch.distributed process group (and CUDA)",
        "RNNBase": "abstract base of RNN/LSTM/GRU: no forward() of its own",
        "RNNCellBase": "abstract base of RNNCell/LSTMCell/GRUCell: no forward()",
    }


@contextlib.contextmanager
def _expected_warnings_silenced():
    """Silence the warnings this zoo provokes on purpose (lazy, deprecated, prototype classes)."""
    with warnings.catch_warnings():
        for message in ("Lazy modules are a new feature", "`?NLLLoss2d`? has been deprecated",
                        "The PyTorch API of nested tensors is in prototype stage",
                        "enable_nested_tensor is True",  # 2.x, seq-first encoders on purpose
                        "`?torch.nn.utils.weight_norm`? is deprecated",  # 2.x
                        "LSTM with projections is not supported with oneDNN"):  # 2.x
            warnings.filterwarnings("ignore", message=message)
        yield


def _nn_classes() -> List[str]:
    """Public torch.nn classes that are torch.nn.Module subclasses."""
    return sorted(n for n in dir(nn) if not n.startswith("_")
                  and inspect.isclass(getattr(nn, n)) and issubclass(getattr(nn, n), nn.Module))


def coverage_problems() -> List[str]:
    """torch.nn module classes neither run by layer_cases() nor in excluded() (empty = full).

    A class counts as covered when some case's make_module() returns an instance of exactly it."""
    torch.manual_seed(0)
    with _expected_warnings_silenced():
        covered = {type(make()).__name__ for _, make, _ in layer_cases()}
    skip = excluded()
    return [n for n in _nn_classes() if n not in covered and n not in skip]


# --- running -----------------------------------------------------------------------------------

def _tensors(obj: Any) -> List[Tensor]:
    """Every tensor in a (nested) forward output: tuples, namedtuples, PackedSequence, dicts."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


def _backward(out: Any) -> None:
    """One backward through the sum of every float output that requires grad."""
    grads = [t.sum() for t in _tensors(out) if t.is_floating_point() and t.requires_grad]
    if grads:
        torch.stack(grads).sum().backward()


def run_case(name: str, make_module: Callable[[], nn.Module], make_inputs: Callable[[], tuple],
             steps: int = 2) -> None:
    """Train mode: `steps` forward+backward; eval mode: `steps` forwards, then one under no_grad."""
    for training in (True, False):
        try:
            torch.manual_seed(0)
            module = make_module().train(training)
            for _ in range(steps):
                out = module(*make_inputs())
                if training:
                    _backward(out)
            if not training:
                with torch.no_grad():
                    module(*make_inputs())
        except Exception as e:
            mode = "train" if training else "eval"
            raise RuntimeError(f"layer_zoo case {name!r} failed in {mode} mode: {e}") from e


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def run_optimizers(steps: int = 2) -> None:
    """Every optimizer (foreach off and on where accepted), clip_grad_norm_, LBFGS, SparseAdam."""
    optim = torch.optim
    dense: List[Tuple[Any, Dict[str, Any]]] = [
        (optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)),
        (optim.SGD, dict(lr=0.1)),
        (optim.Adam, dict(lr=1e-2, weight_decay=1e-4)),
        (optim.Adam, dict(lr=1e-2, amsgrad=True)),
        (optim.AdamW, dict(lr=1e-2, amsgrad=True)),
        (optim.RMSprop, dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=1e-4)),
        (optim.Adagrad, dict(lr=1e-2, lr_decay=1e-3, weight_decay=1e-4)),
        (optim.Adadelta, dict(weight_decay=1e-4)),
        (optim.Adamax, dict(lr=1e-2, weight_decay=1e-4)),
        (optim.NAdam, dict(lr=1e-2, weight_decay=1e-4)),
        (optim.RAdam, dict(lr=1e-2, weight_decay=1e-4)),
        (optim.ASGD, dict(lr=1e-2, t0=1, weight_decay=1e-4)),
        (optim.Rprop, dict(lr=1e-2)),
        (getattr(optim, "Adafactor", None), dict(lr=1e-2, weight_decay=1e-4)),  # torch >= 2.5
        (getattr(optim, "Muon", None), dict(lr=1e-2)),  # newer 2.x; 2-D parameters only
    ]
    torch.manual_seed(0)
    x, y = torch.randn(5, 4), torch.randn(5, 2)
    for cls, kw in dense:
        if cls is None:
            continue
        accepts = "foreach" in inspect.signature(cls).parameters
        for foreach in ((False, True) if accepts else (None,)):
            torch.manual_seed(0)
            model = _mlp()
            params = [p for p in model.parameters() if cls.__name__ != "Muon" or p.dim() == 2]
            opt = cls(params, **kw, **({} if foreach is None else {"foreach": foreach}))
            for _ in range(steps + 1):  # state is created at step 1 and updated from step 2 on
                opt.zero_grad()
                F.mse_loss(model(x), y).backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()

    torch.manual_seed(0)
    model = _mlp()
    lbfgs = optim.LBFGS(model.parameters(), lr=0.5, max_iter=3, history_size=3,
                        line_search_fn="strong_wolfe")

    def closure() -> Tensor:
        lbfgs.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    for _ in range(steps):
        lbfgs.step(closure)

    torch.manual_seed(0)
    emb = nn.Embedding(10, 4, sparse=True)
    sparse_adam = optim.SparseAdam(list(emb.parameters()), lr=1e-2)
    for _ in range(steps + 1):
        sparse_adam.zero_grad()
        emb(torch.randint(0, 10, (3, 2))).pow(2).sum().backward()
        sparse_adam.step()

    torch.manual_seed(0)
    model = _mlp()
    F.mse_loss(model(x), y).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type=1.0)
    nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type=float("inf"))
    nn.utils.clip_grad_value_(model.parameters(), 0.01)


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 2 * 2, 3))


def run_functional(steps: int = 2) -> None:
    """Functional calls with the buffers passed explicitly, and a CNN with BatchNorm evaluated
    under no_grad()/inference_mode() (and trained under them: BN still updates running stats)."""
    torch.manual_seed(0)
    x = torch.randn(3, 4, 2, requires_grad=True)
    mean, var = torch.zeros(4), torch.ones(4)
    for _ in range(steps):
        F.batch_norm(x, mean, var, torch.ones(4), torch.zeros(4), training=True,
                     momentum=0.1).sum().backward()
        F.instance_norm(x, mean, var, use_input_stats=True, momentum=0.1).sum().backward()
        F.rrelu(x * 1.0, training=True).sum().backward()
        F.rrelu_(x.detach().clone(), training=True)
        F.dropout(x, 0.5, training=True).sum().backward()
        F.alpha_dropout(x, 0.5, training=True).sum().backward()
        F.feature_alpha_dropout(x, 0.5, training=True).sum().backward()
        weight = torch.randn(10, 4, requires_grad=True)
        F.embedding(torch.randint(0, 10, (5,)), weight, max_norm=1.0).sum().backward()
        F.embedding_bag(torch.randint(0, 10, (2, 3)), weight, max_norm=1.0, mode="max").sum().backward()
        with torch.no_grad():
            torch.embedding_renorm_(weight.detach(), torch.tensor([1, 2]), 0.5, 2.0)

    torch.manual_seed(0)
    cnn = _cnn()
    img = torch.randn(2, 3, 4, 4)
    for _ in range(steps):
        cnn(img).sum().backward()
    cnn.eval()
    with torch.no_grad():
        for _ in range(steps):
            cnn(img)
    with torch.inference_mode():
        for _ in range(steps):
            cnn(img)
    cnn.train()
    with torch.no_grad():
        cnn(img)
    with torch.inference_mode():
        cnn(img)


def run_all(steps: int = 2) -> None:
    """Every layer case in train and eval mode, then the optimizers and the functional paths.

    Runs on one intra-op thread: the tensors are tiny, and on a busy 2-core machine OpenMP
    worker threads spinning against each other make torch 2.x ten times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with _expected_warnings_silenced():
            for name, make_module, make_inputs in layer_cases():
                run_case(name, make_module, make_inputs, steps)
            run_optimizers(steps)
            run_functional(steps)
    finally:
        torch.set_num_threads(threads)


if __name__ == "__main__":
    started = time.perf_counter()
    run_all()
    problems = coverage_problems()
    print(f"layer_zoo: {len(layer_cases())} cases, torch {torch.__version__}, "
          f"{time.perf_counter() - started:.1f}s")
    if problems:
        print("torch.nn classes neither run nor excluded: " + ", ".join(problems))
    sys.exit(1 if problems else 0)
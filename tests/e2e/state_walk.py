"""Run by test_model_state.py: upguard's reading of the model's tensors (upguard._state), which
keeps its walk of the module tree while the tree stays as it was, names the same tensors in the
same order as a walk of named_parameters() and named_buffers() at every step, while the program
ties and unties weights, replaces a submodule and a parameter, adds a buffer, and reorders a
module's children. Prints
"STEP <label> <count>" per check; exits 1 at the first difference."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, Dict, List, Tuple

import torch
import torchvision

import upguard
from upguard import _state

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from gpt import GPT, GPTConfig  # noqa: E402


def walked(registry: _state.ModelTensors) -> List[Tuple[str, int, int]]:
    """The tensors as named_parameters() and named_buffers() name them, walked afresh."""
    out: List[Tuple[str, int, int]] = []
    names: Dict[int, str] = {}
    taken: Dict[str, int] = {}

    def add(name: str, role: int, tensor: Any) -> None:
        if isinstance(tensor, torch.Tensor) and id(tensor) not in names:
            names[id(tensor)] = name
            out.append((name, role, tensor._cdata))

    for root in [ref() for ref in registry._roots]:
        prefix = _state._prefix_for(root, taken)
        for name, param in root.named_parameters():
            if id(param) in names:
                continue
            add(prefix + name, _state.PARAMETER, param)
            taken[prefix + name] = 1
            if param.grad is not None:
                add(prefix + name + ".grad", _state.GRADIENT, param.grad)
        for name, buffer in root.named_buffers():
            add(prefix + name, _state.BUFFER, buffer)
            taken[prefix + name] = 1
    for number, optimizer in enumerate(ref() for ref in registry._optimizers):
        label = type(optimizer).__name__ + (f"#{number}" if number else "")
        for group_idx, group in enumerate(optimizer.param_groups):
            for param_idx, param in enumerate(group["params"]):
                param_name = names.get(id(param))
                if param_name is None:
                    param_name = f"{label}.param_groups[{group_idx}][{param_idx}]"
                    add(param_name, _state.PARAMETER, param)
                    if param.grad is not None:
                        add(param_name + ".grad", _state.GRADIENT, param.grad)
                for key, value in (optimizer.state.get(param) or {}).items():
                    add(f"{key} of {param_name}", _state.OPTIMIZER_STATE, value)
    return out


def check(label: str) -> None:
    expected, read = walked(_state.REGISTRY), _state.REGISTRY.named()
    if read != expected:
        first = next(i for i, (a, b) in enumerate(zip(read + [None], expected + [None])) if a != b)
        print(f"DIFFER {label} at {first}: read {read[first:first + 1]}, "
              f"expected {expected[first:first + 1]}", flush=True)
        sys.exit(1)
    print(f"STEP {label} {len(read)}", flush=True)


def reorder(modules: Dict[str, Any], name: str) -> None:
    """Moves child `name` last: an OrderedDict (torch 1.13) by move_to_end, which leaves its
    dict table as it was; a dict (torch 2.x) by taking it out and putting it back."""
    if hasattr(modules, "move_to_end"):
        modules.move_to_end(name)
    else:
        modules[name] = modules.pop(name)


def main() -> None:
    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=64, block_size=32, n_layer=2, n_head=4, n_embd=64))
    resnet = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.AdamW(list(gpt.parameters()) + list(resnet.parameters()), lr=1e-3)
    tokens, images = torch.randint(0, 64, (4, 32)), torch.randn(2, 3, 32, 32)
    free = torch.nn.Parameter(torch.ones(5))  # in no module; in the optimizer from step 7
    changes = {
        1: ("tied", lambda: setattr(gpt.head, "weight", gpt.tok_emb.weight)),
        2: ("new-fc", lambda: setattr(resnet, "fc", torch.nn.Linear(512, 10))),
        3: ("new-conv1-weight", lambda: setattr(
            resnet.conv1, "weight", torch.nn.Parameter(resnet.conv1.weight.detach().clone()))),
        4: ("new-buffer", lambda: resnet.register_buffer("extra", torch.zeros(3))),
        5: ("untied", lambda: setattr(
            gpt.head, "weight", torch.nn.Parameter(gpt.tok_emb.weight.detach().clone()))),
        # The same children in another order: named_parameters() follows _modules' order.
        6: ("reordered", lambda: reorder(resnet._modules, "layer1")),
        # A second group: its parameter is named by its place there, its state after a step.
        7: ("new-group", lambda: optimizer.add_param_group({"params": [free]})),
    }
    with upguard.record(tempfile.mkdtemp(), fingerprint=True):
        for step in range(9):
            loss = gpt(tokens, tokens) + resnet(images).sum() + free.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            check(f"step{step}")
            if step in changes:
                label, change = changes[step]
                change()
                check(label)


if __name__ == "__main__":
    main()

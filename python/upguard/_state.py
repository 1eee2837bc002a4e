"""The model's tensors by the names the model gives them: the parameters and buffers of the
modules that run while recording, their gradients, and the state of the optimizers.

The recorder reads them (python/src/model_state.h) at the end of every recorded step, to record
their digests as the pseudo-op ``upguard::state`` — so a difference that no op's output shows
(memory written behind PyTorch's back, a kernel writing an input it does not declare) still
surfaces at the step where it was born — and to name the tensors ops read and write
("h.0.attn.c_attn.weight", "h.0.attn.c_attn.weight.grad", "exp_avg_sq of h.0.attn.c_attn.weight").

The modules are the outermost modules called while recording (the module hooks report them);
the optimizers are every ``torch.optim.Optimizer`` alive when recording starts or constructed
while it runs. Reading them runs no torch op.
"""

from __future__ import annotations

import gc
import warnings
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from upguard import _C

# Roles, as python/src/model_state.h numbers them.
PARAMETER, BUFFER, GRADIENT, OPTIMIZER_STATE = 0, 1, 2, 3

Named = Tuple[str, int, int]  # (name, role, Tensor._cdata: the address of its TensorImpl)


class ModelTensors:
    """The modules and optimizers seen while recording, and their tensors by name."""

    def __init__(self) -> None:
        self._roots: List["weakref.ref[torch.nn.Module]"] = []
        self._optimizers: List["weakref.ref[torch.optim.Optimizer]"] = []
        self._original_init: Optional[Callable[..., None]] = None

    def add_root(self, module: torch.nn.Module) -> None:
        """An outermost module call began (ModuleScopes): a new one names its tensors now."""
        if not any(ref() is module for ref in self._roots):
            self._roots.append(weakref.ref(module))
            _C.refresh_tensor_names()

    def add_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        if not any(ref() is optimizer for ref in self._optimizers):
            self._optimizers.append(weakref.ref(optimizer))

    def install(self) -> None:
        """Forgets earlier recordings' modules and optimizers, finds the optimizers alive now
        and wraps Optimizer.__init__ to see later ones."""
        self._roots.clear()
        self._optimizers.clear()
        with warnings.catch_warnings():
            # Asking a deprecated alias for its __class__ warns (torch 2.x:
            # torch.distributed.reduce_op); the scan is ours, not the program's.
            warnings.simplefilter("ignore")
            for obj in gc.get_objects():
                try:
                    found = isinstance(obj, torch.optim.Optimizer)
                except Exception:  # a proxy whose __class__ raises: not an optimizer of ours
                    continue
                if found:
                    self.add_optimizer(obj)
        if self._original_init is not None:
            return
        original = torch.optim.Optimizer.__init__
        registry = self

        def __init__(optimizer: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> None:
            original(optimizer, *args, **kwargs)
            registry.add_optimizer(optimizer)

        __init__.__wrapped__ = original  # type: ignore[attr-defined]
        torch.optim.Optimizer.__init__ = __init__  # type: ignore[method-assign]
        self._original_init = original

    def remove(self) -> None:
        if self._original_init is not None:
            torch.optim.Optimizer.__init__ = self._original_init  # type: ignore[method-assign]
            self._original_init = None

    def named(self) -> List[Named]:
        """Every tensor in a fixed order: per module, its parameters (each followed by its
        gradient) and buffers; then per optimizer, the state of each parameter."""
        out: List[Named] = []
        names: Dict[int, str] = {}  # id(tensor) -> name
        taken: Dict[str, int] = {}

        def add(name: str, role: int, tensor: Any) -> None:
            if isinstance(tensor, torch.Tensor) and id(tensor) not in names:
                names[id(tensor)] = name
                # A DTensor (FSDP2, tensor parallel) holds this rank's shard: that is the
                # rank's model state, and what its ops read and write.
                local = getattr(tensor, "_local_tensor", None)
                out.append((name, role, (local if isinstance(local, torch.Tensor)
                                         else tensor)._cdata))

        for root in [ref() for ref in self._roots]:
            if root is None:
                continue
            prefix = _prefix_for(root, taken)
            for name, param in root.named_parameters():
                if id(param) in names:  # shared with an earlier module
                    continue
                add(prefix + name, PARAMETER, param)
                taken[prefix + name] = 1
                if param.grad is not None:
                    add(prefix + name + ".grad", GRADIENT, param.grad)
            for name, buffer in root.named_buffers():
                add(prefix + name, BUFFER, buffer)
                taken[prefix + name] = 1
        for number, optimizer in enumerate(ref() for ref in self._optimizers):
            if optimizer is None:
                continue
            label = type(optimizer).__name__ + (f"#{number}" if number else "")
            for group_idx, group in enumerate(optimizer.param_groups):
                for param_idx, param in enumerate(group["params"]):
                    param_name = names.get(id(param))
                    if param_name is None:  # a parameter outside the recorded modules
                        param_name = f"{label}.param_groups[{group_idx}][{param_idx}]"
                        add(param_name, PARAMETER, param)
                        if param.grad is not None:
                            add(param_name + ".grad", GRADIENT, param.grad)
                    state = optimizer.state.get(param)  # a defaultdict: never [] here
                    for key, value in (state or {}).items():
                        add(f"{key} of {param_name}", OPTIMIZER_STATE, value)
        return out


def _prefix_for(root: torch.nn.Module, taken: Dict[str, int]) -> str:
    """"" for the first module; a later one whose names would collide gets its class name."""
    if not taken:
        return ""
    names = [name for name, _ in root.named_parameters()]
    names += [name for name, _ in root.named_buffers()]
    if not any(name in taken for name in names):
        return ""
    base = type(root).__name__
    prefix, number = base + ".", 1
    while any(prefix + name in taken for name in names):
        number += 1
        prefix = f"{base}#{number}."
    return prefix


REGISTRY = ModelTensors()


def named_tensors() -> List[Named]:
    """What _C reads: (name, role, TensorImpl address) of every tensor of the model."""
    return REGISTRY.named()

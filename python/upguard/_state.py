"""The model's tensors by the names the model gives them: the parameters and buffers of the
modules that run while recording, their gradients, and the state of the optimizers.

The recorder reads them (python/src/model_state.h) at the end of every recorded step, to record
their digests as the pseudo-op ``upguard::state`` — so a difference that no op's output shows
(memory written behind PyTorch's back, a kernel writing an input it does not declare) still
surfaces at the step where it was born — and to name the tensors ops read and write
("h.0.attn.c_attn.weight", "h.0.attn.c_attn.weight.grad", "exp_avg_sq of h.0.attn.c_attn.weight").

The modules are the outermost modules called while recording, or the model the user built
around one that never runs its own forward (a LightningModule: _modules.py), as the module
hooks report them; the optimizers are every ``torch.optim.Optimizer`` alive when recording
starts or constructed while it runs. Reading them runs no torch op. This module plans the
reading (ModelTensors.plan); _C does it every step with Python's C API
(python/src/model_walk.h).
"""

from __future__ import annotations

import gc
import warnings
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from upguard import _C
from upguard._modules import eager_name

# Roles, as python/src/model_state.h numbers them.
PARAMETER, BUFFER, GRADIENT, OPTIMIZER_STATE = 0, 1, 2, 3

Named = Tuple[str, int, int]  # (name, role, Tensor._cdata: the address of its TensorImpl)


class ModelTensors:
    """The modules and optimizers seen while recording, and their tensors by name."""

    def __init__(self) -> None:
        self._roots: List["weakref.ref[torch.nn.Module]"] = []
        self._optimizers: List["weakref.ref[torch.optim.Optimizer]"] = []
        self._original_init: Optional[Callable[..., None]] = None
        # Moves whenever the outermost modules or the optimizers change: _C plans again.
        self.generation = 0

    def add_root(self, module: torch.nn.Module) -> None:
        """An outermost module call began (ModuleScopes): a new one names its tensors now."""
        if not any(ref() is module for ref in self._roots):
            self._roots.append(weakref.ref(module))
            self.generation += 1
            _C.refresh_tensor_names()

    def add_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        if not any(ref() is optimizer for ref in self._optimizers):
            self._optimizers.append(weakref.ref(optimizer))
            self.generation += 1

    def install(self) -> None:
        """Forgets earlier recordings' modules and optimizers, finds the optimizers alive now
        and wraps Optimizer.__init__ to see later ones."""
        self._roots.clear()
        self._optimizers.clear()
        self.generation += 1
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
        """Every tensor in a fixed order, as _C reads them at every recorded step's end
        (python/src/model_walk.h): per module, its parameters (each followed by its gradient)
        and buffers, a tensor shared between modules once under its first name; then per
        optimizer, the parameters outside those modules and the state of each parameter."""
        return _C.model_tensors()

    def plan(self) -> Tuple[List[Any], List[Any], List[Tuple[str, int, str, int]], List[Any]]:
        """What _C's walk reads every step; it asks again when `generation` moved or the
        module tree changed. (roots, modules, tensors, optimizers):
        - roots: weak references to the outermost modules alive now;
        - modules: every module under them once, as (weak reference, how many parameters,
          how many buffers, its children as weak references or None), what the walk checks;
        - tensors: (name, index into modules, attribute, role) of every parameter and buffer,
          per root its named_parameters() then its named_buffers() (a shared tensor under
          each of its names: the walk takes it once, under the first name still holding it);
        - optimizers: (weak reference, label) of the optimizers alive now.
        Walking the module tree costs more than the rest of the step's reading (generators
        recursing): so it is walked here only when something changed."""
        alive = [(ref, ref()) for ref in self._roots]
        alive = [(ref, root) for ref, root in alive if root is not None]
        modules: List[Any] = []
        index: Dict[int, int] = {}  # id(module) -> its index in modules
        tensors: List[Tuple[str, int, str, int]] = []
        taken: Dict[str, int] = {}
        for _, root in alive:
            prefix = _prefix_for(root, taken)
            found = dict(root.named_modules())  # every module once, in the walk's order
            for module in found.values():
                if id(module) not in index:
                    index[id(module)] = len(modules)
                    modules.append((weakref.ref(module), len(module._parameters),
                                    len(module._buffers),
                                    [None if child is None else weakref.ref(child)
                                     for child in module._modules.values()]))
            for role, members in ((PARAMETER, "_parameters"), (BUFFER, "_buffers")):
                for path, module in found.items():
                    eager = eager_name(path)  # a compiled submodule's names are the eager ones
                    for attr in getattr(module, members):
                        name = prefix + (f"{eager}.{attr}" if eager else attr)
                        tensors.append((name, index[id(module)], attr, role))
                        taken[name] = 1
        optimizers = []
        for number, ref in enumerate(self._optimizers):
            optimizer = ref()
            if optimizer is not None:
                optimizers.append((ref, type(optimizer).__name__ + (f"#{number}" if number
                                                                     else "")))
        return [ref for ref, _ in alive], modules, tensors, optimizers


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


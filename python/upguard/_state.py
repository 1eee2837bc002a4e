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
        # named()'s walk of the modules, and the tree it walked (_module_plan).
        # Held weakly, as the modules themselves are: a model the program drops goes.
        self._plan: Optional[List[Tuple[str, "weakref.ref[torch.nn.Module]", str, int]]] = None
        self._plan_modules: List["weakref.ref[torch.nn.Module]"] = []
        self._plan_shape: Optional[List[Any]] = None

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
        self._plan = None
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

        def add(name: str, role: int, tensor: Any) -> None:
            if isinstance(tensor, torch.Tensor) and id(tensor) not in names:
                names[id(tensor)] = name
                # A DTensor (FSDP2, tensor parallel) holds this rank's shard: that is the
                # rank's model state, and what its ops read and write.
                local = getattr(tensor, "_local_tensor", None)
                out.append((name, role, (local if isinstance(local, torch.Tensor)
                                         else tensor)._cdata))

        for name, module_ref, attr, role in self._module_plan():
            module = module_ref()
            if module is None:
                continue
            tensor = (module._parameters if role == PARAMETER else module._buffers).get(attr)
            if tensor is None or (role == PARAMETER and id(tensor) in names):
                continue  # unset, or shared with an earlier module
            add(name, role, tensor)
            if role == PARAMETER and tensor.grad is not None:
                add(name + ".grad", GRADIENT, tensor.grad)
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

    def _module_plan(self) -> List[Tuple[str, "weakref.ref[torch.nn.Module]", str, int]]:
        """(name, module, attribute, role) of every parameter and buffer of the recorded
        modules, per module its named_parameters() then its named_buffers(). Walking the module
        tree costs more than the rest of the step's reading (generators recursing), so the
        walk is kept while the tree stays as it was: the same outermost modules, and every
        module with the same children and as many parameters and buffers. A tensor replaced
        under the same attribute is read anew each step."""
        roots = [ref() for ref in self._roots]
        if self._plan is not None and _shape(roots, self._plan_modules) == self._plan_shape:
            return self._plan
        plan: List[Tuple[str, "weakref.ref[torch.nn.Module]", str, int]] = []
        modules: List["weakref.ref[torch.nn.Module]"] = []
        taken: Dict[str, int] = {}
        for root in roots:
            if root is None:
                continue
            prefix = _prefix_for(root, taken)
            found = dict(root.named_modules())  # every module once, in the walk's order
            refs = {id(module): weakref.ref(module) for module in found.values()}
            modules += refs.values()
            # Every attribute, a shared tensor's too: named() takes each tensor once, under
            # its first name, as named_parameters() does, and keeps doing so if it is unshared.
            for role, members in ((PARAMETER, "_parameters"), (BUFFER, "_buffers")):
                for path, module in found.items():
                    for attr in getattr(module, members):
                        name = prefix + (f"{path}.{attr}" if path else attr)
                        plan.append((name, refs[id(module)], attr, role))
                        taken[name] = 1
        self._plan, self._plan_modules = plan, modules
        self._plan_shape = _shape(roots, modules)
        return plan


def _shape(roots: List[Optional[torch.nn.Module]],
           modules: List["weakref.ref[torch.nn.Module]"]) -> Optional[List[Any]]:
    """What _module_plan's walk depends on, read without walking: a module added or replaced
    anywhere changes its parent's children (a child freed since is a dead reference: None)."""
    shape: List[Any] = [id(root) for root in roots]
    for ref in modules:
        module = ref()
        if module is None:
            return None
        shape.append((len(module._parameters), len(module._buffers),
                      *map(id, module._modules.values())))
    return shape


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

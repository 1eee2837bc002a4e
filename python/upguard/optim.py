"""CAME (Luo et al., ACL 2023): Adam-like convergence with Adafactor-like memory.

    from upguard.optim import CAME
    optimizer = CAME(model.parameters(), lr=2e-4, weight_decay=1e-2)

Each step runs one fused C++ kernel per parameter tensor (``torch.ops.upguard.came_step``,
src/optim/came.h), which ``upguard record`` records like any op. Second moments are factored over
the last two dims of a tensor with 2 or more dims (leading dims are batch dims); a 0-D or 1-D
tensor keeps a full second moment. There is no bias correction: the first steps move each
parameter by about 11 x lr (warm-up matters). State is float32 for any parameter precision.
docs/optim.md has the algorithm, the memory it saves and its measured speed.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

import torch

from upguard import _C  # noqa: F401  (registers torch.ops.upguard.came_step)

_LOW_PRECISION = (torch.float16, torch.bfloat16)
_STATE_KEYS = ("exp_avg", "exp_avg_sq", "exp_avg_sq_row", "exp_avg_sq_col", "exp_avg_res_row",
               "exp_avg_res_col", "master")


def _mix(*values: int) -> int:
    """A 63-bit hash of integers (SplitMix64 steps): the stochastic rounding's seed per tensor
    and step, the same in every run."""
    z = 0x9E3779B97F4A7C15
    for value in values:
        z = (z + (value & 0xFFFFFFFFFFFFFFFF) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 31)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return z >> 1


class CAME(torch.optim.Optimizer):
    """CAME with parameter groups, ``state_dict()`` / ``load_state_dict()``.

    Args:
        params: parameters or parameter groups (dicts), as for any torch optimizer.
        lr: learning rate (required, > 0).
        betas: (beta1, beta2, beta3): momentum, second moment, instability.
        eps: (eps1, eps2) added to g^2 and to the instability (u - m)^2.
        clip_threshold: the update is divided by max(1, rms(update) / clip_threshold).
        weight_decay: decoupled, applied before the step (p -= lr * weight_decay * p).
        master_weights: keep a float32 copy of each float16/bfloat16 parameter; the step updates
            it and writes it rounded to nearest into the parameter.
        stochastic_rounding: round each bfloat16 parameter's new value stochastically
            (reproducibly: seeded by ``seed``, the tensor and the step).
        seed: see ``stochastic_rounding``.

    Without ``master_weights`` or ``stochastic_rounding`` a bfloat16 (or float16) parameter is
    rounded to nearest after each step: an update smaller than half its ulp (2^-9 of the value
    for bfloat16) vanishes, and training stalls where updates are small.
    """

    def __init__(self, params: Iterable[Any], lr: float,
                 betas: Tuple[float, float, float] = (0.9, 0.999, 0.9999),
                 eps: Tuple[float, float] = (1e-30, 1e-16), clip_threshold: float = 1.0,
                 weight_decay: float = 0.0, *, master_weights: bool = False,
                 stochastic_rounding: bool = False, seed: int = 0) -> None:
        if not lr > 0:
            raise ValueError(f"CAME: lr must be > 0, got {lr}")
        if len(betas) != 3 or not all(0.0 <= beta <= 1.0 for beta in betas):
            raise ValueError(f"CAME: betas must be three numbers in [0, 1], got {betas}")
        if len(eps) != 2 or not all(value >= 0 for value in eps):
            raise ValueError(f"CAME: eps must be two numbers >= 0, got {eps}")
        if not clip_threshold > 0:
            raise ValueError(f"CAME: clip_threshold must be > 0, got {clip_threshold}")
        if not weight_decay >= 0:
            raise ValueError(f"CAME: weight_decay must be >= 0, got {weight_decay}")
        if master_weights and stochastic_rounding:
            raise ValueError("CAME: master_weights and stochastic_rounding are two answers to "
                             "the same problem; choose one")
        defaults = dict(lr=lr, betas=tuple(betas), eps=tuple(eps), clip_threshold=clip_threshold,
                        weight_decay=weight_decay, master_weights=master_weights,
                        stochastic_rounding=stochastic_rounding, seed=seed)
        super().__init__(params, defaults)
        self._warned_rounding = False

    def _init_state(self, param: torch.Tensor, group: Dict[str, Any]) -> Dict[str, Any]:
        shape = param.shape
        zeros = lambda size: torch.zeros(size, dtype=torch.float32, device=param.device)  # noqa: E731
        state: Dict[str, Any] = {"step": 0, "exp_avg": zeros(shape)}
        if len(shape) >= 2:
            state["exp_avg_sq_row"] = zeros(shape[:-1])
            state["exp_avg_sq_col"] = zeros(shape[:-2] + shape[-1:])
            state["exp_avg_res_row"] = zeros(shape[:-1])
            state["exp_avg_res_col"] = zeros(shape[:-2] + shape[-1:])
        else:
            state["exp_avg_sq"] = zeros(shape)
        if param.dtype in _LOW_PRECISION:
            if group["master_weights"]:
                state["master"] = param.detach().float().clone(memory_format=torch.contiguous_format)
            elif not group["stochastic_rounding"] and not self._warned_rounding:
                self._warned_rounding = True
                warnings.warn(f"CAME: {param.dtype} parameters without master_weights or "
                              "stochastic_rounding: updates smaller than half a parameter's "
                              "ulp vanish", stacklevel=3)
        if group["stochastic_rounding"] and param.dtype != torch.bfloat16:
            raise ValueError(f"CAME: stochastic_rounding is for bfloat16 parameters; one is "
                             f"{param.dtype} (use master_weights for float16)")
        return state

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        tensor_index = 0
        for group in self.param_groups:
            beta1, beta2, beta3 = group["betas"]
            eps1, eps2 = group["eps"]
            for param in group["params"]:
                tensor_index += 1
                if param.grad is None:
                    continue
                grad = param.grad
                if grad.is_sparse:
                    raise RuntimeError("CAME does not support sparse gradients (an Embedding "
                                       "with sparse=True?): use a dense gradient")
                if param.device.type != "cpu":
                    raise RuntimeError(f"CAME's fused step runs on CPU parameters; one is on "
                                       f"{param.device}")
                state = self.state[param]
                if not state:
                    state.update(self._init_state(param, group))
                state["step"] += 1
                factored = param.dim() >= 2
                torch.ops.upguard.came_step(
                    param, grad, state["exp_avg"],
                    state["exp_avg_sq_row"] if factored else state["exp_avg_sq"],
                    state.get("exp_avg_sq_col"), state.get("exp_avg_res_row"),
                    state.get("exp_avg_res_col"), state.get("master"), float(group["lr"]),
                    float(beta1), float(beta2), float(beta3), float(eps1), float(eps2),
                    float(group["clip_threshold"]), float(group["weight_decay"]),
                    bool(group["stochastic_rounding"]),
                    _mix(int(group["seed"]), tensor_index, int(state["step"])))
        return loss

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """As torch's, except that the state stays float32: torch casts a floating state
        tensor to its parameter's dtype (float16/bfloat16 here), which would lose the state's
        precision."""
        saved = state_dict["state"]
        super().load_state_dict(state_dict)
        ids = [index for group in state_dict["param_groups"] for index in group["params"]]
        params = [param for group in self.param_groups for param in group["params"]]
        for index, param in zip(ids, params):
            for key, value in saved.get(index, {}).items():
                if key in _STATE_KEYS and torch.is_tensor(value):  # a copy: never the caller's
                    fresh = torch.empty(value.shape, dtype=torch.float32, device=param.device)
                    self.state[param][key] = fresh.copy_(value)
            if "step" in self.state[param] and torch.is_tensor(self.state[param]["step"]):
                self.state[param]["step"] = int(self.state[param]["step"].item())

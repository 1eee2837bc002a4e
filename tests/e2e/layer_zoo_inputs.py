"""Inputs for the layer zoo's cases (layer_zoo.py): each helper is called inside a case's
make_inputs, after the case's seed is set."""

from __future__ import annotations

from typing import Callable, List, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Case = Tuple[str, Callable[[], nn.Module], Callable[[], tuple]]


def R(*shape: int) -> Tensor:
    """A float leaf that requires grad, so backward reaches the layer's input-grad kernels."""
    return torch.randn(*shape, requires_grad=True)


def Rn(*shape: int) -> Tensor:
    """A float non-leaf that requires grad: the input for `inplace=True` layers."""
    return torch.randn(*shape, requires_grad=True) * 1.0


def T(*shape: int) -> Tensor:
    """A float tensor without grad (targets, masks, hidden states)."""
    return torch.randn(*shape)


def U(*shape: int) -> Tensor:
    """Uniform in [0, 1), no grad (probability targets)."""
    return torch.rand(*shape)


def L(high: int, *shape: int) -> Tensor:
    """int64 indices in [0, high)."""
    return torch.randint(0, high, shape)


def S(*shape: int) -> Tensor:
    """Float signs, each -1 or +1 (targets of margin/hinge losses)."""
    return torch.randint(0, 2, shape).float() * 2 - 1


def logp(*shape: int, dim: int = 1) -> Tensor:
    """Log-probabilities that require grad (a non-leaf over a leaf)."""
    return F.log_softmax(R(*shape), dim=dim)


def causal(n: int) -> Tensor:
    """An additive causal attention mask, -inf above the diagonal."""
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


def causal_bool(n: int) -> Tensor:
    """A boolean causal attention mask, True (masked) above the diagonal."""
    return torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)


def unpool_inputs(dims: int, shape: Tuple[int, ...]) -> tuple:
    """(pooled, indices) of a 2-wide max pool, as MaxUnpool{dims}d takes them."""
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[dims]
    out, idx = pool(T(*shape), 2, return_indices=True)
    return out.requires_grad_(), idx


def packed(seq: int, batch: int, feat: int) -> tuple:
    """A PackedSequence of `batch` sequences of decreasing length, for RNN/LSTM/GRU."""
    lengths = torch.tensor([seq - i for i in range(batch)])
    return (nn.utils.rnn.pack_padded_sequence(R(seq, batch, feat), lengths),)


def has(name: str) -> bool:
    return hasattr(nn, name)

"""The loss of a fingerprint step: what each backward starts from.

A fingerprint step (``upguard record --fingerprint``) records no op, so the loss is taken where
the program hands it to autograd: ``torch.autograd.backward``, which ``Tensor.backward`` calls
too. While a fingerprint recording runs, a wrapper records the tensors it is given as the
pseudo-op ``upguard::loss`` (one per backward: gradient accumulation records each), then calls
the original. In a step recorded in full the wrapper does nothing: the ops show the loss.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Optional

import torch

from upguard import _C
from upguard._modules import _tensors


class LossHook:
    """Wraps torch.autograd.backward while a fingerprint recording runs."""

    def __init__(self) -> None:
        self._original: Optional[Callable[..., Any]] = None

    def install(self) -> None:
        if self._original is not None:
            return
        original = torch.autograd.backward

        @functools.wraps(original)
        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            if _C.fingerprint_step():
                _record(tensors)
            return original(tensors, *args, **kwargs)

        torch.autograd.backward = backward  # type: ignore[assignment]
        self._original = original

    def remove(self) -> None:
        if self._original is not None:
            torch.autograd.backward = self._original  # type: ignore[assignment]
            self._original = None


def _record(tensors: Any) -> None:
    try:
        _C.record_loss([(name, t._cdata) for name, t in _tensors(tensors, "loss")])
    except Exception as error:  # never disturb the training
        print(f"upguard: could not record the loss: {error}", file=sys.stderr)

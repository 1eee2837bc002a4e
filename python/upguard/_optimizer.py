"""Where an optimizer step ends, in a fingerprint step.

A step recorded in full ends where ``Optimizer.step``'s profiler scope closes: torch wraps
every optimizer class's ``step`` in ``torch.autograd.profiler.record_function("Optimizer.step#
<class>.step")``, and the recorder's scope callback sees that RecordFunction end. A
fingerprint step installs no callback at all: with torch 1.13 any global RecordFunction
callback makes every op build its RecordFunction, several percent of a small model's step.
So while recording, ``record_function``'s ``__enter__``/``__exit__`` are wrapped: when the
outermost "Optimizer.step#" scope on a thread exits and no scope callback ended the step
meanwhile, ``_C.optimizer_step_done()`` ends it. The same scope as in full steps, so every way
of calling a step counts alike: a learning-rate scheduler's wrap of ``optimizer.step`` (made
before recording began or after), a subclass, an optimizer upguard never saw made. Only a
fingerprint recording wraps it. TorchScript compiles record_function's methods from their
source when a scripted function uses it: the wraps name the originals (``__wrapped__``, which
``inspect`` follows), so it compiles torch's own, resolving their names in this module.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Optional, Tuple

import torch  # noqa: F401  (TorchScript resolves the originals' names here: see install)
from torch.autograd import profiler

from upguard import _C

_PREFIX = "Optimizer.step#"
_running = threading.local()  # per thread: [depth, the step as the outermost one began]
_original: Tuple[Optional[Callable[..., Any]], Optional[Callable[..., Any]]] = (None, None)


def _is_step(scope: Any) -> bool:
    name = getattr(scope, "name", None)
    return isinstance(name, str) and name.startswith(_PREFIX)


def install() -> None:
    global _original
    if _original[0] is not None:
        return
    enter, exit_ = profiler.record_function.__enter__, profiler.record_function.__exit__

    @functools.wraps(enter)
    def __enter__(self: Any) -> Any:
        result = enter(self)
        if _is_step(self):
            state = getattr(_running, "state", None)
            if state is None or state[0] == 0:
                _running.state = [1, _C.current_step()]
            else:
                state[0] += 1
        return result

    @functools.wraps(exit_)
    def __exit__(self: Any, *exc: Any) -> Any:
        try:
            return exit_(self, *exc)
        finally:
            if _is_step(self):
                state = getattr(_running, "state", None)
                if state is not None and state[0] > 0:
                    state[0] -= 1
                    if state[0] == 0 and _C.current_step() == state[1]:
                        _C.optimizer_step_done()

    profiler.record_function.__enter__ = __enter__  # type: ignore[method-assign]
    profiler.record_function.__exit__ = __exit__  # type: ignore[method-assign]
    _original = (enter, exit_)


def remove() -> None:
    global _original
    enter, exit_ = _original
    if enter is not None:
        profiler.record_function.__enter__ = enter  # type: ignore[method-assign]
        profiler.record_function.__exit__ = exit_  # type: ignore[method-assign]
    _original = (None, None)

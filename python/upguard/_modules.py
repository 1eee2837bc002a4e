"""Module paths for every op, from global nn.Module forward hooks.

A module's path is its name under the outermost module that ran around it, as in
``root.named_modules()`` ("blocks.1.mlp.act"); the outermost module has the path "". Paths are
resolved once, when a module first runs.

The model the user built need not run its own forward: a LightningModule's ``training_step``
calls ``self.net(x)``, so the outermost module that runs is ``net``. Paths (and the tensors'
names, _state.py) are named from the model the user built, as the user knows them ("net.2",
"net.0.weight"): as a new outermost module is first called, the callers' frames are searched
once for a live nn.Module that holds it as a submodule (``self`` of ``training_step``, a
``model`` in the training loop); the outermost such module, its *owner*, names the paths, with
the outermost module under its name there. A module held by two unrelated modules is named
from the one found first, walking from the call outwards (the caller's own ``self`` before
the caller's caller's locals, locals in the frame's order), so the same program names it the
same way every run. A wrapper that does run (DDP's ``module.``) is itself the outermost
module, as before; torch.compile's ``_orig_mod`` is left out of every name.

The tensors passed to an outermost module's forward are the step's batch: they are recorded as
the inputs of a pseudo-op ``upguard::batch`` so the diff can tell a data difference from a
numerical one.

The stack of running modules is pushed by a forward pre-hook and popped by a forward hook, which
does not run when forward raises (torch 1.13 has no ``always_call``). So each entry keeps the
frame of its module call (``Module._call_impl``), and every hook first pops this thread's
entries whose frame is no longer on the current call chain: their forward raised and the
program caught it. Normally the top entry's frame is a few frames up, so the walk is short.
_C keeps the same frames in its per-thread stack and drops a call that left the chain at the
next top-level op, so the ops between the ``except`` and the next hook get the right module too;
``_C.exit_module(frame)`` pops that call (and any above it) if it is still there.

Activation checkpointing runs a block's forward again during backward: its hooks fire then with
an empty stack, but the call is no new outermost module call (``_C.in_backward()``); the paths
are those resolved in the forward, and _C records its ops as phase recompute.

A fingerprint step (``upguard record --fingerprint``) records no op, so it needs no module
path, only the batch of each outermost call. Global hooks send every module call down
nn.Module's slow path (0.22 ms a step on the demo GPT with hooks that do nothing), so as a
fingerprint step's outermost call begins, the global hooks give way to a pre-hook on each
outermost module seen so far ("lean"); when a step recorded in full begins at one of them, the
global hooks come back. The global hooks also stay for the whole of the recording's first
step and of every step numbered a multiple of DISCOVER_EVERY, which find the outermost modules:
a model first called later is seen, and its tensors named after it, from the next such step
(until then its parameters are read through the optimizers, under the optimizer's name).
"""

from __future__ import annotations

import sys
import threading
import types
import weakref
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Set, Tuple

import torch

from upguard import _C

# True while torch.compile traces (dynamo reads it as a constant): the hooks are then traced
# into the graph, where they must do nothing; the compiled region is recorded as a whole
# (_compiled.py). torch 1.13 has no compiler.
_compiling: Callable[[], bool] = getattr(getattr(torch, "compiler", None), "is_compiling",
                                         lambda: False)

DISCOVER_EVERY = 50  # fingerprint steps with global hooks, to find the outermost modules


def _unwrapped(module: torch.nn.Module) -> torch.nn.Module:
    """The module torch.compile(module) wraps, so its paths and tensor names are the eager
    ones ("blocks.0", not "_orig_mod.blocks.0")."""
    inner = getattr(module, "_orig_mod", None)
    return inner if isinstance(inner, torch.nn.Module) else module


def eager_name(name: str) -> str:
    """`name` (a named_modules() path) without torch.compile's wrapper: "net._orig_mod.0" is
    "net.0", as the eager module's name."""
    if "_orig_mod" not in name:
        return name
    return ".".join(part for part in name.split(".") if part != "_orig_mod")


def _holds(parent: torch.nn.Module, module: torch.nn.Module) -> bool:
    return any(sub is module for sub in parent.modules())


def _owner(module: torch.nn.Module, call: Optional[types.FrameType]) -> torch.nn.Module:
    """The model the user built around `module`, an outermost module call (the module docs):
    the outermost live nn.Module in the locals of the frames above `call` (its
    Module._call_impl) that holds `module` as a submodule; `module` itself when none does."""
    seen: Set[int] = {id(module), id(_unwrapped(module))}
    holders: List[torch.nn.Module] = []
    owner = module
    try:
        frame = call.f_back if call is not None else None
        while frame is not None:
            for value in frame.f_locals.values():
                # type(), not isinstance: a proxy's __class__ may warn or raise (_state.py)
                if issubclass(type(value), torch.nn.Module) and id(value) not in seen:
                    seen.add(id(value))
                    if _holds(value, module):
                        holders.append(value)
            frame = frame.f_back
        for holder in holders:  # nearest first: a later one wins only by holding the winner
            if owner is module or _holds(holder, owner):
                owner = holder
    except Exception as error:  # never disturb the training: the module names itself
        print(f"upguard: could not find the model around {type(module).__name__}: {error}",
              file=sys.stderr)
        return module
    return owner


def _tensors(value: Any, name: str, depth: int = 0) -> Iterator[Tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield name, value
    elif depth < 4 and isinstance(value, (list, tuple)):
        for idx, item in enumerate(value):
            yield from _tensors(item, f"{name}[{idx}]", depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for key, item in value.items():
            yield from _tensors(item, f"{name}[{key!r}]", depth + 1)


def _record_batch(inputs: Any) -> None:
    try:
        _C.record_model_inputs([(name, t._cdata) for name, t in _tensors(inputs, "args")])
    except Exception as error:  # never disturb the training
        print(f"upguard: could not record the model inputs: {error}", file=sys.stderr)


class _Entry(NamedTuple):
    module: torch.nn.Module
    frame: types.FrameType  # the frame of this module call (Module._call_impl)
    thread: int  # threading.get_ident() of the thread that pushed it (and called _C.enter_module)


class ModuleScopes:
    """The running modules; `on_first_call` runs once, when the first outermost module starts,
    `on_root` at every outermost module call."""

    def __init__(self, on_first_call: Optional[Callable[[], None]] = None,
                 on_root: Optional[Callable[[torch.nn.Module], None]] = None) -> None:
        self._paths: "weakref.WeakKeyDictionary[torch.nn.Module, str]" = weakref.WeakKeyDictionary()
        # Shared by all threads (a module run on a worker thread is named under the module that
        # runs it), while _C keeps one module stack per thread.
        self._stack: List[_Entry] = []
        self._handles: List[Any] = []
        self._lean_handles: List[Any] = []  # the outermost modules' own pre-hooks, while lean
        self._roots: "weakref.WeakSet[torch.nn.Module]" = weakref.WeakSet()
        # Each outermost module's owner (_owner), found once: weakly held both ways, as the
        # owner holds the module.
        self._owners: "weakref.WeakKeyDictionary[torch.nn.Module, weakref.ref]" = (
            weakref.WeakKeyDictionary())
        self._first_step: Optional[int] = None  # the step of the first outermost call
        self._on_first_call = on_first_call
        self._on_root = on_root  # told of every outermost module call

    def install(self) -> None:
        hooks = torch.nn.modules.module
        self._handles = [
            hooks.register_module_forward_pre_hook(self._enter),
            hooks.register_module_forward_hook(self._exit),
        ]

    def remove(self) -> None:
        for handle in self._handles + self._lean_handles:
            handle.remove()
        self._handles = []
        self._lean_handles = []
        self._stack = []
        self._first_step = None

    def _lean_step(self) -> bool:
        """This step is a fingerprint step that need not look for new outermost modules."""
        if not _C.fingerprint_step():
            return False
        step = _C.current_step()
        if self._first_step is None:
            self._first_step = step
        return step != self._first_step and step % DISCOVER_EVERY != 0

    def _go_lean(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._lean_handles = [root.register_forward_pre_hook(self._enter_lean)
                              for root in list(self._roots)]

    def _enter_lean(self, module: torch.nn.Module, inputs: Any) -> None:
        """An outermost module's own pre-hook, while lean: a fingerprint step's batch, or the
        start of a step recorded in full or looking for modules (the global hooks come back)."""
        if not self._lean_handles or _compiling() or self._stack or _C.in_backward():
            return
        if self._lean_step():
            _record_batch(inputs)
            return
        for handle in self._lean_handles:
            handle.remove()
        self._lean_handles = []
        self.install()
        self._enter(module, inputs, sys._getframe(1))  # the global pre-hook missed this call

    def owner_of(self, module: torch.nn.Module,
                 call: Optional[types.FrameType] = None) -> torch.nn.Module:
        """The model the user built around the outermost module `module` (_owner), searched
        for at its first call (`call`: its Module._call_impl frame) and remembered."""
        known = self._owners.get(module)
        owner = known() if known is not None else None
        if owner is None:
            owner = _owner(module, call)
            self._owners[module] = weakref.ref(owner)
        return owner

    def path_of(self, module: torch.nn.Module, call: Optional[types.FrameType] = None) -> str:
        path = self._paths.get(module)
        if path is not None:
            return path
        if not self._stack:
            # A new outermost module: name it and everything under its owner at once.
            owner = self.owner_of(module, call)
            self._paths.setdefault(owner, "")
            for name, sub in _unwrapped(owner).named_modules():
                self._paths.setdefault(sub, eager_name(name))
            return self._paths[module]
        parent = self._stack[-1].module
        parent_path = self._paths.get(parent, "")
        name = next((n for n, m in parent.named_modules() if m is module and n), None)
        if name is None:  # run by a module that does not own it
            name = type(module).__name__
        path = f"{parent_path}.{name}" if parent_path else name
        self._paths[module] = path
        return path

    def resync(self, frame: Optional[types.FrameType] = None) -> None:
        """Pops the entries of this thread's module calls that ended by an exception: those on
        top of the stack whose frame is not on the call chain of `frame` (default: the caller's).
        Another thread's entry on top stops it: that thread's calls are its own to pop."""
        if frame is None:
            frame = sys._getframe(1)
        thread = threading.get_ident()
        live: Optional[Set[types.FrameType]] = None
        while self._stack and self._stack[-1].thread == thread:
            top = self._stack[-1].frame
            if live is None:
                walk: Optional[types.FrameType] = frame
                while walk is not None and walk is not top:
                    walk = walk.f_back
                if walk is not None:  # the usual case: the top call is still running
                    return
                live = set()
                walk = frame
                while walk is not None:
                    live.add(walk)
                    walk = walk.f_back
            if top in live:
                return
            self._stack.pop()
            _C.exit_module(top)

    def _enter(self, module: torch.nn.Module, inputs: Any,
               call: Optional[types.FrameType] = None) -> None:
        if _compiling():
            return
        if call is None:
            call = sys._getframe(1)  # Module._call_impl of this call
        self.resync(call)
        # A module call that begins inside backward re-runs a forward (activation
        # checkpointing): not a new model call, so no root and no batch (_C marks its ops).
        if not self._stack and not _C.in_backward():
            if self._on_first_call is not None:
                first_call, self._on_first_call = self._on_first_call, None
                first_call()
            if self._on_root is not None:
                self._on_root(_unwrapped(self.owner_of(module, call)))
            _record_batch(inputs)
            self._roots.add(module)
            if self._lean_step():
                self._go_lean()  # this call's global forward hook is gone with it
                return
        path = self.path_of(module, call)
        self._stack.append(_Entry(module, call, threading.get_ident()))
        _C.enter_module(path, call)

    def _exit(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        if _compiling():
            return
        self.resync(sys._getframe(1))  # children of this call that raised inside it
        if self._stack and self._stack[-1].module is module:
            _C.exit_module(self._stack.pop().frame)

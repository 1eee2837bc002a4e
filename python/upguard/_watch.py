"""`upguard watch` in a training process: this rank's watch ring (docs/formats/watch-ring.md).

The compiled side (python/src/watch_feed.h) writes collectives, the last op and the step from
torch's op callbacks. This side adds what only Python knows:

* which rank this is: the ring starts when the process joins its default process group
  (``init_process_group``), as the rank it got there;
* when the training is inside a DataLoader's ``__next__`` (waiting for a batch);
* the Python stacks of every thread, when the monitor asks for them: a daemon thread waits,
  without the GIL, for the ring's request word to change and answers with
  ``sys._current_frames()``. A rank stopped,
  dead, or whose GIL is never released does not answer, which the monitor says.

    _watch.arm("runs/w")   # rings under runs/w/watch/; done by `upguard watch` (UPGUARD_WATCH_DIR)
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
import traceback
from typing import Any, Optional

import torch

from upguard import _C

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_UPGUARD_DIR = os.path.dirname(os.path.abspath(__file__))
_WAIT_S = 1.0  # the stack thread looks at _stop this often

_stop = threading.Event()
_poller: Optional[threading.Thread] = None


def ring_path(run_dir: str, rank: int) -> str:
    return os.path.join(run_dir, "watch", f"rank{rank}.ring")


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def arm(run_dir: str) -> None:
    """Starts the ring when this process joins its default process group
    (``init_process_group`` returns), with the rank and world size it got there; at once when
    it has joined already."""
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        import torch.distributed as dist
    if not dist.is_available():
        return
    if dist.is_initialized():
        start(run_dir, dist.get_rank(), dist.get_world_size())
        return
    c10d = dist.distributed_c10d
    original = c10d.init_process_group

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if not _C.watch_ring_path():
            try:
                start(run_dir, dist.get_rank(), dist.get_world_size())
            except Exception as error:  # never the training's problem
                print(f"upguard watch: no ring for this rank: {error}", file=sys.stderr)
        return result

    init_process_group.__wrapped__ = original  # type: ignore[attr-defined]
    c10d.init_process_group = init_process_group
    if getattr(dist, "init_process_group", None) is original:
        dist.init_process_group = init_process_group


def start(run_dir: str, rank: Optional[int] = None, world_size: Optional[int] = None) -> str:
    """Starts this process's ring under ``run_dir/watch/``; returns its path. The rank and
    world size default to torchrun's RANK and WORLD_SIZE (0 of 1 without them)."""
    global _poller
    rank = _env_int("RANK", 0) if rank is None else rank
    world_size = _env_int("WORLD_SIZE", 1) if world_size is None else world_size
    path = ring_path(run_dir, rank)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _C.watch_start(path, rank, world_size, _env_int("LOCAL_RANK", -1),
                   socket.gethostname(), [_TORCH_DIR + os.sep, _UPGUARD_DIR + os.sep],
                   os.getcwd())
    _hook_dataloader()
    _stop.clear()
    _poller = threading.Thread(target=_answer_stack_requests, name="upguard-watch-stacks",
                               daemon=True)
    _poller.start()
    atexit.register(close)
    return path


def close() -> None:
    """The process ends normally: the ring says so (a monitor tells this from a crash)."""
    _stop.set()
    _C.watch_close()
    # The stack thread waits in C++ without the GIL: it must be back in Python before the
    # interpreter finalizes, which ends a daemon thread taking the GIL by unwinding it (through
    # the binding's GIL guard: std::terminate).
    if _poller is not None and _poller is not threading.current_thread():
        _poller.join(timeout=2 * _WAIT_S)


def stacks_text() -> str:
    """Every thread's Python stack, the main thread first, innermost frame last, one frame a
    line ("file:line in function")."""
    frames = sys._current_frames()
    main = threading.main_thread().ident
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    lines = []
    for ident in sorted(frames, key=lambda i: (i != main, i)):
        if ident == threading.get_ident():
            continue  # this poller
        lines.append(f"thread {names.get(ident, ident)}:")
        for frame in traceback.extract_stack(frames[ident]):
            lines.append(f"  {_short(frame.filename)}:{frame.lineno} in {frame.name}")
    return "\n".join(lines)


def _short(path: str) -> str:
    """A path under the working directory relative to it, as call sites are shown."""
    cwd = os.getcwd() + os.sep
    return path[len(cwd):] if path.startswith(cwd) else path


def _answer_stack_requests() -> None:
    # From the ring's last answer, not its last request: the monitor asks a new ring at once
    # (no op yet), maybe before this thread ran on a loaded machine, and waits for that answer.
    answered = _C.watch_stack_answered()
    while not _stop.is_set():
        request = _C.watch_wait_stack_request(answered, _WAIT_S)
        if request != answered and not _stop.is_set():
            try:
                _C.watch_answer_stack(request, stacks_text())
            except Exception as error:  # never the training's problem
                _C.watch_answer_stack(request, f"(no stack: {error})")
            answered = request


_hooked = False


def _hook_dataloader() -> None:
    """Marks the time spent in a DataLoader iterator's ``__next__`` (the rank waits for data)."""
    global _hooked
    if _hooked:
        return
    from torch.utils.data import dataloader

    base = dataloader._BaseDataLoaderIter
    original = base.__next__

    def __next__(self: Any) -> Any:
        _C.watch_dataloader(True)
        try:
            return original(self)
        finally:
            _C.watch_dataloader(False)

    __next__.__wrapped__ = original  # type: ignore[attr-defined]
    base.__next__ = __next__  # type: ignore[method-assign]
    _hooked = True

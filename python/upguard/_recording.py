"""Starting and stopping a recording from Python."""

from __future__ import annotations

import os
import sys
from typing import Dict, Optional, Sequence, Union

import torch

from upguard._build_check import mismatch_message

if mismatch_message(torch.__version__) is not None:  # before _C, which would fail to load
    raise ImportError(mismatch_message(torch.__version__))

from upguard import _C  # noqa: E402
from upguard import _compiled, _optimizer
from upguard._contain import contained
from upguard._meta import backend_flags, engine_meta_json
from upguard._loss import LossHook
from upguard._modules import ModuleScopes
from upguard._state import REGISTRY

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_UPGUARD_DIR = os.path.dirname(os.path.abspath(__file__))

_active: Optional["Recording"] = None
_died_of_exception = False


def _note_uncaught(previous):  # type: ignore[no-untyped-def]
    """sys.excepthook runs before atexit when an exception ends the program."""
    def hook(kind, value, traceback):  # type: ignore[no-untyped-def]
        global _died_of_exception
        _died_of_exception = True
        previous(kind, value, traceback)
    return hook


sys.excepthook = _note_uncaught(sys.excepthook)


class Recording:
    """One recording of this process into ``run_dir/rank<N>.ugt``. Use as a context manager."""

    def __init__(self, run_dir: str, *, overwrite: bool = False, steps: Union[str, None] = None,
                 max_depth: Optional[int] = None, ops: Sequence[str] = (), stats: bool = True,
                 fingerprint: bool = False, rank: Optional[int] = None, world_size: Optional[int] = None,
                 capture: Optional[str] = None, against: Optional[str] = None,
                 continue_after_divergence: bool = False, stop_after_steps: bool = False,
                 resume_from: Optional[str] = None, progress_dir: Optional[str] = None,
                 hash_threads: int = 0, max_bytes: Union[int, str, None] = None) -> None:
        self.run_dir = os.path.abspath(run_dir)
        # A run_dir that holds a run is refused without it; with it, the earlier run is replaced
        # once this one is complete (the recorder stages it: run_dir/.upguard-record-<pid>).
        self.overwrite = bool(overwrite)
        self.steps = steps
        self.max_depth = -1 if max_depth is None else int(max_depth)
        self.ops = list(ops)
        self.stats = stats
        self.hash_threads = int(hash_threads)
        self.fingerprint = fingerprint
        self._loss = LossHook()
        self.capture = capture or ""
        self.against = os.path.abspath(against) if against else ""
        self.continue_after_divergence = continue_after_divergence
        self.stop_after_steps = stop_after_steps
        # A resume point's snapshot (upguard/_resume.py) the program starts from, skipping the
        # steps before it: the re-runs of `upguard diff --zoom`.
        self.resume_from = os.path.abspath(resume_from) if resume_from else ""
        # Where `upguard record` reads this rank's progress for its progress line.
        self.progress_dir = progress_dir or ""
        # The run's byte budget for its traces (10_000_000 or "10M"); past it recording stops.
        self.max_bytes = str(max_bytes) if max_bytes else ""
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else rank
        self.world_size = int(os.environ.get("WORLD_SIZE", "1")) if world_size is None else world_size
        self._scopes = ModuleScopes(on_first_call=self._note_flags_at_start,
                                    on_root=REGISTRY.add_root)
        self._flags_at_start: Dict[str, str] = {}
        self._running = False

    def _note_flags_at_start(self) -> None:
        """The backend flags as step 0's first model call begins (a script sets them after
        `import torch`, where recording starts)."""
        self._flags_at_start = backend_flags()

    def start(self) -> "Recording":
        global _active
        if _active is not None:
            raise RuntimeError(f"upguard is already recording to {_active.run_dir}; stop it first")
        self._flags_at_start = backend_flags()  # until a model call reads them again
        _C.start(self._start_options())
        REGISTRY.install()
        if self.fingerprint:
            _optimizer.install()
        self._scopes.install()
        _compiled.install(on_module=REGISTRY.add_root)
        if self.fingerprint:
            self._loss.install()
        self._running = True
        _active = self
        return self

    def _start_options(self) -> _C.StartOptions:
        options = _C.StartOptions()
        options.run_dir = self.run_dir
        options.overwrite = self.overwrite
        options.rank = self.rank
        options.world_size = self.world_size
        options.steps = self.steps
        options.max_depth = self.max_depth
        options.ops = self.ops
        options.stats = self.stats
        options.hash_threads = self.hash_threads
        options.fingerprint = self.fingerprint
        options.engine_meta_json = engine_meta_json()
        options.skip_prefixes = [_TORCH_DIR + os.sep, _UPGUARD_DIR + os.sep]
        options.cwd = os.getcwd()
        options.capture = self.capture
        options.against = self.against
        options.continue_after_divergence = self.continue_after_divergence
        options.stop_after_steps = self.stop_after_steps
        options.progress_dir = self.progress_dir
        options.max_bytes = self.max_bytes
        return options

    def stop(self) -> None:
        """Stops recording and closes the trace. Never raises into the training: a failure of
        upguard's is said once on stderr, and a trace it cut short ends with a Stopped record
        that names the step and the reason (docs/formats/trace.md §5.7)."""
        global _active
        if not self._running:
            return
        self._running = False
        _active = None
        # One by one: a hook that cannot be removed must not keep the trace from closing.
        contained("removing upguard's torch.compile hook", _compiled.remove)
        contained("removing upguard's loss hook", self._loss.remove)
        contained("removing upguard's optimizer hook", _optimizer.remove)
        contained("removing upguard's module hooks", self._scopes.remove)
        # Thread counts, backend flags etc. as they are now, for the setup check (reading them
        # runs no torch op), and the flags as step 0 began; without them meta.json keeps those of
        # the start. A program ending by an uncaught exception died inside its step: that step
        # is left without its end. _C.stop never raises: the recorder said its failure (a full
        # disk, --max-bytes) when it happened.
        final_meta = contained("reading the backend flags at the end",
                               lambda: engine_meta_json(self._flags_at_start))
        contained("closing the trace",
                  lambda: _C.stop(final_meta or "", died=_died_of_exception))
        contained("removing upguard's model registry", REGISTRY.remove)

    @property
    def trace_path(self) -> str:
        """This rank's trace: while recording, in the staging directory the recorder writes
        into; once stopped, in ``run_dir`` (when the job's last rank moved the run there)."""
        if self._running:
            return _C.trace_path()
        return os.path.join(self.run_dir, f"rank{self.rank}.ugt")

    @property
    def write_dir(self) -> str:
        """Where this recording writes while it runs (``run_dir``'s staging directory)."""
        return _C.write_dir() if self._running else self.run_dir

    @property
    def ops_recorded(self) -> int:
        return _C.ops_recorded()

    def __enter__(self) -> "Recording":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()  # never raises; an exception of the block's own goes on as it was


def record(run_dir: str, **options: object) -> Recording:
    """A context manager that records every op run inside it into ``run_dir``.

    A ``run_dir`` that already holds a run (a ``rank<N>.ugt``, or a ``meta.json`` upguard
    wrote) is refused (RuntimeError as the block starts, before anything of it runs) unless
    ``overwrite=True``; a ``meta.json`` upguard did not write is refused always, and so is a
    ``run_dir`` another recording writes into. The run is recorded into
    ``run_dir/.upguard-record-<pid>`` and moved into ``run_dir`` when the block ends (with several
    ranks: when the job's last rank ends; ranks of one torchrun, Slurm or MASTER_ADDR job share
    it): the earlier run stays until then, and the user's other files are never touched.

    Options: ``steps="A:B"`` (record steps A..B-1; also "N", "A:", ":B"), ``max_depth=0`` (only
    ops called from user code; default: every nested op), ``ops=["aten::*mm*"]`` (op-name
    globs), ``stats=False`` (digests only), ``fingerprint=True`` (a fingerprint of each step
    outside ``steps`` instead of nothing: loss, batch, random state, gradients, parameters and
    optimizer state; every step without ``steps``), ``rank`` / ``world_size`` (default: $RANK,
    $WORLD_SIZE), ``capture="step=2,index=731"`` (write the selected ops' full tensors to
    ``run_dir/captures/``; the selector syntax is in docs/cli.md), ``against="runs/a"`` (compare
    each op with that reference run as it is recorded; at the first divergence capture its
    tensors and end the program with exit code 1, unless ``continue_after_divergence=True``),
    ``stop_after_steps=True`` (end the program with exit code 0 after the last step of ``steps``),
    ``resume_from="runs/a/resume/step-150.rank0.pt"`` (start from that snapshot of
    :func:`upguard.resume_point`, skipping the steps before it), ``progress_dir=DIR`` (keep
    this rank's progress record in DIR, as ``upguard record`` asks for its progress line),
    ``hash_threads=2`` (digest tensors of 256 KiB or more on that many threads while the
    training goes on; the trace is the same; off with ``capture`` or ``against``),
    ``max_bytes="10M"`` (the run's traces stay within this many bytes, each rank's within its
    share; past it the recording stops with one warning and the trace ends there, readable).

    No failure of upguard's reaches the code inside or after the block: a full disk, a file
    size limit or ``max_bytes`` stops the recording with one warning on stderr, the training
    goes on, and the trace says it is incomplete and up to which step.
    """
    return Recording(run_dir, **options)  # type: ignore[arg-type]


def start(run_dir: str, **options: object) -> Recording:
    """Starts recording without a ``with`` block; call :func:`stop` at the end."""
    return Recording(run_dir, **options).start()  # type: ignore[arg-type]


def stop() -> None:
    """Stops the active recording (if any) and closes its trace."""
    if _active is not None:
        _active.stop()


def step() -> None:
    """Marks the end of a training step. Once called, optimizer.step() no longer ends steps."""
    if _active is not None:
        _active._scopes.resync()  # modules whose forward raised, if the program caught it
    _C.step()


def is_recording() -> bool:
    return _C.is_recording()

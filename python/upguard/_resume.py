"""Resume points (`upguard.resume_point`, docs/long-runs.md): where a re-run may start.

`upguard diff --zoom` re-runs both recorded commands to record the first divergent step in
full. Without help, a re-run trains from step 0 to that step. A script that calls

    for step in range(steps):
        if upguard.resume_point(step, {"model": model, "optimizer": optimizer}):
            continue        # a re-run resuming at a later snapshot skips this step
        ...

at the top of each step lets the re-run start at the nearest snapshot instead:

* In a recording (not a re-run), every `every` steps (step > 0), the call writes a snapshot of
  `state` and of the random generators as step `step` begins, to
  RUN/resume/step-<S>.rank<R>.pt, where S is the recorder's step (upguard's step count, which
  --steps and the diff use; the script's own count is kept beside it).
* In a re-run started with `resume_from` (what --zoom passes), each call before the snapshot's
  step returns True, so the script skips the step's work; the call at that step loads the
  snapshot into `state`'s objects and the generators, moves the recorder to the snapshot's step
  (upguard._C.resume_at) and returns False. The zoomed diff then checks that the re-run
  reproduced the recorded run (its batches and model state), so a snapshot that misses some of
  what the steps depend on is reported, not trusted.

What `state` may hold, by name: objects with state_dict()/load_state_dict() (modules,
optimizers, LR schedulers, GradScalers, a stateful sampler), torch.Generator, numpy's
Generator and RandomState, random.Random. torch's, CUDA's, numpy's and Python's global
generators are saved always. Everything else the steps depend on (a data iterator's position)
must be in `state` or be re-created by the skipped calls: a DataLoader iterated in the loop
still yields its batches for skipped steps (loading them costs time, not training).

A snapshot is read with torch.load(weights_only=True): a run directory may come from anyone,
and unpickling it in full would run whatever code it names. So a snapshot holds only tensors
and plain values; what that unpickler does not read (numpy arrays and scalars, which the
generators' states hold, and on torch 1.13 every float and bytes value) is written as a small
dict tagged `_TAG` and turned back on load (_plain, _restore).
"""

from __future__ import annotations

import functools
import os
import pickle
import random
import types
import weakref
from collections import OrderedDict
from typing import Any, Dict, Mapping

import numpy as np
import torch

from upguard import _C
from upguard._contain import warn

# /1 (before the snapshot was plain) held numpy objects: weights_only=True cannot read it.
_FORMAT = "upguard.resume/2"
_TAG = "__upguard_value__"


class _Resume:
    """Whether this process resumes, and whether it already did."""

    def __init__(self) -> None:
        self.loaded = False
        self.snapshot: Dict[str, Any] = {}
        # False once saving a snapshot failed: said once, no more are tried.
        self.saving = True


_RESUME = _Resume()


def _recording():  # type: ignore[no-untyped-def]
    from upguard import _recording
    return _recording._active


def _save_one(name: str, obj: Any) -> Any:
    if hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict"):
        return obj.state_dict()
    if isinstance(obj, torch.Generator):
        return obj.get_state()
    if isinstance(obj, np.random.Generator):
        return obj.bit_generator.state
    if isinstance(obj, np.random.RandomState):
        return obj.get_state()
    if isinstance(obj, random.Random):
        return obj.getstate()
    raise TypeError(
        f"upguard.resume_point: state[{name!r}] is a {type(obj).__name__}, which upguard cannot "
        "save and restore in place; pass objects with state_dict()/load_state_dict(), or a "
        "torch, numpy or random generator")


def _load_one(name: str, obj: Any, saved: Any) -> None:
    if hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict"):
        obj.load_state_dict(saved)
    elif isinstance(obj, torch.Generator):
        obj.set_state(saved)
    elif isinstance(obj, np.random.Generator):
        obj.bit_generator.state = saved
    elif isinstance(obj, np.random.RandomState):
        obj.set_state(saved)
    elif isinstance(obj, random.Random):
        obj.setstate(saved)
    else:
        _save_one(name, obj)  # raises the same error as saving would


def _globals() -> Dict[str, Any]:
    out: Dict[str, Any] = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                           "random": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda"] = torch.cuda.get_rng_state_all()
    return out


def _set_globals(saved: Mapping[str, Any]) -> None:
    torch.set_rng_state(saved["torch"])
    np.random.set_state(saved["numpy"])
    random.setstate(saved["random"])
    if "cuda" in saved and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(saved["cuda"])


# Functions and methods in a state_dict (torch 1.13's OneCycleLR keeps its anneal_func, CyclicLR
# a WeakMethod) are left out: load_state_dict updates the object made again by the script, which
# made them again. If one held more than its constructor gives, the zoom's check that the re-run
# reproduces its run says so.
_CODE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, functools.partial,
         weakref.ref)
_LEFT_OUT = object()


def _plain(value: Any, where: str) -> Any:
    """`value` with what torch.load(weights_only=True) cannot read as tagged dicts (exact)."""
    if isinstance(value, _CODE):
        return _LEFT_OUT
    if isinstance(value, torch.Tensor) or value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):  # np.float64 too: a float subclass, read back as a float
        return {_TAG: "float", "hex": float(value).hex()}
    if isinstance(value, bytes):
        return {_TAG: "bytes", "hex": value.hex()}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise TypeError(f"upguard.resume_point: {where} is a numpy array of Python objects, "
                            "which a snapshot cannot hold; keep numbers in it")
        return {_TAG: "ndarray" if isinstance(value, np.ndarray) else "npscalar",
                "dtype": array.dtype.str, "shape": list(array.shape), "hex": array.tobytes().hex()}
    if isinstance(value, (list, tuple)):
        items = [_plain(item, f"{where}[{idx}]") for idx, item in enumerate(value)]
        if any(item is _LEFT_OUT for item in items):
            raise TypeError(f"upguard.resume_point: {where} holds a function, which a snapshot "
                            "cannot hold")
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        if _TAG in value:
            raise TypeError(f"upguard.resume_point: {where} has a key {_TAG!r}, upguard's own")
        out = type(value)() if type(value) in (dict, OrderedDict) else {}
        for key, item in value.items():
            plain = _plain(item, f"{where}[{key!r}]")
            if plain is not _LEFT_OUT:
                out[key] = plain
        if hasattr(value, "_metadata"):  # a module's state_dict: load_state_dict reads it
            out._metadata = _plain(value._metadata, f"{where}._metadata")  # type: ignore
        return out
    raise TypeError(
        f"upguard.resume_point: {where} is a {type(value).__name__}, which a snapshot cannot hold "
        "(it is read with torch.load(weights_only=True): tensors, numbers, strings, lists, "
        "tuples and dicts of them)")


def _restore(value: Any) -> Any:
    """The inverse of _plain."""
    if isinstance(value, list):
        return [_restore(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_restore(item) for item in value)
    if not isinstance(value, dict):
        return value
    kind = value.get(_TAG)
    if kind == "float":
        return float.fromhex(value["hex"])
    if kind == "bytes":
        return bytes.fromhex(value["hex"])
    if kind in ("ndarray", "npscalar"):
        array = np.frombuffer(bytes.fromhex(value["hex"]), dtype=np.dtype(value["dtype"]))
        array = array.reshape(value["shape"]).copy()
        return array if kind == "ndarray" else array[()]
    out = type(value)()
    for key, item in value.items():
        out[key] = _restore(item)
    if hasattr(value, "_metadata"):
        out._metadata = _restore(value._metadata)  # type: ignore
    return out


def _snapshot_path(recording: Any, step: int) -> str:
    # Into the recording's staging directory: they move into run_dir with the run.
    return os.path.join(recording.write_dir, "resume", f"step-{step}.rank{recording.rank}.pt")


def _save(recording: Any, step: int, state: Mapping[str, Any]) -> None:
    recorder_step = int(_C.current_step())
    snapshot = {"format": _FORMAT, "step": step, "recorder_step": recorder_step,
                "state": {name: _plain(_save_one(name, obj), f"state[{name!r}]")
                          for name, obj in state.items()},
                "generators": _plain(_globals(), "the generators' state")}
    path = _snapshot_path(recording, recorder_step)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(snapshot, path + ".tmp")
    os.replace(path + ".tmp", path)


def _unpickler_said(error: Exception) -> str:
    """What torch's weights-only unpickler refused, without its advice to turn it off."""
    text = str(error)
    if "WeightsUnpickler error:" in text:  # torch 1.13: one line
        return text.split("WeightsUnpickler error:", 1)[1].strip()[:300]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reasons = [line for line in lines if not line.startswith(("Weights only load failed",
                                                              "Check the documentation"))]
    return (reasons[0] if reasons else lines[-1] if lines else type(error).__name__)[:300]


def _save_or_warn(recording: Any, step: int, state: Mapping[str, Any]) -> None:
    """_save, but a failure (a snapshot directory that cannot be written, a full disk, state
    upguard cannot save) never reaches the training: one warning, and no more snapshots. A
    zoomed re-run then starts from an earlier snapshot, or from step 0."""
    try:
        _save(recording, step, state)
    except Exception as error:
        _RESUME.saving = False
        path = _snapshot_path(recording, int(_C.current_step()))
        try:
            os.remove(path + ".tmp")
        except OSError:
            pass  # never written, or not ours to remove
        warn(f"upguard.resume_point: saving the snapshot of step {step} to {path}", error,
             ", without more snapshots")


def _load(path: str) -> Dict[str, Any]:
    if not os.path.isfile(path):
        raise RuntimeError(f"upguard.resume_point: cannot read the snapshot {path}: no such file")
    try:
        snapshot = torch.load(path, weights_only=True)
    except pickle.UnpicklingError as e:  # names code to run, or objects that are not plain
        raise RuntimeError(
            f"upguard.resume_point: refused to load the snapshot {path}: it holds more than "
            f"tensors and plain values, and unpickling those could run any code "
            f"(torch.load(weights_only=True): {_unpickler_said(e)}). The snapshots of "
            f"upguard.resume_point ({_FORMAT}) hold only those; one written by an older "
            f"upguard (upguard.resume/1) does not load: record the run again") from None
    except Exception as e:  # a truncated or foreign file: say which
        raise RuntimeError(f"upguard.resume_point: cannot read the snapshot {path}: {e}") from e
    if not isinstance(snapshot, dict) or snapshot.get("format") != _FORMAT:
        raise RuntimeError(f"upguard.resume_point: {path} is not an upguard resume snapshot "
                           f"({_FORMAT}); was it written by upguard.resume_point?")
    snapshot["state"] = _restore(snapshot["state"])
    snapshot["generators"] = _restore(snapshot["generators"])
    return snapshot


def _resume(recording: Any, step: int, state: Mapping[str, Any]) -> bool:
    if not _RESUME.snapshot:
        _RESUME.snapshot = _load(f"{recording.resume_from}.rank{recording.rank}.pt")
    target = int(_RESUME.snapshot["step"])
    if step < target:
        return True
    if step > target:
        raise RuntimeError(
            f"upguard.resume_point: called first at step {step}, after the snapshot's step "
            f"{target} ({recording.resume_from}); call it at the top of every step")
    saved = _RESUME.snapshot["state"]
    missing = sorted(set(state) ^ set(saved))
    if missing:
        raise RuntimeError(
            f"upguard.resume_point: the state's names {sorted(state)} are not the snapshot's "
            f"{sorted(saved)} ({recording.resume_from}); pass the same state as when recorded")
    for name, obj in state.items():
        _load_one(name, obj, saved[name])
    _set_globals(_RESUME.snapshot["generators"])
    _C.resume_at(int(_RESUME.snapshot["recorder_step"]))
    _RESUME.loaded = True
    _RESUME.snapshot = {}
    return False


def resume_point(step: int, state: Mapping[str, Any], every: int = 50) -> bool:
    """Call at the top of every step, before the step draws data or random numbers.

    Returns True when the step is to be skipped: only in a re-run of `upguard diff --zoom`
    that resumes at a later snapshot. Recording, saves a snapshot of `state` (objects by name,
    see upguard/_resume.py) and the random generators every `every` steps; not recording, does
    nothing and returns False.
    """
    recording = _recording()
    if recording is None:
        return False
    if recording.resume_from and not _RESUME.loaded:
        return _resume(recording, step, state)
    if recording.resume_from:
        return False  # resumed: a re-run writes no snapshots
    if every > 0 and step > 0 and step % every == 0 and _RESUME.saving:
        _save_or_warn(recording, step, state)
    return False

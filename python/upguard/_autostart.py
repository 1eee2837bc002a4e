"""Zero-code-change recording for `upguard record -- CMD` (and watching, `upguard watch`).

`upguard record` puts upguard/_bootstrap first on PYTHONPATH; its sitecustomize imports this
module, which waits for the program to import torch and then starts recording with the options
the CLI passed in UPGUARD_RECORD_* environment variables. The recording stops at exit. With
UPGUARD_WATCH_DIR it starts the rank's watch ring (upguard/_watch.py) too, or alone.
It is loaded by file path, without importing the upguard package (which imports torch): a
Python process that never imports torch pays nothing.
"""

from __future__ import annotations

import atexit
import json
import importlib.abc
import importlib.util
import os
import sys


# The torchrun launcher (`python -m torch.distributed.run` / `torchrun` / the older
# `torch.distributed.launch`) imports torch but trains nothing: its workers, which inherit the
# UPGUARD_RECORD_* environment, record one trace per rank.
_LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")
_LAUNCHER_SCRIPTS = ("torch/distributed/run.py", "torch/distributed/launch.py")


def _is_torchrun_launcher() -> bool:
    # `python -m torch.distributed.run` imports torch while finding the module, before runpy
    # sets sys.argv[0]: the interpreter's own argv says which module runs.
    argv = list(getattr(sys, "orig_argv", []))
    for idx, arg in enumerate(argv[:-1]):
        if arg == "-m":
            return argv[idx + 1] in _LAUNCHER_MODULES
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return script.endswith(_LAUNCHER_SCRIPTS) or os.path.basename(script) == "torchrun"


def _started_by_a_recording() -> bool:
    """A process started by a process that records (torch's helpers: Inductor's compile
    workers, its `python -c` CPU probes; a spawned worker): it inherits the environment but is
    no part of the training, and must not write the run's trace. A recording process says so
    to its children in UPGUARD_RECORDING_PID (torchrun's launcher records nothing, so its ranks
    do not inherit it; `upguard record` clears it)."""
    return bool(os.environ.get("UPGUARD_RECORDING_PID"))


def _fix_torchrun_std_parsing() -> None:
    """Debian's torch 1.13 launcher under Python 3.11: `Std.from_str("0")` returns None (Python
    3.11 no longer iterates zero-valued IntFlag members), and the launcher then fails with
    "'NoneType' object has no attribute 'get'" unless given --redirects/--tee. Parse by value."""
    try:
        from torch.distributed.elastic.multiprocessing import api
    except Exception:  # torch without the elastic launcher: nothing to fix
        return
    original = api.Std.from_str
    if original("0") is not None:
        return

    def from_str(vm):  # type: ignore[no-untyped-def]
        parsed = original(vm)
        if isinstance(parsed, dict):
            return {rank: api.Std(int(v)) for rank, v in
                    (item.split(":") for item in vm.split(","))}
        return api.Std(int(vm)) if parsed is None else parsed

    api.Std.from_str = staticmethod(from_str)


def _check_build() -> None:
    """Stops the program (exit code 2) when the adapter is built for another torch.

    Before `_C` is imported: loading it into another torch fails on a C++ symbol at best. The
    program is stopped rather than left to run unrecorded: under `upguard record` a run that
    records nothing must not pass silently, and hours of training later "recorded nothing"
    would be the first sign. Nothing of the program has run yet but its `import torch`.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "_upguard_build_check", os.path.join(here, "_build_check.py"))
    if spec is None or spec.loader is None:
        return
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    message = check.mismatch_message(sys.modules["torch"].__version__)
    if message is None:
        return
    print(f"{message}\nupguard: stopped before the program ran unrecorded (exit code 2)",
          file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(2)


def _start_from_env() -> None:
    _check_build()
    if _is_torchrun_launcher():
        _fix_torchrun_std_parsing()
        # The workers inherit the environment: they put the launch command in their metadata.
        os.environ["UPGUARD_LAUNCHER_ARGV"] = json.dumps(list(getattr(sys, "orig_argv", [])))
        return
    if os.environ.get("UPGUARD_WATCH_DIR"):
        from upguard import _watch

        # The ring starts when the process joins a process group: a launcher, a DataLoader
        # worker or a compiler's helper never does, whatever its command line looks like.
        _watch.arm(os.environ["UPGUARD_WATCH_DIR"])
    if not os.environ.get("UPGUARD_RECORD_DIR") or _started_by_a_recording():
        return
    os.environ["UPGUARD_RECORDING_PID"] = str(os.getpid())
    package = sys.modules.get("upguard")
    if package is not None and not hasattr(package, "start"):
        # The program imported upguard before torch: torch is being imported by upguard's own
        # import, which has not defined upguard.start yet. Its __init__ calls this at its end
        # (this module is loaded by path, not as upguard._autostart: the package holds it).
        package._start_after_import = _start_recording
        return
    _start_recording()


def _start_recording() -> None:
    import upguard

    depth = os.environ.get("UPGUARD_RECORD_MAX_DEPTH", "")
    ops = [p for p in os.environ.get("UPGUARD_RECORD_OPS", "").split(",") if p]
    recording = upguard.start(
        os.environ["UPGUARD_RECORD_DIR"],
        steps=os.environ.get("UPGUARD_RECORD_STEPS") or None,
        max_depth=int(depth) if depth else None,
        ops=ops,
        stats=os.environ.get("UPGUARD_RECORD_STATS", "1") != "0",
        fingerprint=os.environ.get("UPGUARD_RECORD_FINGERPRINT", "0") == "1",
        capture=os.environ.get("UPGUARD_RECORD_CAPTURE") or None,
        against=os.environ.get("UPGUARD_RECORD_AGAINST") or None,
        continue_after_divergence=os.environ.get("UPGUARD_RECORD_CONTINUE", "0") == "1",
        stop_after_steps=os.environ.get("UPGUARD_RECORD_STOP_AFTER_STEPS", "0") == "1",
        resume_from=os.environ.get("UPGUARD_RECORD_RESUME_FROM") or None,
        progress_dir=os.environ.get("UPGUARD_RECORD_PROGRESS") or None,
        hash_threads=int(os.environ.get("UPGUARD_RECORD_HASH_THREADS") or 0),
        max_bytes=os.environ.get("UPGUARD_RECORD_MAX_BYTES") or None,
    )
    # Recording.stop never raises (an exception in an atexit callback would print a traceback
    # after the program's own output, as if the program had failed).
    atexit.register(recording.stop)


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; when `torch` is imported, it runs the real loader, then starts."""

    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_start(module):  # type: ignore[no-untyped-def]
            exec_module(module)
            try:
                _start_from_env()
            except Exception as error:  # never break the program being recorded
                print(f"upguard: could not start recording: {error}", file=sys.stderr)

        loader.exec_module = exec_then_start  # type: ignore[method-assign]
        return spec


def install() -> None:
    if "UPGUARD_RECORD_DIR" not in os.environ and "UPGUARD_WATCH_DIR" not in os.environ:
        return
    if "torch" in sys.modules:
        try:
            _start_from_env()
        except Exception as error:  # never break the program being recorded
            print(f"upguard: could not start recording: {error}", file=sys.stderr)
    else:
        sys.meta_path.insert(0, _AfterTorchImport())

"""Zero-code-change recording for `upguard record -- CMD`.

`upguard record` puts upguard/_bootstrap first on PYTHONPATH; its sitecustomize imports this
module, which waits for the program to import torch and then starts recording with the options
the CLI passed in UPGUARD_RECORD_* environment variables. The recording stops at exit.
It is loaded by file path, without importing the upguard package (which imports torch): a
Python process that never imports torch pays nothing.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import os
import sys


def _start_from_env() -> None:
    import upguard

    depth = os.environ.get("UPGUARD_RECORD_MAX_DEPTH", "")
    ops = [p for p in os.environ.get("UPGUARD_RECORD_OPS", "").split(",") if p]
    recording = upguard.start(
        os.environ["UPGUARD_RECORD_DIR"],
        steps=os.environ.get("UPGUARD_RECORD_STEPS") or None,
        max_depth=int(depth) if depth else None,
        ops=ops,
        stats=os.environ.get("UPGUARD_RECORD_STATS", "1") != "0",
        capture=os.environ.get("UPGUARD_RECORD_CAPTURE") or None,
        against=os.environ.get("UPGUARD_RECORD_AGAINST") or None,
        continue_after_divergence=os.environ.get("UPGUARD_RECORD_CONTINUE", "0") == "1",
    )
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
    if "UPGUARD_RECORD_DIR" not in os.environ:
        return
    if "torch" in sys.modules:
        _start_from_env()
    else:
        sys.meta_path.insert(0, _AfterTorchImport())

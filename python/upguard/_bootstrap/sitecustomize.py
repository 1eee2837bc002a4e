"""Loaded at interpreter start under `upguard record`: arms recording, then chains to the
sitecustomize that this one shadows (Debian ships one)."""

import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))

try:
    _autostart_path = os.path.join(os.path.dirname(_here), "_autostart.py")
    _autostart_spec = importlib.util.spec_from_file_location("_upguard_autostart", _autostart_path)
    _autostart = importlib.util.module_from_spec(_autostart_spec)
    _autostart_spec.loader.exec_module(_autostart)
    _autostart.install()
except Exception as _error:  # never break the program being recorded
    print(f"upguard: recording not armed: {_error}", file=sys.stderr)

_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
for _dir in _rest:
    _candidate = os.path.join(_dir or ".", "sitecustomize.py")
    if os.path.isfile(_candidate):
        _spec = importlib.util.spec_from_file_location("_upguard_chained_sitecustomize", _candidate)
        if _spec is not None and _spec.loader is not None:
            _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
        break

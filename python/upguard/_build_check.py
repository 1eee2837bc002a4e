"""Is the compiled adapter beside this file built for the torch this process runs?

The build writes `_build_info.json` next to `_C` (python/CMakeLists.txt): the torch version
it was built for and the interpreter's SOABI. `_C` built for another torch does not load (an
undefined C++ symbol) or, worse, loads against headers that no longer describe the library.
So this is checked before `_C` is imported, by the bootstrap under `upguard record`
(`_autostart.py`, which stops the program with exit code 2) and by `import upguard` (an
ImportError). `upguard record` checks the same before it runs the command
(src/cli/adapter_select.h); this is the second line, for commands whose interpreter it
cannot see (a shell script that runs python).

Loaded by file path from `_autostart.py` (no package import, no torch import of its own).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from typing import Optional

_INFO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_build_info.json")


def mismatch_message(torch_version: str) -> Optional[str]:
    """None when the adapter fits `torch_version` (torch.__version__) and this interpreter, or
    when there is no build info to check (the source tree); else the error to show."""
    try:
        with open(_INFO) as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    soabi = sysconfig.get_config_var("SOABI") or ""
    if info.get("torch_version") == torch_version and info.get("python_soabi") == soabi:
        return None
    source = info.get("source_dir") or "<upguard source>"
    python = os.path.abspath(sys.executable)
    return (f"upguard: this program runs torch {torch_version} ({soabi}, {python}), but the "
            f"adapter in {os.path.dirname(_INFO)} is built for torch "
            f"{info.get('torch_version')} ({info.get('python_soabi')}, {info.get('python')}); "
            f"build one for it: make -C {source} build PYTHON={python}  (or, in that venv: "
            f"pip install --no-build-isolation {source})")

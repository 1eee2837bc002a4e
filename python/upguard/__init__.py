"""upguard: find the first operator where two PyTorch training runs part ways.

Record a run, record another, diff them::

    import upguard
    with upguard.record("runs/a"):
        train()              # steps end at each optimizer.step(), or call upguard.step()

    $ upguard diff runs/a runs/b

Or record an unmodified script: ``upguard record -o runs/a -- python3 train.py``.
"""

from upguard._recording import Recording, record, start, step, stop, is_recording
from upguard._resume import resume_point

__all__ = ["Recording", "record", "start", "step", "stop", "is_recording", "resume_point"]
__version__ = "0.1.0"

# Under `upguard record`, a program that imports upguard before torch starts recording here
# (upguard/_autostart.py put it off while this package was being imported).
_start = globals().pop("_start_after_import", None)
if _start is not None:
    try:
        _start()
    except Exception as _error:  # never break the program being recorded
        import sys as _sys

        print(f"upguard: could not start recording: {_error}", file=_sys.stderr)
del _start

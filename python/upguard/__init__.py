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

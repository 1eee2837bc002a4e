"""Never raise into the training: a failure of upguard's own becomes one line on stderr.

    from upguard._contain import contained
    contained("closing the trace", lambda: _C.stop(...))   # None if it failed

Only ``Exception`` is caught: a KeyboardInterrupt or SystemExit is the program's, not upguard's.
"""

from __future__ import annotations

import sys
from typing import Callable, Optional, TypeVar

T = TypeVar("T")


def warn(what: str, error: BaseException, then: str = "") -> None:
    """Says on stderr that `what` failed and that the training goes on (`then`: how)."""
    print(f"upguard: {what} failed ({type(error).__name__}: {error}); training continues{then}",
          file=sys.stderr)


def contained(what: str, action: Callable[[], T]) -> Optional[T]:
    """`action()`, or None after saying on stderr that `what` failed."""
    try:
        return action()
    except Exception as error:  # upguard's failure: the training must not see it
        warn(what, error)
        return None

"""A rank whose stack thread starts late, as on a loaded machine, for test_watch.py: the
monitor asks a new ring for its stacks at once, before the thread first looks; the thread must
answer that request. Run under `upguard watch -- python late_stack_thread.py`."""

import os
import time

from upguard import _C, _watch

answer = _watch._answer_stack_requests


def late_answer() -> None:
    _C.watch_wait_stack_request(0, 30.0)  # starts once the monitor has asked
    answer()


_watch._answer_stack_requests = late_answer
_watch.start(os.environ["UPGUARD_WATCH_DIR"], 0, 1)
time.sleep(3.0)  # idle: the stack the monitor gets ends here
_watch.close()

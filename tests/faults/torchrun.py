"""`python -m torch.distributed.run` for the fault harness, runnable by Debian's torch 1.13 under
Python 3.11: there `Std.from_str("0")` returns None (3.11 no longer iterates an IntFlag's zero
member) and the launcher dies on "'NoneType' object has no attribute 'get'". Parse by value,
then run the launcher unchanged. (upguard's own autostart does the same for `upguard record`;
the harness must not depend on upguard.)

    python3 tests/faults/torchrun.py --nnodes 2 --node_rank 0 ... script.py args
"""

import runpy

from torch.distributed.elastic.multiprocessing import api

if api.Std.from_str("0") is None:
    def _from_str(vm):  # "3" or "0:3,1:0": local rank -> streams
        if ":" in vm:
            return {int(rank): api.Std(int(v)) for rank, v in
                    (item.split(":") for item in vm.split(","))}
        return api.Std(int(vm))

    api.Std.from_str = staticmethod(_from_str)

runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)

"""Online mode across ranks (`upguard record --against REF` under torchrun).

Each rank compares its ops with its own reference trace. The first rank to diverge tells the
others through torch.distributed's store (the c10d TCPStore torchrun set up), not a protocol of
our own: `notice` adds one to the key `upguard/diverged`, whose returned count is the rank's
place in the order of divergences, and stores its online.json under that number. A rank's
divergence is noticed before it reaches its next collective, so a rank that diverges only
because a collective delivered different data to it always gets a later number than the rank
it came from: number 1 is the origin.

The diverged rank records on to the end of its step: leaving at once would leave the others
waiting in the step's collectives. At every step's end each rank calls `agree`: it counts
itself in under `upguard/step/<S>` and waits for every rank; the last one in fixes the count of
`upguard/diverged` for all of them (agree_through). If a rank diverged, all of them stop there
together, and rank 0 writes RUN/online.ranks.json: every
divergence in order, for `upguard record` to report. Each rank then closes its trace and calls
`depart`, which waits for every rank to have closed its own: torchrun kills the other ranks as
soon as one leaves with an error, and must find none with its report or trace still open.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from typing import Any, Optional, Tuple

_DIVERGED = "upguard/diverged"
_DEPART_WAIT = timedelta(minutes=2)  # a rank that died before it closed: the others still leave
_noticed = False


def _store() -> Optional[Tuple[Any, int, int]]:
    dist = sys.modules.get("torch.distributed")  # not imported: no store, and no import here
    if dist is None or not (dist.is_available() and dist.is_initialized()):
        return None
    return dist.distributed_c10d._get_default_store(), dist.get_rank(), dist.get_world_size()


def notice(divergence_json: str, run_dir: str) -> None:
    """This rank diverged from its reference: tell the others (once)."""
    global _noticed
    got = _store()
    if got is None or _noticed:
        return
    store, rank, _ = got
    _noticed = True
    order = store.add(_DIVERGED, 1)
    entry = json.loads(divergence_json or "{}")
    entry.update({"rank": rank, "order": order})
    store.set(f"{_DIVERGED}/{order}", json.dumps(entry))


def agree(step: int, run_dir: str) -> bool:
    """Step `step` ended on this rank: wait for every rank to end it; whether one diverged."""
    got = _store()
    if got is None:
        return False
    store, rank, world = got
    return agree_through(store, rank, world, step, run_dir)


def agree_through(store: Any, rank: int, world: int, step: int, run_dir: str) -> bool:
    """agree() on `store`. Every rank decides on one value: the number of divergences noticed
    when the last rank came in. Then no rank has begun the next step, so it counts exactly those
    of this step and before; read by each rank after the wait instead, a rank let go early could
    notice one in the next step first and a slower rank would stop a step before the others
    (which then waited in that step's collectives for it)."""
    key = f"upguard/step/{step}"
    if store.add(key, 1) == world:  # the last rank to arrive lets everyone go on
        store.set(f"{key}/all", str(store.add(_DIVERGED, 0)))
    store.wait([f"{key}/all"], timedelta(minutes=30))
    diverged = int(store.get(f"{key}/all").decode())
    if diverged == 0:
        return False
    if rank == 0:
        entries = [json.loads(store.get(f"{_DIVERGED}/{n}")) for n in range(1, diverged + 1)]
        report = {"step": step, "world_size": world, "divergences": entries}
        path = os.path.join(run_dir, "online.ranks.json")
        with open(path + ".tmp", "w") as out:  # closing raises on a late write error
            json.dump(report, out, indent=2)
            out.flush()
            os.fsync(out.fileno())
        os.replace(path + ".tmp", path)
    return True


def depart(step: int) -> None:
    """This rank closed its trace after `agree(step)` said stop: wait for every rank to have."""
    got = _store()
    if got is None:
        return
    store, _, world = got
    key = f"upguard/step/{step}/closed"
    if store.add(key, 1) == world:
        store.set(f"{key}/all", "1")
    store.wait([f"{key}/all"], _DEPART_WAIT)

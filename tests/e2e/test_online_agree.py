"""The stop agreement of online mode across ranks (python/upguard/_online.py), on torch's own
in-process store with two ranks as threads: every rank stops at the same step, even when a rank
let go early notices a divergence of the next step before a slower rank has decided (a
torchrun test saw rank 0 stop at step 1 and rank 1 go on to step 2, then wait two minutes)."""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path

import torch.distributed as dist

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("upguard_online", REPO / "python/upguard/_online.py")
online = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(online)


class SlowAfterWait:
    """The store as one rank sees it: after its wait returns, it stalls until `go` is set."""

    def __init__(self, store, go: threading.Event):
        self.store, self.go = store, go

    def wait(self, keys, timeout):
        self.store.wait(keys, timeout)
        assert self.go.wait(30)

    def __getattr__(self, name):
        return getattr(self.store, name)


def notice(store, rank: int, step: int) -> None:
    """What online.notice stores for a divergence of this rank."""
    order = store.add("upguard/diverged", 1)
    store.set(f"upguard/diverged/{order}", json.dumps({"rank": rank, "step": step, "order": order}))


def test_a_divergence_of_the_next_step_does_not_stop_a_slow_rank_early(tmp_path: Path):
    store = dist.HashStore()
    go = threading.Event()
    rank1_in = threading.Event()
    decided = {}

    def rank0():
        slow = SlowAfterWait(store, go)
        decided[(0, 1)] = online.agree_through(slow, 0, 2, 1, str(tmp_path))
        if not decided[(0, 1)]:
            decided[(0, 2)] = online.agree_through(store, 0, 2, 2, str(tmp_path))

    def rank1():
        rank1_in.wait(30)
        # Rank 1 comes in last at step 1: no divergence yet, it goes on.
        decided[(1, 1)] = online.agree_through(store, 1, 2, 1, str(tmp_path))
        # It diverges in step 2 while rank 0 still has to read its decision for step 1.
        notice(store, 1, 2)
        go.set()
        decided[(1, 2)] = online.agree_through(store, 1, 2, 2, str(tmp_path))

    # Daemons: a rank left waiting for a step the other never reaches must not hold the test.
    threads = [threading.Thread(target=rank0, daemon=True),
               threading.Thread(target=rank1, daemon=True)]
    threads[0].start()
    while store.num_keys() == 0 or store.add("upguard/step/1", 0) < 1:
        threading.Event().wait(0.01)  # rank 0 has counted itself in at step 1
    rank1_in.set()
    threads[1].start()
    for thread in threads:
        thread.join(20)
    # Both ranks go on after step 1 and stop together at the end of step 2.
    assert decided == {(0, 1): False, (1, 1): False, (0, 2): True, (1, 2): True}
    report = json.loads((tmp_path / "online.ranks.json").read_text())
    assert report["step"] == 2 and report["world_size"] == 2
    assert [d["rank"] for d in report["divergences"]] == [1]


def test_a_divergence_before_the_step_end_stops_every_rank_there(tmp_path: Path):
    store = dist.HashStore()
    notice(store, 1, 0)
    results = {}
    thread = threading.Thread(daemon=True, target=lambda: results.setdefault(
        0, online.agree_through(store, 0, 2, 0, str(tmp_path))))
    thread.start()
    results[1] = online.agree_through(store, 1, 2, 0, str(tmp_path))
    thread.join(20)
    assert results == {0: True, 1: True}
    assert json.loads((tmp_path / "online.ranks.json").read_text())["step"] == 0

"""Distributed runs (issue 6, parts 2, 3 and 5): the DDP GPT under torchrun with 2 and 3 ranks.

Collectives are recorded as collectives (group, member ranks, number in the group, outputs
after completion), two identical runs diff identical on every rank, and a change on one rank
is named at its origin with the other ranks as receivers through the all-reduce that carried
it. Every run and diff has a timeout: a hang fails the test instead of stalling CI.

Each GPT test runs twice (issue 13): gradients synchronized by DDP (c10d::allreduce_, in
backward) and by functional collectives (gpt_ddp.py --funcol: _c10d_functional::all_reduce per
gradient after backward, completed at its wait_tensor), the second on torch 2.x only."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from dataclasses import dataclass
from typing import Dict, List, Tuple

import pytest

from conftest import PYTHON, REPO, TORCH_VERSION, line_of, show_json, upguard

DDP = REPO / "examples" / "gpt_ddp.py"
MODEL = REPO / "examples" / "gpt.py"
STEPS = "3"

NEEDS_FUNCOL = pytest.mark.skipif(
    TORCH_VERSION < (2, 4), reason="functional collectives (_c10d_functional ops and "
    "wait_tensor): torch 1.13 has none; measured on 2.15, 2.0-2.3 not tested")


@dataclass(frozen=True)
class Sync:
    """How gpt_ddp.py keeps the ranks' gradients equal, and what the records then show."""
    name: str
    args: Tuple[str, ...]
    all_reduce: str  # the op that all-reduces gradients
    phase: str       # the phase it runs in
    per_step: int    # all-reduces per step: DDP's one bucket, or one per parameter (29)
    act: str         # the planted module's path: DDP's wrapper names the GPT "module"


DDP_SYNC = Sync("ddp", (), "c10d::allreduce_", "backward", 1, "module.blocks.1.mlp.act")
FUNCOL_SYNC = Sync("funcol", ("--funcol",), "_c10d_functional::all_reduce", "other", 29,
                   "blocks.1.mlp.act")


@pytest.fixture(scope="module", params=[DDP_SYNC, pytest.param(FUNCOL_SYNC, marks=NEEDS_FUNCOL)],
                ids=lambda sync: sync.name)
def sync(request) -> Sync:
    return request.param


def record_ddp(run: Path, ranks: int, sync: Sync, *args: str, expect_ok: bool = True) -> Path:
    result = upguard("record", "-o", run, "--", PYTHON, "-m", "torch.distributed.run",
                     f"--nproc_per_node={ranks}", DDP, "--quiet", "--steps", STEPS, *sync.args,
                     *args, timeout=240)
    if expect_ok:
        assert result.returncode == 0, result.stderr
    return run


def diff(a: Path, b: Path) -> Tuple[int, Dict, str]:
    text = upguard("diff", a, b, timeout=120)
    result = upguard("diff", a, b, "--json", timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout), text.stdout


@pytest.fixture(scope="module")
def base2(runs: Path, sync: Sync) -> Path:
    return record_ddp(runs / f"{sync.name}2_a", 2, sync)


@pytest.fixture(scope="module")
def base3(runs: Path, sync: Sync) -> Path:
    return record_ddp(runs / f"{sync.name}3_a", 3, sync)


def test_collectives_are_records_with_group_ranks_and_numbers(base3: Path, sync: Sync):
    for rank in (0, 1, 2):
        shown = show_json(base3, "--rank", str(rank))
        collectives = [op for step in shown["steps"] for op in step["ops"] if "collective" in op]
        reduces = [op for op in collectives if op["op"] == sync.all_reduce]
        assert len(reduces) == int(STEPS) * sync.per_step
        assert {op["phase"] for op in reduces} == {sync.phase}
        for op in collectives:
            info = op["collective"]
            assert info["group"] == "0" and info["ranks"] == [0, 1, 2]
            assert info["group_rank"] == rank and info["group_size"] == 3
            assert info["completed"] is True
        # Numbered in call order within the group, the same on every rank.
        assert [op["collective"]["seq"] for op in collectives] == list(range(len(collectives)))
    meta = json.loads((base3 / "meta.json").read_text())
    assert {"name": "0", "ranks": [0, 1, 2], "backend": "gloo"} in meta["process_groups"]


def test_identical_runs_are_identical_on_every_rank(runs: Path, base2: Path, sync: Sync):
    other = record_ddp(runs / f"{sync.name}2_b", 2, sync)
    code, result, text = diff(base2, other)
    assert code == 0, text
    assert result["verdict"] == "identical"
    assert [r["verdict"] for r in result["ranks"]] == ["identical", "identical"]
    assert [r["role"] for r in result["across_ranks"]["ranks"]] == ["identical", "identical"]
    # Steps are skipped whole by their step digests: completion timing is not in them.
    assert all(r["steps_identical"] == r["steps_compared"] for r in result["ranks"])


def test_change_on_rank_1_is_the_origin_and_the_others_receive_it(runs: Path, base3: Path,
                                                                  sync: Sync):
    planted = record_ddp(runs / f"{sync.name}3_gelu", 3, sync, "--plant", "gelu-tanh",
                         "--plant-rank", "1")
    code, result, text = diff(base3, planted)
    assert code == 1, text
    across = result["across_ranks"]
    assert across["origins"] == [1] and across["first_rank"] == 1
    roles = {r["rank"]: r for r in across["ranks"]}
    origin = roles[1]
    assert origin["role"] == "origin" and origin["verdict"] == "culprit"
    assert origin["first"]["op"] == "aten::gelu"
    assert origin["first"]["module"] == sync.act
    assert origin["first"]["step"] == 2 and origin["first"]["phase"] == "forward"
    assert origin["first"]["call_site"] == f"examples/gpt.py:{line_of(MODEL, 'self.act(')}"
    assert result["verdict"] == "culprit"
    for receiver in (0, 2):
        assert roles[receiver]["role"] == "receiver", text
        hop = across["collectives"][roles[receiver]["via"]]
        assert hop["op"] == sync.all_reduce and hop["group"] == "0"
        assert hop["ranks"] == [0, 1, 2] and hop["senders"] == [1]
        assert sorted(hop["receivers"]) == [0, 2] and hop["step"] == 2
        assert hop["phase"] == sync.phase
    assert "ORIGIN  rank 1: culprit at step 2" in text
    assert f"path    rank 1 -> {sync.all_reduce} #" in text and "-> ranks 0, 2" in text


def test_data_change_on_one_rank_is_a_data_verdict_there(runs: Path, base2: Path, sync: Sync):
    shifted = record_ddp(runs / f"{sync.name}2_shift", 2, sync, "--plant", "data-shift",
                         "--plant-rank", "1")
    code, result, text = diff(base2, shifted)
    assert code == 1, text
    across = result["across_ranks"]
    assert across["origins"] == [1]
    roles = {r["rank"]: r for r in across["ranks"]}
    assert roles[1]["verdict"] == "data" and roles[1]["first"]["op"] == "upguard::batch"
    assert roles[0]["role"] == "receiver"
    assert result["verdict"] == "data"


def test_a_rank_that_crashed_leaves_a_comparable_prefix(runs: Path, base2: Path, sync: Sync):
    crashed = record_ddp(runs / f"{sync.name}2_crash", 2, sync, "--plant", "crash",
                         "--plant-rank", "1", expect_ok=False)
    code, result, text = diff(base2, crashed)
    notes = result["across_ranks"]["notes"]
    assert any(n.startswith("rank 1's trace in ") and "ends early (last step 1" in n
               for n in notes), notes
    # What both runs recorded is identical: the crash is named, no op is blamed.
    assert code == 0, text
    assert result["verdict"] == "identical"


def test_online_every_rank_stops_together_and_names_the_origin(runs: Path, base3: Path,
                                                              sync: Sync):
    run = runs / f"{sync.name}3_online"
    result = upguard("record", "-o", run, "--against", base3, "--", PYTHON, "-m",
                     "torch.distributed.run", "--nproc_per_node=3", DDP, "--quiet", "--steps",
                     STEPS, *sync.args, "--plant", "gelu-tanh", "--plant-rank", "1",
                     timeout=240)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "rank 1 diverged first from" in out
    assert "all 3 ranks stopped together at the end of step 2" in out
    assert "1. rank 1 at step 2 #" in out and ": aten::gelu (forward, module " \
        f"{sync.act}" in out and "<- the origin" in out
    report = json.loads((run / "online.ranks.json").read_text())
    assert [d["rank"] for d in report["divergences"]][0] == 1
    assert sorted(d["rank"] for d in report["divergences"]) == [0, 1, 2]
    # Every rank closed its trace (no rank was killed): the diff reads them whole and orders
    # the ranks as it does offline.
    code, diffed, text = diff(base3, run)
    assert "ends without its end record" not in text
    assert diffed["across_ranks"]["origins"] == [1]
    assert {r["rank"]: r["role"] for r in diffed["across_ranks"]["ranks"]} == {
        0: "receiver", 1: "origin", 2: "receiver"}


COLLECTIVES = REPO / "examples" / "collectives.py"
GROUP0 = ["c10d::allreduce_", "c10d::broadcast_", "c10d::allgather_", "c10d::reduce_",
          "c10d::gather_", "c10d::scatter_"]


# A rank of examples/collectives.py --funcol on torch 2.15 aborted twice in CI, after its
# trace had closed, with "terminate called without an active exception" (a thread taking the
# GIL while the interpreter finalizes); never in 73 runs here. The fault handler prints every
# thread's Python stack if it happens again, and the recording is made again: the test judges
# the records, and a third abort fails it. (2026-12-05: twice in a row while a full build ran
# beside the tests, on one rank with only the finalizing main thread left; never in 10 runs
# after, with or without two busy loops beside them.)
TEARDOWN_ABORT = "terminate called without an active exception"


def record_collectives(run: Path, *args: str) -> Path:
    for attempt in (1, 2, 3):
        result = upguard("record", "-o", run, "--", PYTHON, "-m", "torch.distributed.run",
                         "--nproc_per_node=3", COLLECTIVES, *args, timeout=240,
                         env={"PYTHONFAULTHANDLER": "1"})
        if result.returncode == 0 or attempt == 3 or TEARDOWN_ABORT not in result.stderr:
            break
        warnings.warn(f"{run.name}: a rank aborted at exit, recording again:\n{result.stderr}")
        shutil.rmtree(run)
    assert result.returncode == 0, result.stderr
    return run


def assert_numbered_in_groups(calls: List[Dict], rank: int, step: int, in_world: int,
                              subgroup: bool) -> None:
    """`calls` of one step on `rank`: `in_world` calls numbered on in group 0 from the earlier
    steps' count, and last, for an even rank, one call in the even ranks' group 1."""
    world = [op["collective"] for op in calls if op["collective"]["group"] == "0"]
    first = in_world * step
    assert [c["seq"] for c in world] == list(range(first, first + in_world))
    assert all(c["ranks"] == [0, 1, 2] and c["group_rank"] == rank for c in world)
    if subgroup:
        even = calls[-1]["collective"]
        assert even["group"] == "1" and even["ranks"] == [0, 2]
        assert even["group_rank"] == rank // 2 and even["seq"] == step


@pytest.fixture(scope="module")
def coll_a(runs: Path) -> Path:
    return record_collectives(runs / "coll_a")


def test_every_kind_of_collective_is_recorded_completed_in_its_group(coll_a: Path):
    for rank in (0, 1, 2):
        shown = show_json(coll_a, "--rank", str(rank), "--max-depth", "0")
        for step in shown["steps"]:
            ops = [op for op in step["ops"] if op["op"].startswith("c10d::")]
            names = [op["op"] for op in ops]
            # Odd ranks receive first around the ring; the subgroup holds the even ranks.
            ring = ["c10d::send", "c10d::recv_"] if rank % 2 == 0 else ["c10d::recv_",
                                                                       "c10d::send"]
            subgroup = ["c10d::allreduce_"] if rank % 2 == 0 else []
            assert names == GROUP0 + ring + ["c10d::barrier"] + subgroup
            assert all(op["collective"]["completed"] for op in ops), ops
            assert_numbered_in_groups(ops, rank, step["step"], 9, bool(subgroup))


@pytest.mark.parametrize("args, hop_name", [
    ((), "c10d::allreduce_ #9 in group 0 [0,1,2]"),
    pytest.param(("--funcol",), "_c10d_functional::all_reduce #6 in group 0 [0,1,2]",
                 marks=NEEDS_FUNCOL)], ids=["c10d", "funcol"])
def test_collectives_identical_runs_and_an_origin_on_rank_2(runs: Path, request,
                                                            args: Tuple[str], hop_name: str):
    name = "funcol" if args else "coll"
    base = request.getfixturevalue(f"{name}_a")  # funcol_a records only where it runs
    again = record_collectives(runs / f"{name}_b", *args)
    code, result, text = diff(base, again)
    assert code == 0 and result["verdict"] == "identical", text
    planted = record_collectives(runs / f"{name}_plant", *args, "--plant-rank", "2")
    code, result, text = diff(base, planted)
    assert code == 1, text
    across = result["across_ranks"]
    assert across["origins"] == [2]
    origin = across["ranks"][2]
    assert origin["first"]["op"] == "aten::mul" and origin["first"]["step"] == 1
    assert [across["ranks"][r]["role"] for r in (0, 1)] == ["receiver", "receiver"], text
    hop = across["collectives"][across["ranks"][0]["via"]]
    assert hop["name"] == hop_name
    assert hop["senders"] == [2] and sorted(hop["receivers"]) == [0, 1]


FUNCOL_WORLD = ["_c10d_functional::all_reduce", "_c10d_functional::broadcast",
                "_c10d_functional::all_gather_into_tensor",
                "_c10d_functional::reduce_scatter_tensor", "_c10d_functional::all_to_all_single",
                "_c10d_functional::all_reduce_"]
WAIT = "_c10d_functional::wait_tensor"


@pytest.fixture(scope="module")
def funcol_a(runs: Path) -> Path:
    return record_collectives(runs / "funcol_a", "--funcol")


@NEEDS_FUNCOL
def test_every_functional_collective_completes_at_its_wait_in_its_group(funcol_a: Path):
    for rank in (0, 1, 2):
        shown = show_json(funcol_a, "--rank", str(rank))
        for step in shown["steps"]:
            ops = step["ops"]
            calls = [op for op in ops if "collective" in op]
            # The c10d ops a functional collective runs inside itself are not calls of their
            # own; the even ranks' subgroup all-reduce comes last.
            subgroup = ["_c10d_functional::all_reduce"] if rank % 2 == 0 else []
            assert [op["op"] for op in calls] == FUNCOL_WORLD + subgroup
            for call in calls:
                info = call["collective"]
                assert info["completed"] is True, call
                # Completed as its wait_tensor returns: the last op recorded before the
                # completion is that wait, or (gloo's reduce-scatter, whose staged copy into
                # the output runs inside the wait) the next one is.
                done = call["index"] + info["ops_before_completion"]
                between = [op["op"] for op in ops[call["index"] + 1:done + 1] if op["depth"] == 0]
                assert WAIT not in between[:-1], (call["op"], between)
                if call["op"] == "_c10d_functional::reduce_scatter_tensor":
                    assert not between and ops[done + 1]["op"] == WAIT, between
                else:
                    assert between[-1] == WAIT, (call["op"], between)
            assert_numbered_in_groups(calls, rank, step["step"], 6, bool(subgroup))



@NEEDS_FUNCOL
def test_a_functional_collective_whose_peer_died_is_not_completed(runs: Path):
    # Its wait raised: the result holds the unreduced input, which a completed record would
    # compare as a collective that computed differently.
    run = runs / "funcol_peer_exit"
    result = upguard("record", "-o", run, "--", PYTHON, "-m", "torch.distributed.run",
                     "--nproc_per_node=2", REPO / "tests" / "e2e" / "funcol_peer_exit.py",
                     timeout=240)
    assert result.returncode == 0, result.stderr
    assert "rank 0 step 1: RuntimeError" in result.stdout
    shown = show_json(run, "--rank", "0")
    calls = [(step["step"], op["collective"]["completed"]) for step in shown["steps"]
             for op in step["ops"] if op["op"] == "_c10d_functional::all_reduce"]
    assert calls == [(0, True), (1, False)]

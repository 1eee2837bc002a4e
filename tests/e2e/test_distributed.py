"""Distributed runs (issue 6, parts 2, 3 and 5): the DDP GPT under torchrun with 2 and 3 ranks.

Collectives are recorded as collectives (group, member ranks, number in the group, outputs
after completion), two identical runs diff identical on every rank, and a change on one rank
is named at its origin with the other ranks as receivers through the all-reduce that carried
it. Every run and diff has a timeout: a hang fails the test instead of stalling CI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Tuple

import pytest

from conftest import PYTHON, REPO, line_of, show_json, upguard

DDP = REPO / "examples" / "gpt_ddp.py"
MODEL = REPO / "examples" / "gpt.py"
STEPS = "3"


def record_ddp(run: Path, ranks: int, *args: str, expect_ok: bool = True) -> Path:
    result = upguard("record", "-o", run, "--", PYTHON, "-m", "torch.distributed.run",
                     f"--nproc_per_node={ranks}", DDP, "--quiet", "--steps", STEPS, *args,
                     timeout=240)
    if expect_ok:
        assert result.returncode == 0, result.stderr
    return run


def diff(a: Path, b: Path) -> Tuple[int, Dict, str]:
    text = upguard("diff", a, b, timeout=120)
    result = upguard("diff", a, b, "--json", timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout), text.stdout


@pytest.fixture(scope="module")
def base2(runs: Path) -> Path:
    return record_ddp(runs / "ddp2_a", 2)


@pytest.fixture(scope="module")
def base3(runs: Path) -> Path:
    return record_ddp(runs / "ddp3_a", 3)


def test_collectives_are_records_with_group_ranks_and_numbers(base3: Path):
    for rank in (0, 1, 2):
        shown = show_json(base3, "--rank", str(rank))
        collectives = [op for step in shown["steps"] for op in step["ops"]
                       if op["op"].startswith("c10d::")]
        reduces = [op for op in collectives if op["op"] == "c10d::allreduce_"]
        assert len(reduces) == int(STEPS)  # DDP: one bucket, one all-reduce per step
        for op in collectives:
            info = op["collective"]
            assert info["group"] == "0" and info["ranks"] == [0, 1, 2]
            assert info["group_rank"] == rank and info["group_size"] == 3
            assert info["completed"] is True
        # Numbered in call order within the group, the same on every rank.
        assert [op["collective"]["seq"] for op in collectives] == list(range(len(collectives)))
    meta = json.loads((base3 / "meta.json").read_text())
    assert {"name": "0", "ranks": [0, 1, 2], "backend": "gloo"} in meta["process_groups"]


def test_identical_runs_are_identical_on_every_rank(runs: Path, base2: Path):
    other = record_ddp(runs / "ddp2_b", 2)
    code, result, text = diff(base2, other)
    assert code == 0, text
    assert result["verdict"] == "identical"
    assert [r["verdict"] for r in result["ranks"]] == ["identical", "identical"]
    assert [r["role"] for r in result["across_ranks"]["ranks"]] == ["identical", "identical"]
    # Steps are skipped whole by their step digests: completion timing is not in them.
    assert all(r["steps_identical"] == r["steps_compared"] for r in result["ranks"])


def test_change_on_rank_1_is_the_origin_and_the_others_receive_it(runs: Path, base3: Path):
    planted = record_ddp(runs / "ddp3_gelu", 3, "--plant", "gelu-tanh", "--plant-rank", "1")
    code, result, text = diff(base3, planted)
    assert code == 1, text
    across = result["across_ranks"]
    assert across["origins"] == [1] and across["first_rank"] == 1
    roles = {r["rank"]: r for r in across["ranks"]}
    origin = roles[1]
    assert origin["role"] == "origin" and origin["verdict"] == "culprit"
    assert origin["first"]["op"] == "aten::gelu"
    assert origin["first"]["module"] == "module.blocks.1.mlp.act"
    assert origin["first"]["step"] == 2 and origin["first"]["phase"] == "forward"
    assert origin["first"]["call_site"] == f"examples/gpt.py:{line_of(MODEL, 'self.act(')}"
    assert result["verdict"] == "culprit"
    for receiver in (0, 2):
        assert roles[receiver]["role"] == "receiver", text
        hop = across["collectives"][roles[receiver]["via"]]
        assert hop["op"] == "c10d::allreduce_" and hop["group"] == "0"
        assert hop["ranks"] == [0, 1, 2] and hop["senders"] == [1]
        assert sorted(hop["receivers"]) == [0, 2] and hop["step"] == 2
        assert hop["phase"] == "backward"
    assert "ORIGIN  rank 1: culprit at step 2" in text
    assert "path    rank 1 -> c10d::allreduce_ #" in text and "-> ranks 0, 2" in text


def test_data_change_on_one_rank_is_a_data_verdict_there(runs: Path, base2: Path):
    shifted = record_ddp(runs / "ddp2_shift", 2, "--plant", "data-shift", "--plant-rank", "1")
    code, result, text = diff(base2, shifted)
    assert code == 1, text
    across = result["across_ranks"]
    assert across["origins"] == [1]
    roles = {r["rank"]: r for r in across["ranks"]}
    assert roles[1]["verdict"] == "data" and roles[1]["first"]["op"] == "upguard::batch"
    assert roles[0]["role"] == "receiver"
    assert result["verdict"] == "data"


def test_a_rank_that_crashed_leaves_a_comparable_prefix(runs: Path, base2: Path):
    crashed = record_ddp(runs / "ddp2_crash", 2, "--plant", "crash", "--plant-rank", "1",
                         expect_ok=False)
    code, result, text = diff(base2, crashed)
    notes = result["across_ranks"]["notes"]
    assert any(n.startswith("rank 1's trace in ") and "ends early (last step 1" in n
               for n in notes), notes
    # What both runs recorded is identical: the crash is named, no op is blamed.
    assert code == 0, text
    assert result["verdict"] == "identical"


def test_online_every_rank_stops_together_and_names_the_origin(runs: Path, base3: Path):
    run = runs / "ddp3_online"
    result = upguard("record", "-o", run, "--against", base3, "--", PYTHON, "-m",
                     "torch.distributed.run", "--nproc_per_node=3", DDP, "--quiet", "--steps",
                     STEPS, "--plant", "gelu-tanh", "--plant-rank", "1", timeout=240)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "rank 1 diverged first from" in out
    assert "all 3 ranks stopped together at the end of step 2" in out
    assert "1. rank 1 at step 2 #" in out and ": aten::gelu (forward, module " \
        "module.blocks.1.mlp.act" in out and "<- the origin" in out
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


def record_collectives(run: Path, *args: str) -> Path:
    result = upguard("record", "-o", run, "--", PYTHON, "-m", "torch.distributed.run",
                     "--nproc_per_node=3", COLLECTIVES, *args, timeout=240)
    assert result.returncode == 0, result.stderr
    return run


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
            in_world = [op["collective"] for op in ops if op["collective"]["group"] == "0"]
            first = 9 * step["step"]
            assert [c["seq"] for c in in_world] == list(range(first, first + 9))
            assert all(c["ranks"] == [0, 1, 2] and c["group_rank"] == rank for c in in_world)
            if subgroup:
                even = ops[-1]["collective"]
                assert even["group"] == "1" and even["ranks"] == [0, 2]
                assert even["group_rank"] == rank // 2 and even["seq"] == step["step"]


def test_collectives_identical_runs_and_an_origin_on_rank_2(runs: Path, coll_a: Path):
    again = record_collectives(runs / "coll_b")
    code, result, text = diff(coll_a, again)
    assert code == 0 and result["verdict"] == "identical", text
    planted = record_collectives(runs / "coll_plant", "--plant-rank", "2")
    code, result, text = diff(coll_a, planted)
    assert code == 1, text
    across = result["across_ranks"]
    assert across["origins"] == [2]
    origin = across["ranks"][2]
    assert origin["first"]["op"] == "aten::mul" and origin["first"]["step"] == 1
    hop = across["collectives"][across["ranks"][0]["via"]]
    assert hop["name"] == "c10d::allreduce_ #9 in group 0 [0,1,2]"
    assert hop["senders"] == [2] and sorted(hop["receivers"]) == [0, 1]

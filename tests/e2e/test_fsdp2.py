"""FSDP2 (torch.distributed.fsdp.fully_shard) of the example GPT on 2 and 3 gloo ranks
(examples/gpt_ddp.py --fsdp2): the all-gathers and reduce-scatters are recorded as
collectives, two identical runs are identical on every rank, and a change on one rank is named
there, the other rank receiving it through a reduce-scatter. Needs torch >= 2.6.

gloo runs a reduce-scatter as an all-reduce of a staged copy of the input and copies this
rank's chunk into the output inside Work.wait(), after the all-reduce's scope has ended: the
reduce-scatter completes at that copy (python/src/collectives.h)."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Dict, Tuple

import pytest

from conftest import PYTHON, REPO, TORCH_VERSION, show_json, upguard

pytestmark = pytest.mark.skipif(TORCH_VERSION < (2, 6),
                                reason="FSDP2 (fully_shard on a CPU mesh) needs torch >= 2.6")

GPT_DIST = REPO / "examples" / "gpt_ddp.py"


def record_fsdp2(run: Path, ranks: int, *args: str) -> Path:
    result = upguard("record", "-o", run, "--", PYTHON, "-m", "torch.distributed.run",
                     f"--nproc_per_node={ranks}", GPT_DIST, "--fsdp2", "--quiet", "--steps", "3",
                     *args, timeout=240)
    assert result.returncode == 0, result.stderr
    return run


def diff(a: Path, b: Path) -> Tuple[int, Dict]:
    result = upguard("diff", a, b, "--json", timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.fixture(scope="module")
def fsdp2_a(runs: Path) -> Path:
    return record_fsdp2(runs / "fsdp2_a", 2)


@pytest.mark.parametrize("ranks", [2, 3])
def test_identical_runs_are_identical_on_every_rank(runs: Path, fsdp2_a: Path, ranks: int):
    a = fsdp2_a if ranks == 2 else record_fsdp2(runs / "fsdp2_3a", 3)
    b = record_fsdp2(runs / f"fsdp2_{ranks}b", ranks)
    code, result = diff(a, b)
    assert (code, result["verdict"]) == (0, "identical")
    assert [r["verdict"] for r in result["ranks"]] == ["identical"] * ranks
    assert all(r["steps_compared"] == 3 for r in result["ranks"])


def test_all_gathers_and_reduce_scatters_are_collectives(fsdp2_a: Path):
    # Measured on 2.15: per step, each of the 3 FSDP units (2 blocks, the root) all-gathers its
    # parameters in forward, the 2 blocks again in backward (the root keeps its unsharded
    # parameters), and reduce-scatters its gradients: the root's after autograd, in "other".
    for rank in (0, 1):
        ops = show_json(fsdp2_a, "--step", "0", "--rank", str(rank))["steps"][0]["ops"]
        kinds = collections.Counter((op["op"], op["phase"]) for op in ops if "collective" in op)
        assert kinds == {("c10d::_allgather_base_", "forward"): 3,
                         ("c10d::_allgather_base_", "backward"): 2,
                         ("c10d::_reduce_scatter_base_", "backward"): 2,
                         ("c10d::_reduce_scatter_base_", "other"): 1}
        assert {tuple(op["collective"]["ranks"]) for op in ops if "collective" in op} == {(0, 1)}
        # Each completed: the all-gathers when their tensors are read, the reduce-scatters at
        # gloo's copy into their output.
        assert all(op["collective"]["completed"] for op in ops if "collective" in op)


def test_change_on_rank_1_is_the_origin(runs: Path, fsdp2_a: Path):
    planted = record_fsdp2(runs / "fsdp2_gelu", 2, "--plant", "gelu-tanh", "--plant-rank", "1")
    code, result = diff(fsdp2_a, planted)
    assert code == 1
    across = result["across_ranks"]
    assert across["origins"] == [1]
    first = {r["rank"]: r for r in across["ranks"]}[1]["first"]
    assert (first["op"], first["module"], first["phase"], first["step"]) == (
        "aten::gelu", "blocks.1.mlp.act", "forward", 2)
    assert result["verdict"] == "culprit"
    # Rank 0 receives it through the first reduce-scatter of the step's backward (blocks.1's
    # gradients), whose inputs matched on rank 0 and differed on rank 1.
    receiver = {r["rank"]: r for r in across["ranks"]}[0]
    assert receiver["role"] == "receiver"
    hop = across["collectives"][receiver["via"]]
    assert (hop["op"], hop["step"], hop["phase"]) == ("c10d::_reduce_scatter_base_", 2, "backward")
    assert hop["senders"] == [1] and hop["receivers"] == [0]

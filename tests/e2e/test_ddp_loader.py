"""DDP fed by a DataLoader: the input pipeline's ops never decide a verdict (trace.md §5.4,
version 5). DataLoader work in the training process is recorded as phase input, and how much of
it comes before an all-reduce depends on when worker batches arrive. The same training with 2
workers and with none records different input ops around the same all-reduces: the runs are
identical, step digests included (version 4 placed collectives by counting input ops, and such
runs were reported not identical, unattributed), and `record --against` compares by position
outside the input pipeline (it stopped such a run at step 0 as structural)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pytest

from conftest import PYTHON, REPO, show_json, upguard

SCRIPT = REPO / "tests" / "e2e" / "ddp_loader.py"


def record(run: Path, workers: int, options: Sequence[str] = (), plant: bool = False,
           expect: int = 0):
    result = upguard("record", "-o", run, *options, "--", PYTHON, "-m", "torch.distributed.run",
                     "--nproc_per_node=2", SCRIPT, "--workers", str(workers),
                     *(["--plant"] if plant else []), timeout=240)
    assert result.returncode == expect, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def with_workers(runs: Path) -> Path:
    record(runs / "loader_w2", 2)
    return runs / "loader_w2"


def test_workers_or_none_are_identical_on_every_rank(runs: Path, with_workers: Path):
    in_process = runs / "loader_w0"
    record(in_process, 0)
    for rank in (0, 1):
        a = show_json(with_workers, "--rank", str(rank))["steps"]
        b = show_json(in_process, "--rank", str(rank))["steps"]
        inputs = [[op["op"] for op in step["ops"] if op["phase"] == "input"] for step in a + b]
        assert inputs[:len(a)] != inputs[len(a):], "the input pipelines should differ"
        reduces = [op for step in a for op in step["ops"] if op["op"] == "c10d::allreduce_"]
        assert reduces and all(op["collective"]["completed"] for op in reduces)
        # The step digests agree wherever both runs ended the step.
        assert [s["digest"] for s in a if s["step"] < 4] == [s["digest"] for s in b
                                                             if s["step"] < 4]
    result = upguard("diff", with_workers, in_process, "--json", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["verdict"] == "identical"
    assert [r["verdict"] for r in verdict["ranks"]] == ["identical", "identical"]


@pytest.fixture(scope="module")
def planted(runs: Path, with_workers: Path):
    """rank 1's other dropout p, recorded with no workers against the run with 2."""
    run = runs / "loader_online_plant"
    return run, record(run, 0, ("--against", str(with_workers)), plant=True, expect=1)


def test_online_check_skips_the_input_pipeline_and_finds_the_planted_rank(runs: Path,
                                                                          with_workers: Path,
                                                                          planted):
    against = ("--against", str(with_workers))
    same = record(runs / "loader_online_w0", 0, against)
    assert "no divergence from" in same.stdout, same.stdout
    out = planted[1].stdout
    assert "rank 1 diverged from" in out, out
    assert "aten::bernoulli_" in out and "culprit" in out, out
    # Then the element-level explanation of rank 1's op: the reference re-run with torchrun.
    assert "explain: re-ran" in out and "/captures/rank1.step0.op" in out, out
    assert "of 1,024 elements differ" in out, out


def test_explain_reruns_torchrun_and_captures_the_divergent_rank(with_workers: Path, planted):
    """`diff --explain` of a torchrun run re-runs the launcher; rank 1 alone captures the op at
    its position in the step (`rank=1`) and stops, and its captures are compared. The reference
    ran with 2 workers, the candidate with none: the op is at the same position, another index
    in the re-runs."""
    result = upguard("diff", with_workers, planted[0], "--explain", "--json", timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    explained = report["explain"]
    assert explained["op"] == "aten::bernoulli_"
    assert "/captures/rank1.step0.op" in explained["a"]["capture"]
    assert "/captures/rank1.step0.op" in explained["b"]["capture"]
    assert explained["not_reproduced"] == []
    for run in (with_workers, planted[0]):
        captured = [path.name for path in (run / "explain" / "captures").iterdir()]
        assert len(captured) == 1 and captured[0].startswith("rank1.step0.op"), captured
    output = explained["outputs"][0]
    assert output["bitwise_equal"] is False and 0 < output["differing"] < 1024

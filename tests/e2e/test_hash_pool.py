"""`upguard record --hash-threads N` (issue 19, part 3): large tensors are digested on upguard's
threads while the training goes on, and an op that writes such a tensor waits for its digest
first. What a user relies on: the trace is the trace recorded without the pool (every op, every
digest: the diff says IDENTICAL with every step identical by its step digest), a planted change
is named at the same op, and the pool did take digests over (meta.json's hash_pool).

Real code: torchvision's ResNet-18 (its 2.4-9.4 MB weights and gradients, BatchNorm's running
statistics written behind the schema, SGD with momentum in place, a DataLoader with workers)
and the DDP GPT under torchrun (its gradient bucket all-reduced in place by c10d)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Dict, Tuple

import pytest

from conftest import BUILD, PYTHON, REPO, TORCH2, upguard

CNN = REPO / "examples" / "cnn_train.py"
DDP = REPO / "examples" / "gpt_ddp.py"


def record(run: Path, command: Tuple[str, ...], threads: int) -> Path:
    flags = ("--hash-threads", str(threads)) if threads else ()
    result = upguard("record", *flags, "-o", run, "--", *command, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "recording stopped" not in result.stderr
    return run


def diff(a: Path, b: Path) -> Tuple[int, Dict]:
    result = upguard("diff", a, b, "--json", timeout=300)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def offloaded(run: Path) -> int:
    meta = json.loads((run / "meta.json").read_text())
    return meta["hash_pool"]["digests"]


def test_resnet18_with_the_pool_is_the_trace_without(tmp_path: Path) -> None:
    command = (PYTHON, str(CNN), "--quiet", "--model", "resnet18", "--steps", "3")
    plain = record(tmp_path / "plain", command, 0)
    pooled = record(tmp_path / "pooled", command, 2)
    assert "hash_pool" not in json.loads((plain / "meta.json").read_text())
    assert offloaded(pooled) >= 100  # the weights, their gradients and momentum buffers
    code, report = diff(plain, pooled)
    rank = report["ranks"][0]
    assert code == 0 and report["verdict"] == "identical", json.dumps(rank)[:2000]
    assert rank["steps_identical"] == rank["steps_compared"] >= 3


def test_a_planted_change_is_named_at_the_same_op_with_the_pool(tmp_path: Path) -> None:
    command = (PYTHON, str(CNN), "--quiet", "--model", "resnet18", "--steps", "2",
               "--workers", "2")  # batches from worker processes
    ref = record(tmp_path / "ref", command, 2)
    run = record(tmp_path / "eps", (*command, "--plant", "bn-eps"), 2)
    code, report = diff(ref, run)
    div = report["ranks"][0]["divergence"]
    assert code == 1 and report["verdict"] == "culprit"
    assert (div["op"], div["module"], div["phase"], div["step"]) == (
        "aten::batch_norm", "bn1", "forward", 0)


@pytest.mark.skipif(not TORCH2, reason="torch.compile needs torch 2.x")
def test_a_compiled_model_with_the_pool_is_the_trace_without(tmp_path: Path) -> None:
    """Compiled graphs write buffers where no op callback sees them: they wait for every
    digest first."""
    command = (PYTHON, str(CNN), "--quiet", "--model", "resnet18", "--steps", "2", "--compile")
    plain = record(tmp_path / "plain", command, 0)
    pooled = record(tmp_path / "pooled", command, 2)
    assert offloaded(pooled) > 0
    code, report = diff(plain, pooled)
    rank = report["ranks"][0]
    assert code == 0 and report["verdict"] == "identical", json.dumps(rank)[:2000]
    assert rank["steps_identical"] == rank["steps_compared"] >= 2


API_SCRIPT = r"""
import runpy, sys
sys.path.insert(0, sys.argv[1])
import upguard
run_dir, threads, script = sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.argv = [script, "--quiet", "--model", "resnet18", "--steps", "2"]
with upguard.record(run_dir, hash_threads=threads):
    runpy.run_path(script, run_name="__main__")
"""


def test_the_python_api_takes_hash_threads(tmp_path: Path) -> None:
    runs = []
    for threads in (0, 2):
        run = tmp_path / f"api{threads}"
        result = subprocess.run([PYTHON, "-c", API_SCRIPT, str(BUILD / "python"), str(run),
                                 str(threads), str(CNN)], capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, result.stderr
        runs.append(run)
    assert offloaded(runs[1]) >= 100
    code, report = diff(*runs)
    rank = report["ranks"][0]
    assert code == 0 and report["verdict"] == "identical", json.dumps(rank)[:2000]
    assert rank["steps_identical"] == rank["steps_compared"] >= 2


def test_ddp_under_torchrun_with_the_pool_is_the_trace_without(tmp_path: Path) -> None:
    command = (PYTHON, "-m", "torch.distributed.run", "--nproc_per_node=2", str(DDP), "--quiet",
               "--steps", "3")
    plain = record(tmp_path / "plain", command, 0)
    pooled = record(tmp_path / "pooled", command, 1)
    assert offloaded(pooled) > 0  # rank 0's gradient bucket, all-reduced in place
    code, report = diff(plain, pooled)
    assert code == 0 and report["verdict"] == "identical"
    for rank in report["ranks"]:
        assert rank["steps_identical"] == rank["steps_compared"] >= 3

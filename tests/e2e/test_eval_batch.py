"""An evaluation loop run with another batch size: the first model call of the loop is where the
runs part ways, and the diff must name it. Run B makes two more model calls than A, each of
more than a thousand ops, so the step's two op streams differ by more than the aligner's
2,048-difference cap; before the work budget (align.h) the whole loop was left unaligned and
not compared, and the diff named the last batch (torch 2.x: data at A's fourth model call;
torch 1.13: structural, then a convolution of the last batch)."""

from __future__ import annotations

from pathlib import Path

from conftest import PYTHON, REPO, diff_json, only_rank, show_json, upguard

SCRIPT = REPO / "tests" / "e2e" / "eval_batch.py"


def record(run: Path, batch: int) -> Path:
    result = upguard("record", "-o", run, "--", PYTHON, SCRIPT,
                     env={"EVAL_BATCH": str(batch)}, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return run


def test_eval_batch_size_is_data_at_the_first_eval_batch(runs: Path):
    a = record(runs / "eval_bs16", 16)
    b = record(runs / "eval_bs12", 12)
    calls = [op for op in show_json(a, "--step", "1")["steps"][0]["ops"]
             if op["op"] == "upguard::batch"]
    assert len(calls) == 4
    code, report = diff_json(a, b)
    assert code == 1
    rank = only_rank(report)
    assert report["verdict"] == "data", report
    assert rank["verdict"] == "data"
    found = rank["divergence"]
    assert (found["op"], found["step"], found["phase"]) == ("upguard::batch", 1, "forward")
    assert found["index"] == calls[0]["index"], "not the first model call of the eval loop"
    batch = found["inputs"][0]
    assert batch["a"]["shape"] == [16, 3, 32, 32] and batch["b"]["shape"] == [12, 3, 32, 32]
    assert rank["structural"]["realigned"] is True
    assert rank["structural_summary"]["unaligned_blocks"] == 0

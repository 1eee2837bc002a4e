"""A module whose forward raises, caught by the program, is popped from the module stack: the
ops after it carry their own module paths, and every later step's batch is recorded, so a
data difference after the exception is still a data verdict (raising_train.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import PYTHON, diff_json, show_json, upguard

SCRIPT = Path(__file__).parent / "raising_train.py"
RAISE_STEP = 2
STEPS = 5


def record_raising(run_dir: Path, *args: str) -> Path:
    result = upguard("record", "-o", run_dir, "--", PYTHON, SCRIPT, "--steps", str(STEPS),
                     "--raise-step", str(RAISE_STEP), *args)
    assert result.returncode == 0, result.stderr
    return run_dir


def ops_by_step(run: Path) -> Dict[int, List[Dict]]:
    return {step["step"]: step["ops"] for step in show_json(run)["steps"]}


def placement(ops: List[Dict]) -> List[Tuple[str, str, str]]:
    """Each op's name, phase and module path, the model's batch left out."""
    return [(op["op"], op["phase"], op["module"]) for op in ops if op["op"] != "upguard::batch"]


@pytest.mark.parametrize("where", ["inner", "outer"])
def test_ops_after_a_raising_forward_have_their_own_modules(runs, where):
    steps = ops_by_step(record_raising(runs / f"raising_{where}", "--raise-where", where))
    assert sorted(steps) == list(range(STEPS))
    for step, ops in steps.items():
        batches = [op for op in ops if op["op"] == "upguard::batch"]
        # The outer plant calls the model twice in its step: the call that raised, then again.
        expected = 2 if where == "outer" and step == RAISE_STEP else 1
        assert len(batches) == expected, f"step {step}"
    # The steps after the exception run what the step before it ran, in the same modules.
    for step in range(RAISE_STEP + 1, STEPS):
        assert placement(steps[step]) == placement(steps[RAISE_STEP - 1]), f"step {step}"
    loss = [op for op in steps[STEPS - 1] if op["op"] == "aten::mse_loss"]
    assert [op["module"] for op in loss] == [""]
    if where == "inner":  # Net's fallback after catching the error is Net's own op
        tanh = [op for op in steps[RAISE_STEP] if op["op"] == "aten::tanh"]
        assert [(op["phase"], op["module"]) for op in tanh] == [("forward", "")]


def test_a_batch_after_a_raising_forward_is_a_data_verdict(runs):
    a = record_raising(runs / "raising_data_a")
    b = record_raising(runs / "raising_data_b", "--shift-step", str(RAISE_STEP + 1))
    code, report = diff_json(a, b)
    assert code == 1 and report["verdict"] == "data"
    (rank,) = report["ranks"]
    d = rank["divergence"]
    assert (d["op"], d["step"]) == ("upguard::batch", RAISE_STEP + 1)
    assert rank["setup"].startswith(f"input batch differs at step {RAISE_STEP + 1} (args[0] of")

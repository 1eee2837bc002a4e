"""An op's phase is what it does, not what it runs inside (issue 37 part 2). A closure's forward
and backward run inside optimizer.step(closure) (LBFGS; Lightning's automatic optimization):
they are phase forward and backward, and only the optimizer's own ops are optimizer.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

from conftest import PYTHON, show_json, upguard

HERE = Path(__file__).parent
# The ops a step of closure_train.py's model runs in its forward and loss.
FORWARD = {"aten::linear": {"0", "2"}, "aten::tanh": {"1"}, "aten::mse_loss": {""}}


def record_script(run_dir: Path, script: str, *args: str) -> Path:
    result = upguard("record", "-o", run_dir, "--", PYTHON, HERE / script, *args)
    assert result.returncode == 0, result.stderr
    return run_dir


def top_level_ops(run: Path) -> Dict[int, List[Tuple[str, str, str]]]:
    """Per step, each top-level op's (name, phase, module), upguard's own pseudo-ops left out."""
    return {step["step"]: [(op["op"], op["phase"], op["module"]) for op in step["ops"]
                           if not op["op"].startswith("upguard::")]
            for step in show_json(run, "--max-depth", "0")["steps"]}


def phases_of(ops: List[Tuple[str, str, str]]) -> Dict[str, Set[Tuple[str, str]]]:
    found: Dict[str, Set[Tuple[str, str]]] = defaultdict(set)
    for name, phase, module in ops:
        found[name].add((phase, module))
    return found


def check_closure_step(ops: List[Tuple[str, str, str]], prefix: str = "") -> None:
    """The forward ops and the loss are forward in their modules (under `prefix`), the loss's
    backward is backward, and what is left inside Optimizer.step is the optimizer's own, outside
    modules."""
    found = phases_of(ops)
    for name, modules in FORWARD.items():
        expected = {("forward", prefix + module if module else "") for module in modules}
        assert found[name] == expected, name
    assert found["aten::mse_loss_backward"] == {("backward", "")}
    update = [name for name, phase, module in ops if phase == "optimizer"]
    assert update and not set(update) & set(FORWARD)
    assert all(module == "" for _, phase, module in ops if phase == "optimizer")


def test_a_plain_loop_keeps_its_phases(runs):
    steps = top_level_ops(record_script(runs / "closure_sgd", "closure_train.py", "--optim", "sgd"))
    assert sorted(steps) == [0, 1]
    for ops in steps.values():
        check_closure_step(ops)
        # forward, backward, then SGD's update of the four parameters, in that order
        phases = [phase for _, phase, _ in ops if phase != "other"]
        assert phases == sorted(phases, key=["forward", "backward", "optimizer"].index)
        assert [name for name, phase, _ in ops if phase == "optimizer"].count("aten::add_") == 4


def test_lbfgs_closure_calls_are_forward_and_backward(runs):
    steps = top_level_ops(record_script(runs / "closure_lbfgs", "closure_train.py",
                                        "--optim", "lbfgs"))
    assert sorted(steps) == [0, 1]
    for ops in steps.values():
        check_closure_step(ops)
        # The closure ran several times in the step, each time forward then backward, with the
        # optimizer's line search between.
        calls = [name for name, _, _ in ops if name == "aten::mse_loss"]
        assert len(calls) >= 2
        assert len([name for name, _, _ in ops if name == "aten::mse_loss_backward"]) == len(calls)
        assert {"aten::cat", "aten::dot"} <= {name for name, phase, _ in ops
                                              if phase == "optimizer"}

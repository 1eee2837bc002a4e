"""An op's phase is what it does, not what it runs inside, and module paths are named from the
model the user built (issue 37 part 2). A closure's forward and backward run inside
optimizer.step(closure) (LBFGS; Lightning's automatic optimization): they are phase forward and
backward, and only the optimizer's own ops are optimizer. A LightningModule never runs its own
forward (training_step calls self.net): the paths are still "net.2", the tensors "net.0.weight".
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

from conftest import PYTHON, diff_json, only_rank, show_json, upguard

HERE = Path(__file__).parent
# The ops a step of closure_train.py's model runs in its forward and loss.
FORWARD = {"aten::linear": {"0", "2"}, "aten::tanh": {"1"}, "aten::mse_loss": {""}}


def has_lightning() -> bool:
    """Whether the interpreter under test has Lightning (the torch 2.x venv's pins)."""
    code = "import importlib.util, sys; sys.exit(importlib.util.find_spec('lightning') is None)"
    return subprocess.run([PYTHON, "-c", code], check=False).returncode == 0


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


def linear_labels(run: Path) -> List[str]:
    """The names of the weight and bias the step's first aten::linear reads."""
    ops = show_json(run, "--step", "0", "--max-depth", "0")["steps"][0]["ops"]
    linear = next(op for op in ops if op["op"] == "aten::linear")
    return [arg.get("label") for arg in linear["inputs"][1:]]


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


@pytest.mark.parametrize("task", [False, True], ids=["model", "task"])
def test_lbfgs_closure_calls_are_forward_and_backward(runs, task):
    run = record_script(runs / f"closure_lbfgs_{task}", "closure_train.py", "--optim", "lbfgs",
                        *(["--task"] if task else []))
    steps = top_level_ops(run)
    assert sorted(steps) == [0, 1]
    for ops in steps.values():
        # With --task, paths are named from the Task whose own forward never runs.
        check_closure_step(ops, "net." if task else "")
        # The closure ran several times in the step, each time forward then backward, with the
        # optimizer's line search between.
        calls = [name for name, _, _ in ops if name == "aten::mse_loss"]
        assert len(calls) >= 2
        assert len([name for name, _, _ in ops if name == "aten::mse_loss_backward"]) == len(calls)
        assert {"aten::cat", "aten::dot"} <= {name for name, phase, _ in ops
                                              if phase == "optimizer"}
    assert linear_labels(run) == (["net.0.weight", "net.0.bias"] if task
                                  else ["0.weight", "0.bias"])


def test_lightning_dropout_is_named_in_forward_under_net(runs):
    if not has_lightning():
        pytest.skip(f"{PYTHON} has no Lightning (installed in the torch 2.x venv only)")
    a = record_script(runs / "lightning_a", "lightning_train.py", "--p", "0.1")
    b = record_script(runs / "lightning_b", "lightning_train.py", "--p", "0.2")
    code, report = diff_json(a, b)
    assert code == 1 and report["verdict"] == "culprit"
    d = only_rank(report)["divergence"]
    assert (d["op"], d["phase"], d["module"], d["step"]) == ("aten::bernoulli_", "forward",
                                                            "net.2", 0)
    steps = top_level_ops(a)
    for step in (0, 1):  # the two training steps; step 2 is the Trainer's teardown
        found = phases_of(steps[step])
        assert found["aten::linear"] == {("forward", "net.0"), ("forward", "net.3")}
        assert found["aten::dropout"] == {("forward", "net.2")}
        assert found["aten::mse_loss"] == {("forward", "")}
        assert found["aten::mse_loss_backward"] == {("backward", "")}
        assert {phase for name, phase, _ in steps[step] if name == "aten::add_"} == {"optimizer"}
    assert linear_labels(a) == ["net.0.weight", "net.0.bias"]  # named as the user built it

"""Issue 11 part 4: each recorded step ends with the model's state (upguard::state) — every
parameter, buffer and optimizer-state tensor, hashed afresh and named as the model names it —
so a difference that no op's output shows still surfaces at the step where it was born."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import BUILD, PYTHON, REPO, TRAIN, upguard

CNN = REPO / "examples" / "cnn_train.py"


def record(run_dir: Path, script: Path, *args: str) -> Path:
    result = upguard("record", "-o", run_dir, "--", PYTHON, script, "--quiet", *args, timeout=600)
    assert result.returncode == 0, result.stderr
    return run_dir


def diff(a: Path, b: Path) -> Dict:
    result = upguard("diff", a, b, "--json")
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert (result.returncode == 0) == (report["verdict"] == "identical")
    return report


def state_ops(run: Path) -> List[Dict]:
    result = upguard("show", run, "--json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    return [dict(op, step=step["step"]) for step in shown["steps"] for op in step["ops"]
            if op["op"] == "upguard::state"]


@pytest.fixture(scope="module")
def cnn_ref(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("state") / "ref", CNN, "--steps", "3")


def test_every_step_ends_with_the_named_model_state(cnn_ref: Path) -> None:
    ops = state_ops(cnn_ref)
    assert [op["step"] for op in ops] == [0, 1, 2]
    for op in ops:
        assert op["index"] == max(o["index"] for o in ops if o["step"] == op["step"])
    names = [arg["name"] for arg in ops[0]["inputs"]]
    # Parameters, then buffers, then SGD's momentum buffers, named as the model names them.
    assert names[:2] == ["conv1.weight", "bn1.weight"]
    for buffer in ("bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked",
                   "inorm.running_mean", "inorm.running_var"):
        assert buffer in names
    assert "momentum_buffer of conv1.weight" in names and "momentum_buffer of fc.bias" in names
    assert not any(name.endswith(".grad") for name in names)  # gradients are not state
    assert all(arg["kind"] == "tensor" for arg in ops[0]["inputs"])


def test_memory_written_outside_pytorch_is_a_state_verdict(cnn_ref: Path, tmp_path: Path) -> None:
    """bn1.running_var changed through numpy before optimizer.step at step 1: no op shows it."""
    again = record(tmp_path / "again", CNN, "--steps", "3")
    assert diff(cnn_ref, again)["verdict"] == "identical"
    planted = record(tmp_path / "numpy", CNN, "--steps", "3", "--plant", "buffer-numpy",
                     "--plant-step", "1")
    report = diff(cnn_ref, planted)
    rank = report["ranks"][0]
    assert report["verdict"] == "state" and rank["verdict"] == "state"
    assert rank["state_differs"] == ["bn1.running_var"]
    assert rank["divergence"]["op"] == "upguard::state" and rank["divergence"]["step"] == 1
    assert rank["setup"].startswith("model state differs at the end of step 1: bn1.running_var")
    text = upguard("diff", cnn_ref, planted).stdout
    assert "STATE  model state differs at the end of step 1: bn1.running_var" in text
    assert "result: state" in text
    # --explain captures the state in both runs: the one element numpy changed, by +0.5.
    explained = upguard("diff", cnn_ref, planted, "--explain", timeout=600)
    assert explained.returncode == 1, explained.stderr
    line = next(line for line in explained.stdout.splitlines() if "(bn1.running_var)" in line)
    assert "1 of 16 elements differ" in line and "first at [0]" in line, line
    assert "max abs error 0.5" in line, line


def test_adam_state_is_named_after_its_parameter(tmp_path: Path) -> None:
    run = record(tmp_path / "gpt", TRAIN, "--steps", "2")
    ops = state_ops(run)
    assert [op["step"] for op in ops] == [0, 1]
    names = {arg["name"] for arg in ops[1]["inputs"]}
    for param in ("tok_emb.weight", "blocks.0.attn.qkv.weight"):
        assert param in names
        for key in ("step", "exp_avg", "exp_avg_sq"):
            assert f"{key} of {param}" in names


def test_optimizer_ops_name_the_tensors_they_touch(tmp_path: Path) -> None:
    """Part 9, the issue's case: another learning-rate warm-up. The verdict is an optimizer op
    whose argument differs; it names the parameter it updates, in text and JSON."""
    ref = record(tmp_path / "ref", TRAIN, "--steps", "2")
    warm = record(tmp_path / "warm", TRAIN, "--steps", "2", "--plant", "lr-warmup",
                  "--plant-step", "1")
    report = diff(ref, warm)
    div = report["ranks"][0]["divergence"]
    assert report["verdict"] == "culprit"
    assert (div["op"], div["phase"], div["step"]) == ("aten::mul_", "optimizer", 1)
    assert div["inputs"][0]["a"]["label"] == "tok_emb.weight"
    assert div["inputs"][0]["b"]["label"] == "tok_emb.weight"
    assert div["outputs"][0]["a"]["label"] == "tok_emb.weight"
    text = upguard("diff", ref, warm).stdout
    assert "module     -  (on tok_emb.weight)" in text
    assert "is tok_emb.weight" in text
    # Every step names gradients and AdamW's state, step 0 included (state the optimizer makes
    # in its first step is named once it holds it).
    shown = json.loads(upguard("show", ref, "--json", "--step", "0").stdout)
    labels = {arg.get("label") for op in shown["steps"][0]["ops"] if op["phase"] == "optimizer"
              for arg in op["inputs"] + op["outputs"]}
    for name in ("blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.weight.grad",
                 "exp_avg of blocks.0.attn.qkv.weight", "exp_avg_sq of blocks.0.attn.qkv.weight"):
        assert name in labels, name
    # Forward ops name the parameters they read.
    forward = {arg.get("label") for op in shown["steps"][0]["ops"] if op["phase"] == "forward"
               for arg in op["inputs"]}
    assert "blocks.0.attn.qkv.weight" in forward and "tok_emb.weight" in forward


def test_the_kept_walk_of_the_modules_names_what_a_fresh_walk_names() -> None:
    """upguard._state keeps its walk of the module tree between steps (the fingerprint's cost):
    after weights are tied and untied, a submodule and a parameter replaced, a buffer added, a
    module's children reordered and an optimizer's parameter group added (the walk keeps the
    names it makes from step to step, and makes them again where they change), it still reads
    exactly the tensors, names and order of named_parameters()/named_buffers()."""
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    result = subprocess.run([PYTHON, str(REPO / "tests" / "e2e" / "state_walk.py")], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    counts = dict(line.split()[1:] for line in result.stdout.splitlines()
                  if line.startswith("STEP "))
    assert set(counts) == {f"step{s}" for s in range(9)} | {
        "tied", "new-fc", "new-conv1-weight", "new-buffer", "untied", "reordered", "new-group"}
    assert int(counts["untied"]) == int(counts["step5"]) + 1  # the head's own weight again
    assert int(counts["new-group"]) == int(counts["step7"]) + 2  # the parameter and its grad
    assert int(counts["step8"]) == int(counts["new-group"]) + 3  # and AdamW's state of it

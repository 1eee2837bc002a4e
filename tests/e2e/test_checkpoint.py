"""Activation checkpointing (torch.utils.checkpoint, both flavours; trace v4 phase recompute).

The example GPT runs each block's forward under torch.utils.checkpoint (gpt_train.py
--checkpoint): the block's forward runs again in backward. Those ops are phase `recompute`,
carry the module whose forward runs again, never make two identical runs differ, and a change
planted inside a checkpointed block is named at its forward op.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import pytest

from conftest import MODEL, diff_json, line_of, only_rank, record, show_json

STEPS = ("--steps", "3")  # the plant starts at step 2
FLAVOURS = ("non-reentrant", "reentrant")

_RUNS: Dict[str, Path] = {}


def run(runs: Path, name: str, *train_args: str) -> Path:
    """`name` recorded once per session."""
    if name not in _RUNS:
        _RUNS[name] = record(runs / name, *STEPS, *train_args)
    return _RUNS[name]


def ops_of(run_dir: Path, step: int) -> List[Dict]:
    report = show_json(run_dir, "--step", str(step))
    return report["steps"][0]["ops"]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_identical_runs_with_checkpointing_are_identical(runs, flavour):
    a = run(runs, f"ckpt_{flavour}_a", "--checkpoint", flavour)
    b = run(runs, f"ckpt_{flavour}_b", "--checkpoint", flavour)
    code, report = diff_json(a, b)
    assert (code, report["verdict"]) == (0, "identical")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_recomputed_ops_are_marked_with_their_forward_module(runs, flavour):
    ops = ops_of(run(runs, f"ckpt_{flavour}_a", "--checkpoint", flavour), 0)
    recomputed = [op for op in ops if op["phase"] == "recompute"]
    assert recomputed, "no op of phase recompute"
    # The forward of blocks.1's MLP runs again in backward: its GELU, with the GELU's module
    # and the user's line, not the module of the backward node that needed it.
    gelus = [op for op in recomputed if op["op"] == "aten::gelu"]
    assert [op["module"] for op in gelus] == ["blocks.1.mlp.act", "blocks.0.mlp.act"]
    site = f"examples/gpt.py:{line_of(MODEL, 'h = self.act(self.fc(x))')}"
    assert all(op["call_site"] == site and op["depth"] == 0 for op in gelus)
    # Every recompute op is in a block and names no autograd node; one the block's code calls
    # (depth 0) repeats an op the forward ran in the same module (the non-reentrant flavour of
    # torch 2.x stops once it has what the node needs: a prefix of the block). Nested ones
    # include the checkpoint's own (2.x: `detach` of what it saves for the node).
    forward = {(op["op"], op["module"]) for op in ops if op["phase"] == "forward"}
    for op in recomputed:
        assert op["module"].startswith("blocks."), op
        assert op["autograd_node"] == "", op
        assert op["depth"] > 0 or (op["op"], op["module"]) in forward, op
    # It is no new model call: the batch is recorded once, in the forward.
    assert [op["phase"] for op in ops if op["op"] == "upguard::batch"] == ["forward"]
    # The backward after it is backward again, with the module of the forward op (for the
    # reentrant flavour, whose forward ran without autograd, the recomputed op's).
    gelu_backward = [op for op in ops if op["op"] == "aten::gelu_backward"]
    assert [(op["phase"], op["module"]) for op in gelu_backward] == [
        ("backward", "blocks.1.mlp.act"), ("backward", "blocks.0.mlp.act")]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_change_inside_a_checkpointed_block_is_named_in_its_forward(runs, flavour):
    a = run(runs, f"ckpt_{flavour}_a", "--checkpoint", flavour)
    b = run(runs, f"ckpt_{flavour}_gelu_tanh", "--checkpoint", flavour, "--plant", "gelu-tanh")
    code, report = diff_json(a, b)
    assert (code, report["verdict"]) == (1, "culprit")
    d = only_rank(report)["divergence"]
    assert (d["op"], d["module"], d["phase"], d["step"]) == (
        "aten::gelu", "blocks.1.mlp.act", "forward", 2)


def test_checkpointing_in_one_run_only_is_structural_recompute(runs):
    a = run(runs, "ckpt_none")
    b = run(runs, "ckpt_non-reentrant_a", "--checkpoint", "non-reentrant")
    code, report = diff_json(a, b)
    assert (code, report["verdict"]) == (1, "structural")
    block = only_rank(report)["structural"]
    assert block["only_a"] == []
    assert block["only_b"] and {op["phase"] for op in block["only_b"]} == {"recompute"}

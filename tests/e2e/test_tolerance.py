"""Tolerances on the example GPT: one intra-op thread against two. The runs part ways in the
first backward (aten::native_layer_norm_backward reduces in another order, and the scratch
buffer it resizes has another shape), and from there every later value differs by rounding.
Bitwise, that is a culprit at once; these tests measure what a tolerance makes of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Tuple

import pytest

from conftest import TORCH2, TRAIN, line_of, record, upguard

# Measured on each torch. The op stream differs between them (1.13 runs bmm as a loop of
# selects and as_strided, 2.x calls one batched gemm; 2.x's clip_grad_norm_ calls
# linalg_vector_norm), so the indices and counts do; what the tests check does not.
# `ops`: ops of the 4 steps that differ; `ops_3`: those of steps 0..2; `follows`: the ops that
# differ after the layer norm backward; `rel_1e_5`: the first op beyond rel:1e-5 (its step,
# index, phase, module, and the inputs whose statistics and elements pass).
LN = 557 if TORCH2 else 1719  # the first backward's aten::resize_ in ln_f's layer norm
MEASURED = {
    "ops": 1699 if TORCH2 else 1929,
    "ops_3": 1612 if TORCH2 else 1322,
    "follows": 1507 if TORCH2 else 1543,
    "first_follows": ("aten::linalg_vector_norm", 0, 1067) if TORCH2 else ("aten::norm", 0, 4285),
    # 2.x: the attention's bmm stays within rel:1e-5 to the end; Adam's update of a parameter
    # whose elements drifted is the first beyond it.
    "rel_1e_5": (("aten::addcdiv_", 3, 1688, "optimizer", ""), ["within"] * 3 + [None],
                 [False, True, True]) if TORCH2 else
                (("aten::bmm", 3, 383, "forward", "blocks.0.attn"), ["within", "within"],
                 [False, False]),
}


# How many ops torch 2.x's kernels make differ, and by how much, depends on the CPU they run on
# (the same torch 2.15.0 wheel on two AMD EPYC machines with AVX-512: 1699 ops and a first op
# beyond rel:1e-5 at Adam's step 3 on one, 1703 ops and none beyond rel:1e-5 in 4 steps on the
# other). The counts and that op are pinned for Debian's 1.13 only; on 2.x the tests check what
# holds on any CPU: where the difference starts, the verdicts, and how the reports agree.
EXACT = not TORCH2


@pytest.fixture(scope="module")
def thread_runs(runs: Path, reference: Path) -> Tuple[Path, Path]:
    return reference, record(runs / "threads2_tolerance", "--threads", "2")  # reference: 1


def diff(runs: Tuple[Path, Path], *args: str) -> Tuple[int, Dict]:
    result = upguard("diff", *runs, "--json", *args)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def only_rank(report: Dict) -> Dict:
    assert len(report["ranks"]) == 1
    return report["ranks"][0]


def test_bitwise_the_first_backward_layer_norm_is_the_culprit(thread_runs):
    code, report = diff(thread_runs)
    assert code == 1 and report["verdict"] == "culprit"
    d = only_rank(report)["divergence"]
    assert (d["op"], d["step"], d["index"], d["module"]) == ("aten::resize_", 0, LN, "ln_f")
    assert d["enclosing"] == ["aten::native_layer_norm_backward"]
    assert "tolerance" not in report and "tolerance" not in only_rank(report)


def test_rel_1e_4_abs_1e_9_makes_all_four_steps_equal(thread_runs):
    # Measured: every op of the 4 steps that differs passes rel:1e-4,abs:1e-9 on its
    # statistics. The abs part is needed: Adam's squared-gradient average has elements near
    # 1e-15 whose relative error is about 1e-4.
    code, report = diff(thread_runs, "--tolerance", "rel:1e-4,abs:1e-9")
    assert code == 0 and report["verdict"] == "identical"
    assert report["tolerance"] == "default rel:0.0001,abs:1e-09"
    rank = only_rank(report)
    assert rank["steps_compared"] == 4 and rank["divergence"] is None
    t = rank["tolerance"]
    # The ops that differ, and the model state at each of the 4 steps' ends.
    assert (t["allowed_ops"], t["follows_ops"]) == (0, 0)
    assert t["within_ops"] == MEASURED["ops"] + 4 if EXACT else t["within_ops"] > 1000
    first = t["first_within"]
    assert (first["op"], first["step"], first["index"], first["module"], first["tolerance"]) == (
        "aten::native_layer_norm_backward", 0, LN + 2, "ln_f", "rel:0.0001,abs:1e-09")


def beyond_rel_1e_5(thread_runs, *args: str) -> Tuple[int, Dict]:
    code, report = diff(thread_runs, "--tolerance", "rel:1e-5,abs:1e-9", *args)
    if not EXACT and code == 0:
        pytest.skip("this CPU's kernels keep 2 threads within rel:1e-5 of 1 for the 4 steps")
    return code, report


def test_rel_1e_5_is_exceeded_first_in_step_3(thread_runs):
    code, report = beyond_rel_1e_5(thread_runs)
    assert code == 1 and report["verdict"] == "culprit"
    rank = only_rank(report)
    d = rank["divergence"]
    assert d["tolerance"] == "rel:1e-05,abs:1e-09"
    assert [slot["tolerated"] for slot in d["outputs"]] == ["beyond"]
    assert d["step"] > 0  # the layer norm backward of step 0 itself stays within it
    if not EXACT:
        return
    assert rank["tolerance"]["within_ops"] == MEASURED["ops_3"] + 3  # the state ending steps 0..2
    where, inputs, _ = MEASURED["rel_1e_5"]
    assert (d["op"], d["step"], d["index"], d["phase"], d["module"]) == where
    assert [slot.get("tolerated") for slot in d["inputs"]] == inputs  # none for a scalar


def test_explain_judges_the_elements_which_the_statistics_could_not(thread_runs):
    # The op's first input passes rel:1e-5 on its statistics, but element by element it does
    # not: statistics are necessary for a tolerance, not sufficient.
    code, report = beyond_rel_1e_5(thread_runs, "--explain")
    assert code == 1
    e = report["explain"]
    assert e["op"] == only_rank(report)["divergence"]["op"]
    assert e["tolerance"] == "rel:1e-05,abs:1e-09"
    assert [t["within_tolerance"] for t in e["outputs"]] == [False]
    if EXACT:
        _, _, elements = MEASURED["rel_1e_5"]
        assert [t["within_tolerance"] for t in e["inputs"]] == elements
    assert e["headline"].endswith("beyond tolerance rel:1e-05,abs:1e-09")


def test_allowing_the_layer_norm_backward_explains_every_difference(thread_runs):
    # Bitwise, but native_layer_norm_backward may differ: it (and the scratch ops nested in it)
    # is listed, every other difference of the 4 steps follows from it, and the runs are
    # identical up to that.
    code, report = diff(thread_runs, "--allow-nondeterministic",
                        "aten::native_layer_norm_backward")
    assert code == 0 and report["verdict"] == "identical"
    assert report["tolerance"] == (
        "default bitwise; nondeterministic aten::native_layer_norm_backward")
    t = only_rank(report)["tolerance"]
    # The model state at the 4 steps' ends follows from the allowed ops too.
    assert (t["within_ops"], t["allowed_ops"]) == (0, 45)
    assert t["follows_ops"] == MEASURED["follows"] + 4 if EXACT else t["follows_ops"] > 1000
    assert [(op["op"], op["step"], op["index"]) for op in t["allowed"][:3]] == [
        ("aten::resize_", 0, LN), ("aten::zero_", 0, LN + 1),
        ("aten::native_layer_norm_backward", 0, LN + 2)]
    follows = t["first_follows"]
    assert (follows["op"], follows["step"], follows["index"], follows["follows"]) == (
        *MEASURED["first_follows"], True)
    site = f"examples/gpt_train.py:{line_of(TRAIN, 'clip_grad_norm_')}"
    assert follows["call_site"].endswith(site)

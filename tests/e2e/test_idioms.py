"""torch 2.x training idioms on the example GPT (examples/gpt_train.py flags), each measured:
two identical runs are IDENTICAL, and one planted change is named at the exact op, module,
phase and step. The idioms torch 1.13 already has (foreach AdamW, bf16 autocast on the CPU,
global module hooks) run on both torches; the others are skipped on 1.13 with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from conftest import TORCH_VERSION, diff_json, record, show_json

GELU = ("culprit", "aten::gelu", "blocks.1.mlp.act", "forward", 2)

# name: (train args, plant, expected (verdict, op, module, phase, step), torch it needs)
CASES: Dict[str, Tuple[List[str], str, Tuple, Tuple[int, int]]] = {
    "sdpa": (["--sdpa"], "gelu-tanh", GELU, (2, 0)),
    "autocast-bf16": (["--autocast", "bf16"], "gelu-tanh", GELU, (1, 10)),
    "bf16-params": (["--dtype", "bf16"], "gelu-tanh", GELU, (1, 10)),
    "module-hooks": (["--module-hooks"], "gelu-tanh", GELU, (1, 13)),
    "adamw-foreach": (["--adamw", "foreach"], "adamw-eps",
                      ("culprit", "aten::_foreach_add_", "", "optimizer", 2), (2, 0)),
    # AdamW(fused=True) runs on the CPU from torch 2.4 on.
    "adamw-fused": (["--adamw", "fused"], "adamw-eps",
                    ("culprit", "aten::_fused_adamw_", "", "optimizer", 2), (2, 4)),
}

_RUNS: Dict[Tuple[str, str], Path] = {}


def run(runs: Path, case: str, which: str) -> Path:
    """Run `which` (a, b: identical; planted) of `case`, recorded once per session."""
    args, plant, _, needs = CASES[case]
    if TORCH_VERSION < needs:
        pytest.skip(f"{case} needs torch {needs[0]}.{needs[1]}; this is "
                    f"{TORCH_VERSION[0]}.{TORCH_VERSION[1]}")
    key = (case, which)
    if key not in _RUNS:
        extra = ["--plant", plant] if which == "planted" else []
        _RUNS[key] = record(runs / f"idiom_{case}_{which}", "--steps", "3", *args, *extra)
    return _RUNS[key]


def divergence(report: Dict) -> Optional[Dict]:
    assert len(report["ranks"]) == 1
    return report["ranks"][0]["divergence"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_identical_runs_are_identical(runs, case):
    code, report = diff_json(run(runs, case, "a"), run(runs, case, "b"))
    assert (code, report["verdict"]) == (0, "identical")
    assert report["ranks"][0]["steps_compared"] == 3


@pytest.mark.parametrize("case", sorted(CASES))
def test_planted_change_is_named(runs, case):
    code, report = diff_json(run(runs, case, "a"), run(runs, case, "planted"))
    d = divergence(report)
    assert code == 1
    assert (report["verdict"], d["op"], d["module"], d["phase"], d["step"]) == CASES[case][2]


def ops_of_step(run_dir: Path, step: int) -> List[Dict]:
    return show_json(run_dir, "--step", str(step))["steps"][0]["ops"]


def test_sdpa_is_recorded_in_its_module(runs):
    ops = ops_of_step(run(runs, "sdpa", "a"), 0)
    sdpa = [(op["module"], op["phase"], op["depth"]) for op in ops
            if op["op"] == "aten::scaled_dot_product_attention"]
    assert sdpa == [("blocks.0.attn", "forward", 0), ("blocks.1.attn", "forward", 0)]


def test_autocast_casts_are_recorded(runs):
    # Autocast casts each linear's float32 input, weight and bias to bfloat16 inside it.
    ops = ops_of_step(run(runs, "autocast-bf16", "a"), 0)
    casts = [op for op in ops if op["op"] == "aten::_to_copy"
             and op["module"] == "blocks.0.attn.qkv" and op["phase"] == "forward"]
    assert [cast["outputs"][0]["dtype"] for cast in casts] == ["bfloat16"] * len(casts)
    assert sorted(cast["outputs"][0]["shape"] for cast in casts) == [[8, 32, 64], [192], [192, 64]]


def slot(slots: List[Dict], name: str) -> Dict:
    return next(s for s in slots if s["name"] == name)


def test_foreach_adamw_names_each_parameter(runs):
    # _foreach_add_(exp_avg_sq_sqrt, eps): the list is AdamW's temporaries, each element named
    # after the parameter it belongs to (list_labels.h).
    _, report = diff_json(run(runs, "adamw-foreach", "a"), run(runs, "adamw-foreach", "planted"))
    d = divergence(report)
    first = slot(d["outputs"], "self[0]")
    assert first["equal"] is False
    assert (first["a"]["label"], first["b"]["label"]) == ("for tok_emb.weight",) * 2
    assert slot(d["outputs"], "self[2]")["a"]["label"] == "for blocks.0.ln1.weight"
    scalar = slot(d["inputs"], "scalar")
    assert (scalar["a"]["text"], scalar["b"]["text"]) == ("1e-08", "9.9999999999999995e-08")


def test_fused_adamw_names_each_parameter(runs):
    _, report = diff_json(run(runs, "adamw-fused", "a"), run(runs, "adamw-fused", "planted"))
    d = divergence(report)
    first = slot(d["outputs"], "self[0]")
    assert first["equal"] is False and first["a"]["label"] == "tok_emb.weight"
    eps = slot(d["inputs"], "eps")
    assert (eps["a"]["text"], eps["b"]["text"]) == ("1e-08", "9.9999999999999995e-08")

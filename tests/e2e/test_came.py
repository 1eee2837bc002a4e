"""upguard.optim.CAME (issue 17): the authors' numbers, reproducibility, the state_dict, the
corner cases, and `upguard record` seeing its step as one op per parameter tensor."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import BUILD, PYTHON, TRAIN, diff_json, line_of, only_rank, record, show_json

CASES = Path(__file__).parent / "came_cases.py"

# What the authors' implementation printed (tests/data/came/README.md): sums of p0, p1, p2.
PRINTED = {1: [+3.863416016e-01, +6.361593911e-02, +1.018139925e-01],
           2: [+5.104701996e-01, +6.113619683e-02, +3.519880632e-02],
           10: [-7.466029315e-01, +3.778692102e-02, -1.200689597e-01],
           20: [-2.959952867e-01, -1.851104130e-02, -1.504153494e-01]}
BUGGY_1D_SUM = +4.935638711e-02  # the older release scaled 1-D momentum by lr


def case(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(BUILD / "python")}
    result = subprocess.run([PYTHON, str(CASES), *args], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_matches_the_authors_implementation():
    for threads in ("1", "2"):
        result = case("reference", threads)
        assert result["max_relative_error"] <= 1e-6, result  # measured: 0 (the same bits)
        assert result["same_bits"] == result["values"] == 2592
        for step, sums in PRINTED.items():
            for ours, printed in zip(result["sums"][str(step)], sums):
                assert abs(ours - printed) <= 5e-10 + 1e-9 * abs(printed), (step, ours, printed)
        assert abs(result["sums"]["20"][1] - BUGGY_1D_SUM) > 1e-2  # the 1-D regression


def test_bitwise_across_thread_counts_and_runs():
    one, two, again = case("threads", "1"), case("threads", "2"), case("threads", "2")
    assert (one["threads"], two["threads"]) == (1, 2)
    assert one["digest"] == two["digest"] == again["digest"]


def test_state_dict_round_trip_continues_bitwise():
    result = case("roundtrip")
    for name in ("float32", "bf16_master"):
        assert result[name]["same_bits"], name
        assert result[name]["state_dtypes"] == ["torch.float32"], name  # not cast to bfloat16
        assert result[name]["lrs"] == [3e-3, 1e-3], name  # the groups' own
    assert "master" in result["bf16_master"]["keys"]
    assert result["float32"]["keys"] == ["exp_avg", "exp_avg_res_col", "exp_avg_res_row",
                                         "exp_avg_sq_col", "exp_avg_sq_row", "step"]


def test_channels_last_weight_steps_as_a_contiguous_one():
    assert case("layouts") == {"channels_last": True, "same": True}


def test_sparse_gradient_is_a_clear_error():
    assert case("sparse")["error"].startswith("CAME does not support sparse gradients")


def test_bfloat16_small_updates_need_master_weights_or_stochastic_rounding():
    result = case("bf16")
    nearest, master, stochastic = result["nearest"], result["master"], result["stochastic"]
    assert nearest["mean"] == 1.0  # every update vanished
    assert any("updates smaller than half" in w for w in nearest["warnings"])
    moved = 1.0 - master["master_mean"]
    assert 5e-4 < moved < 2e-3  # 20 steps of lr * m, m -> 1
    assert master["mean"] == 1.0 and master["warnings"] == []  # rounded to nearest: not yet
    assert abs((1.0 - stochastic["mean"]) - moved) < 0.05 * moved  # moved on average


def test_recorded_as_one_op_per_tensor_and_diffed(tmp_path):
    a = record(tmp_path / "a", "--optim", "came")
    # One op per parameter tensor (the GPT has 29), with what it wrote as its outputs.
    ops = [op for op in show_json(a, "--step", "1")["steps"][0]["ops"]
           if op["op"] == "upguard::came_step"]
    assert len(ops) == 29
    assert {(op["phase"], op["depth"]) for op in ops} == {("optimizer", 0)}
    assert len({op["outputs"][0]["label"] for op in ops}) == 29  # each parameter once
    for op in ops:
        factored = len(op["outputs"][0]["shape"]) >= 2
        assert [o["name"] for o in op["outputs"]] == (
            ["param", "exp_avg", "exp_avg_sq", "exp_avg_sq_col", "exp_avg_res_row",
             "exp_avg_res_col"] if factored else ["param", "exp_avg", "exp_avg_sq"])
    again = record(tmp_path / "again", "--optim", "came")
    code, report = diff_json(a, again)
    assert code == 0 and report["verdict"] == "identical"
    code, report = diff_json(a, record(tmp_path / "eps", "--optim", "came", "--plant", "adamw-eps"))
    d = only_rank(report)["divergence"]
    assert report["verdict"] == "culprit"
    assert (d["op"], d["phase"], d["step"]) == ("upguard::came_step", "optimizer", 2)
    assert d["call_site"] == f"examples/gpt_train.py:{line_of(TRAIN, 'optimizer.step()')}"
    inputs = {slot["name"]: slot for slot in d["inputs"]}
    assert [name for name, slot in inputs.items() if not slot["equal"]] == ["eps1"]
    assert {"param", "grad", "exp_avg", "exp_avg_sq", "lr"} <= set(inputs)
    assert [o["equal"] for o in d["outputs"]][:1] == [False]  # the parameter it wrote

"""One end-to-end test per verdict on the example GPT: a known change planted at a known op
from step 2 on, and the diff must name exactly that op, module, phase, step and verdict."""

from __future__ import annotations

from conftest import MODEL, TORCH_VERSION, TRAIN, diff_json, line_of, planted, record, show_json


def only_rank(report):
    assert report["schema"] == "upguard.diff/1"
    assert len(report["ranks"]) == 1
    return report["ranks"][0]


def test_same_program_twice_is_identical(runs, reference):
    again = record(runs / "again")
    code, report = diff_json(reference, again)
    assert code == 0
    rank = only_rank(report)
    assert report["verdict"] == "identical"
    assert rank["steps_compared"] == 4
    assert rank["steps_identical"] == 4  # every step skipped by its step digest


def test_same_program_twice_with_two_threads_is_identical(runs):
    a = record(runs / "threads2_a", "--threads", "2")
    b = record(runs / "threads2_b", "--threads", "2")
    code, report = diff_json(a, b)
    assert code == 0 and report["verdict"] == "identical"


def test_forward_culprit_gelu_tanh(runs, reference):
    code, report = diff_json(reference, planted(runs, "gelu-tanh"))
    assert code == 1
    d = only_rank(report)["divergence"]
    assert report["verdict"] == "culprit"
    assert (d["op"], d["module"], d["phase"], d["step"]) == (
        "aten::gelu", "blocks.1.mlp.act", "forward", 2)
    assert d["call_site"] == f"examples/gpt.py:{line_of(MODEL, 'h = self.act(self.fc(x))')}"
    inputs = {slot["name"]: slot for slot in d["inputs"]}
    assert inputs["self"]["equal"] is True
    assert inputs["approximate"]["equal"] is False
    assert (inputs["approximate"]["a"]["text"], inputs["approximate"]["b"]["text"]) == (
        "'none'", "'tanh'")
    assert d["outputs"][0]["equal"] is False
    assert d["outputs"][0]["a"]["stats"]["l2"] > 0


def test_backward_culprit_gradient_scale(runs, reference):
    code, report = diff_json(reference, planted(runs, "backward-scale"))
    d = only_rank(report)["divergence"]
    assert report["verdict"] == "culprit"
    assert (d["op"], d["module"], d["phase"], d["step"]) == (
        "aten::mul", "blocks.1.attn", "backward", 2)
    assert d["autograd_node"] == "ScaleGradBackward"
    assert d["call_site"] == (
        f"examples/gpt.py:{line_of(MODEL, 'return ScaleGrad.apply(self.proj(y)')}")
    assert [s["equal"] for s in d["inputs"]] == [True, False]


def test_optimizer_culprit_adamw_eps(runs, reference):
    code, report = diff_json(reference, planted(runs, "adamw-eps"))
    d = only_rank(report)["divergence"]
    assert report["verdict"] == "culprit"
    assert (d["op"], d["phase"], d["step"]) == ("aten::add_", "optimizer", 2)
    assert d["call_site"] == f"examples/gpt_train.py:{line_of(TRAIN, 'optimizer.step()')}"
    eps = [s for s in d["inputs"] if not s["equal"]]
    assert [(s["a"]["text"], s["b"]["text"]) for s in eps] == [("1e-08", "9.9999999999999995e-08")]


def test_changed_data_is_a_data_verdict_at_the_model_call(runs, reference):
    code, report = diff_json(reference, planted(runs, "data-shift"))
    rank = only_rank(report)
    d = rank["divergence"]
    assert report["verdict"] == "data" and rank["verdict"] == "data"
    assert (d["op"], d["phase"], d["step"]) == ("upguard::batch", "forward", 2)
    assert d["call_site"] == f"examples/gpt_train.py:{line_of(TRAIN, 'loss = forward(x, y)')}"
    assert rank["setup"] == (f"input batch differs at step 2 (args[0], args[1] of the model call "
                             f"at {d['call_site']})")
    assert d["producer_a"] == {"found": False} and d["producer_b"] == {"found": False}


def test_extra_op_is_structural(runs, reference):
    code, report = diff_json(reference, planted(runs, "extra-op"))
    rank = only_rank(report)
    assert report["verdict"] == "structural"
    s = rank["structural"]
    assert s["step"] == 2 and s["realigned"] is True
    assert s["only_a"] == []
    top = [op for op in s["only_b"] if op["depth"] == 0]
    assert [(op["op"], op["module"], op["phase"]) for op in top] == [
        ("aten::mul", "blocks.0.mlp", "forward")]
    assert top[0]["call_site"] == f"examples/gpt.py:{line_of(MODEL, 'h = h * 1.0')}"
    assert rank["divergence"] is None  # h * 1.0 changes no value


def test_show_lists_phases_modules_and_steps(reference):
    shown = show_json(reference, "--step", "1")
    assert [s["step"] for s in shown["steps"]] == [1]
    ops = shown["steps"][0]["ops"]
    phases = {op["phase"] for op in ops}
    assert {"forward", "backward", "optimizer", "other"} <= phases
    gelu = [op for op in ops if op["op"] == "aten::gelu"]
    assert [op["module"] for op in gelu] == ["blocks.0.mlp.act", "blocks.1.mlp.act"]
    assert all(op["outputs"][0]["kind"] == "tensor" for op in gelu)
    assert shown["meta"]["torch_version"].startswith("%d.%d." % TORCH_VERSION)

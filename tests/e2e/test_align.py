"""End-to-end: runs whose op streams differ still get their true first numerical divergence.

The diff aligns each step's ops by identity (phase, module, op, depth, enclosing op); ops that
only one run ran are listed beside the verdict, and the numerical divergence among the paired
ops is the verdict.
"""

from __future__ import annotations

from conftest import MODEL, TORCH2, diff_json, line_of, record

RESHAPE_VIEW = "aten::view" if TORCH2 else "aten::_reshape_alias"  # what reshape returns views by


def only_rank(report):
    assert report["schema"] == "upguard.diff/1"
    assert len(report["ranks"]) == 1
    return report["ranks"][0]


def assert_gelu_culprit(d, step):
    assert (d["verdict"], d["op"], d["module"], d["phase"], d["step"]) == (
        "culprit", "aten::gelu", "blocks.1.mlp.act", "forward", step)
    inputs = {slot["name"]: slot for slot in d["inputs"]}
    assert inputs["self"]["equal"] is True
    assert (inputs["approximate"]["a"]["text"], inputs["approximate"]["b"]["text"]) == (
        "'none'", "'tanh'")


def top_level(ops):
    return [(op["op"], op["module"], op["phase"]) for op in ops if op["depth"] == 0]


# An extra .contiguous() on the queries of blocks.0.attn (5 ops: contiguous > clone > empty_like,
# copy_ > empty), which also turns the matmul's internal copy of them (clone + _unsafe_view, 5
# ops) into a view (_reshape_alias on torch 1.13, view on 2.x): with the gelu-tanh plant after it, the gelu is the culprit
# and both places are listed beside it.
def test_extra_contiguous_then_gelu_names_the_gelu(runs, reference):
    b = record(runs / "contiguous_gelu", "--plant", "extra-contiguous,gelu-tanh")
    code, report = diff_json(reference, b)
    assert code == 1 and report["verdict"] == "culprit"
    rank = only_rank(report)
    d = rank["divergence"]
    assert_gelu_culprit(d, 2)
    assert d["index_b"] == d["index"] + 1  # 6 ops only in b before it, 5 only in a

    s = rank["structural"]  # the first place that counts: the contiguous
    assert (s["step"], s["only_a_count"], s["only_b_count"], s["realigned"]) == (2, 0, 5, True)
    assert s["index_a"] == s["index_b"]
    assert [op["index"] for op in s["only_b"]] == list(range(s["index_b"], s["index_b"] + 5))
    assert top_level(s["only_b"]) == [("aten::contiguous", "blocks.0.attn", "forward")]
    assert s["only_b"][-1]["call_site"] == (
        f"examples/gpt.py:{line_of(MODEL, 'q = q.contiguous()')}")

    summary = rank["structural_summary"]
    assert {k: summary[k] for k in ("blocks", "only_a_count", "only_b_count", "inside_clean_a",
                                    "inside_clean_b", "unaligned_blocks", "first_step",
                                    "last_step")} == {
        "blocks": 2, "only_a_count": 5, "only_b_count": 6, "inside_clean_a": 5,
        "inside_clean_b": 1, "unaligned_blocks": 0, "first_step": 2, "last_step": 2}
    assert [(g["module"], g["op"], g["inside"], g["only_a"], g["ops_a"], g["only_b"], g["ops_b"])
            for g in summary["groups"]] == [
        ("blocks.0.attn", "aten::contiguous", "", 0, 0, 1, 5),
        ("blocks.0.attn", "aten::clone", "aten::reshape", 1, 4, 0, 0),
        ("blocks.0.attn", "aten::_unsafe_view", "aten::reshape", 1, 1, 0, 0),
        ("blocks.0.attn", RESHAPE_VIEW, "aten::reshape", 0, 0, 1, 1)]
    second = summary["first_blocks"][1]  # inside aten::matmul, whose values match
    assert second["inside_clean_op"] is True
    assert (second["only_a_count"], second["only_b_count"]) == (5, 1)


def test_extra_contiguous_alone_is_structural(runs, reference):
    code, report = diff_json(reference, record(runs / "contiguous", "--plant", "extra-contiguous"))
    assert code == 1 and report["verdict"] == "structural"
    rank = only_rank(report)
    assert rank["divergence"] is None  # .contiguous() changes no value
    assert top_level(rank["structural"]["only_b"]) == [
        ("aten::contiguous", "blocks.0.attn", "forward")]
    summary = rank["structural_summary"]
    assert (summary["blocks"], summary["first_step"], summary["last_step"]) == (4, 2, 3)
    assert (summary["only_a_count"], summary["only_b_count"]) == (10, 12)


# Measured on torch 1.13 (CPU): 1 and 2 intra-op threads record the same op stream, op for op
# (no copy_ is added: the GPT's reductions are below ATen's parallel grain size), but
# aten::native_layer_norm_backward sums its weight and bias gradients per thread, in a
# [2, threads, 64] buffer: the values differ from the first backward on. That, not the gelu
# planted at step 2, is the first divergence.
def test_one_vs_two_threads_first_diverge_in_layer_norm_backward(runs, reference):
    b = record(runs / "threads2_gelu", "--threads", "2", "--plant", "gelu-tanh")
    code, report = diff_json(reference, b)
    assert code == 1 and report["verdict"] == "culprit"
    rank = only_rank(report)
    d = rank["divergence"]
    assert (d["op"], d["module"], d["phase"], d["step"]) == (
        "aten::resize_", "ln_f", "backward", 0)
    assert d["enclosing"] == ["aten::native_layer_norm_backward"]
    size = {slot["name"]: slot for slot in d["inputs"]}["size"]
    assert (size["a"]["text"], size["b"]["text"]) == ("[2, 1, 64]", "[2, 2, 64]")
    assert rank["structural"] is None and rank["structural_summary"] is None


# Planted from step 0, the gelu runs (forward) before the thread count makes any difference
# (backward): it is named, though the runs differ in more than the plant.
def test_one_vs_two_threads_with_an_earlier_culprit_names_it(runs, reference):
    b = record(runs / "threads2_gelu0", "--threads", "2", "--plant", "gelu-tanh",
               "--plant-step", "0")
    code, report = diff_json(reference, b)
    assert code == 1 and report["verdict"] == "culprit"
    assert_gelu_culprit(only_rank(report)["divergence"], 0)

"""Setup differences named before an op is blamed, on the example GPT: a dropout generator
seeded differently is an RNG verdict at the first random op, a shuffled batch order a data
verdict at the model call, and a different thread count or backend flag is named beside the
first divergent op."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import BUILD, MODEL, PYTHON, diff_json, line_of, planted, record, show_json, upguard


def only_rank(report):
    assert len(report["ranks"]) == 1
    return report["ranks"][0]


def test_reseeded_generator_is_an_rng_verdict_at_the_step_start(runs, reference):
    # The plant reseeds before step 2's first op: the CPU generator's state recorded at the
    # start of step 2 (upguard::rng_state) is the first difference.
    code, report = diff_json(reference, planted(runs, "dropout-seed"))
    assert code == 1 and report["verdict"] == "rng"
    rank = only_rank(report)
    d = rank["divergence"]
    assert (d["op"], d["index"], d["step"]) == ("upguard::rng_state", 0, 2)
    assert rank["setup"] == "RNG state differs at the start of step 2"
    assert report["environment"] == []


def test_a_generator_seeded_inside_the_step_shows_at_the_first_random_op(runs, reference):
    # Reseeded after the model call began (inside forward), only the random ops see it: the
    # embedding dropout's Bernoulli mask, whose `generator` input is the generator's state.
    code, report = diff_json(reference, planted(runs, "reseed-in-forward"))
    assert code == 1 and report["verdict"] == "rng"
    rank = only_rank(report)
    d = rank["divergence"]
    assert (d["op"], d["module"], d["phase"], d["step"]) == (
        "aten::bernoulli_", "drop", "forward", 2)
    assert d["differing_input"] == "generator"
    site = f"examples/gpt.py:{line_of(MODEL, 'x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))')}"
    assert rank["setup"] == (
        f"RNG state differs at step 2 (before op aten::bernoulli_, module drop, {site})")


def test_shuffled_batch_order_is_a_data_verdict(runs, reference):
    code, report = diff_json(reference, planted(runs, "data-order"))
    assert code == 1 and report["verdict"] == "data"
    rank = only_rank(report)
    assert (rank["divergence"]["op"], rank["divergence"]["step"]) == ("upguard::batch", 2)
    assert rank["setup"].startswith("input batch differs at step 2 (args[0], args[1] of the model")


def test_thread_count_is_named_beside_the_first_divergent_op(runs, reference):
    b = record(runs / "setup_threads2", "--threads", "2")
    code, report = diff_json(reference, b)
    assert code == 1
    assert report["environment"] == ["intra_op_threads 1 vs 2"]
    # The op where two threads first change a value (measured: layer-norm backward's per-thread
    # partial sums), still named.
    d = only_rank(report)["divergence"]
    assert d["enclosing"] == ["aten::native_layer_norm_backward"]


def test_mkldnn_disabled_is_named_beside_the_culprit(runs, reference):
    # Turned off before step 0 (--plant-step 0). Measured on this CPU with torch 1.13: with
    # oneDNN off, GELU takes ATen's own kernel, which rounds differently.
    code, report = diff_json(reference, planted(runs, "mkldnn-off", "--plant-step", "0"))
    assert code == 1 and report["verdict"] == "culprit"
    assert report["environment"] == ["torch.backends.mkldnn.enabled True vs False"]
    d = only_rank(report)["divergence"]
    assert (d["op"], d["module"], d["phase"], d["step"]) == (
        "aten::gelu", "blocks.0.mlp.act", "forward", 0)


def test_a_flag_changed_during_the_run_says_both_readings(runs, reference):
    # Turned off before step 2: true as step 0 began, false at the end; the culprit moves to
    # step 2. The text report says the same, as `environment differs: ...`.
    run = planted(runs, "mkldnn-off")
    code, report = diff_json(reference, run)
    assert code == 1 and report["verdict"] == "culprit"
    flag = "torch.backends.mkldnn.enabled True vs False (run B: True at start, False at end)"
    assert report["environment"] == [flag]
    d = only_rank(report)["divergence"]
    assert (d["op"], d["module"], d["step"]) == ("aten::gelu", "blocks.0.mlp.act", 2)
    text = upguard("diff", reference, run).stdout
    assert f"  environment differs: {flag}\n" in text


def test_backend_flags_are_read_without_recording_an_op(runs, reference):
    # Reading them at the end runs no torch op (flush_denormal is read from Python floats): an
    # op there would make a partial step 4; the last step ends with the optimizer's last op
    # and the model state recorded as it returned.
    meta = json.loads((reference / "meta.json").read_text())
    assert meta["backend_flags"]["flush_denormal"] == "False"
    assert meta["backend_flags"] == meta["backend_flags_at_start"]
    steps = show_json(reference)["steps"]
    assert [step["step"] for step in steps] == [0, 1, 2, 3]
    last = [(op["op"], op["phase"]) for op in steps[-1]["ops"][-2:]]
    assert last == [("aten::addcdiv_", "optimizer"), ("upguard::state", "other")]


def test_backend_flags_follow_what_the_program_set():
    # flush_denormal has no torch getter: read from the CPU mode that torch.set_flush_denormal
    # sets, and that Python floats obey.
    script = ("import torch; from upguard._meta import backend_flags as f; a = f(); "
              "torch.set_flush_denormal(True); torch.backends.mkldnn.enabled = False; "
              "torch.set_default_dtype(torch.float64); b = f(); print("
              "a['flush_denormal'], b['flush_denormal'], b['torch.backends.mkldnn.enabled'], "
              "b['torch.get_default_dtype()'])")
    result = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "False", "torch.float64"]


def test_identical_runs_have_no_setup_findings(runs, reference):
    code, report = diff_json(reference, record(runs / "setup_same"))
    assert code == 0 and report["verdict"] == "identical"
    assert report["environment"] == [] and only_rank(report)["setup"] is None

"""`upguard record --against REF`: each op compared with the reference while the candidate
runs; at the first divergence the live tensors are captured, the program stops, the reference
is re-run to capture its side, and the difference is explained."""

from __future__ import annotations

import json
import re

from conftest import PYTHON, TRAIN, show_json, upguard


def against(run, reference, *train_args, cli_args=()):
    return upguard("record", "-o", run, "--against", reference, *cli_args, "--", PYTHON, TRAIN,
                   "--quiet", "--steps", "4", *train_args, timeout=600)


def test_online_stops_at_the_culprit_and_explains_it(runs, reference):
    run = runs / "online_gelu"
    result = against(run, reference, "--plant", "gelu-tanh")
    assert result.returncode == 1, result.stderr
    online = json.loads((run / "online.json").read_text())
    assert (online["kind"], online["step"], online["op"], online["module"], online["phase"]) == (
        "culprit", 2, "aten::gelu", "blocks.1.mlp.act", "forward")
    assert online["seconds_since_start"] > 0
    index = online["index"]
    assert re.search(rf"diverged from .* at step 2 #{index}: aten::gelu \(forward, module "
                     r"blocks\.1\.mlp\.act, examples/gpt\.py:\d+\), culprit: output 0 differs; "
                     r"argument approximate differs", result.stdout), result.stdout
    assert "the run was stopped there" in result.stdout
    # The live capture of the candidate, the re-run capture of the reference, compared.
    assert (run / "captures" / f"rank0.step2.op{index}.safetensors").exists()
    assert (reference / "explain" / "captures" / f"rank0.step2.op{index}.safetensors").exists()
    assert f"B: step 2 #{index}, captured live" in result.stdout
    assert "=> inputs identical; output 0: " in result.stdout
    # The program really stopped: the candidate trace ends in step 2.
    assert [s["step"] for s in show_json(run)["steps"]] == [0, 1, 2]


def test_online_stops_at_a_different_batch_and_names_the_setup(runs, reference):
    run = runs / "online_data"
    result = against(run, reference, "--plant", "data-order")
    assert result.returncode == 1, result.stderr
    online = json.loads((run / "online.json").read_text())
    assert (online["op"], online["step"], online["detail"]) == (
        "upguard::batch", 2, "input 0 (args[0]) differs")
    assert "setup: input batch differs at step 2 (args[0], args[1] of the model call" in \
        result.stdout
    assert "explain:" not in result.stdout  # nothing computed differently to compare


def test_continue_records_the_whole_run(runs, reference):
    run = runs / "online_continue"
    result = against(run, reference, "--plant", "gelu-tanh", cli_args=("--continue",))
    assert result.returncode == 1, result.stderr
    assert "the run went on (--continue)" in result.stdout
    assert [s["step"] for s in show_json(run)["steps"]] == [0, 1, 2, 3]


def test_the_same_program_does_not_diverge(runs, reference):
    result = against(runs / "online_same", reference)
    assert result.returncode == 0, result.stderr
    assert "no divergence from" in result.stdout
    assert not (runs / "online_same" / "online.json").exists()


def test_a_missing_reference_is_refused_before_running(runs):
    result = against(runs / "online_bad", runs / "no_such_run")
    assert result.returncode == 2
    assert "no_such_run" in result.stderr
    assert not (runs / "online_bad" / "rank0.ugt").exists()

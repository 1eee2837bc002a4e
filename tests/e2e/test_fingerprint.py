"""Fingerprint runs (`upguard record --fingerprint`, docs/long-runs.md): a few KB a step, and
`upguard diff` names the first divergent step and what of it differs first.

The example GPT trains 200 steps; each change is planted from step 150 on."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Dict

import pytest

from conftest import BUILD, ONE_TORCH, PYTHON, REPO, diff_json, record, upguard

CNN = REPO / "examples" / "cnn_train.py"
DDP = REPO / "examples" / "gpt_ddp.py"
STEPS = "200"
PLANT_STEP = "150"


def fingerprinted(run_dir: Path, *train_args: str, steps: str = "") -> Path:
    cli = ("--fingerprint",) + (("--steps", steps) if steps else ())
    return record(run_dir, "--steps", STEPS, *train_args, cli_args=cli)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fingerprint")


@pytest.fixture(scope="module")
def reference(runs: Path) -> Path:
    return fingerprinted(runs / "a")


def planted(runs: Path, plant: str) -> Path:
    return fingerprinted(runs / plant, "--plant", plant, "--plant-step", PLANT_STEP)


def only_rank(report: Dict) -> Dict:
    assert len(report["ranks"]) == 1
    return report["ranks"][0]


def test_a_fingerprint_is_a_few_kb_a_step_and_says_so(reference: Path):
    size = (reference / "rank0.ugt").stat().st_size
    assert size / int(STEPS) < 16 * 1024, size
    meta = json.loads((reference / "meta.json").read_text())
    assert meta["record_options"]["fingerprint"] is True
    shown = upguard("show", reference, "--step", PLANT_STEP, "--json")
    assert shown.returncode == 0, shown.stderr
    (step,) = json.loads(shown.stdout)["steps"]
    # Each step holds only the fingerprint: random state, batch, loss, gradients, state.
    assert step["fingerprint"] is True
    assert [op["op"] for op in step["ops"]] == [
        "upguard::rng_state", "upguard::batch", "upguard::loss", "upguard::grads",
        "upguard::state"]
    grads = step["ops"][3]["inputs"]
    assert grads and all(arg["name"].endswith(".grad") for arg in grads), grads


def test_the_same_run_again_is_identical(runs: Path, reference: Path):
    code, report = diff_json(reference, fingerprinted(runs / "again"))
    assert code == 0 and report["verdict"] == "identical"
    rank = only_rank(report)
    assert rank["steps_compared"] == int(STEPS) and rank["steps_identical"] == int(STEPS)


@pytest.mark.parametrize("plant,verdict,first", [
    ("gelu-tanh", "step", "loss"),          # the forward changes: the loss shows it first
    ("backward-scale", "step", "gradients"),  # 1 + 2^-20 on a gradient: the loss is the same
    # These two on one torch in `make test` (conftest.ONE_TORCH); the other three on both.
    pytest.param("adamw-eps", "step", "model state", marks=ONE_TORCH),  # only the update differs
    pytest.param("data-shift", "data", "batch", marks=ONE_TORCH),
    ("dropout-seed", "rng", "random state"),
])
def test_the_first_divergent_step_and_what_differs_first(runs: Path, reference: Path,
                                                         plant: str, verdict: str, first: str):
    code, report = diff_json(reference, planted(runs, plant))
    assert code == 1 and report["verdict"] == verdict, json.dumps(report, indent=1)[:3000]
    rank = only_rank(report)
    assert rank["verdict"] == verdict
    f = rank["fingerprint"]
    assert f["step"] == int(PLANT_STEP) and f["first"] == first, f
    assert rank["setup"].startswith(f"step {PLANT_STEP} is the first divergent step ({first} "
                                    "first):"), rank["setup"]
    assert f["loss_differs"] == (first in ("random state", "batch", "loss")), f
    if first == "gradients":
        # blocks.1.attn scales the gradient it passes back: what lies before it in the model
        # gets different gradients, what lies after it (blocks.1.mlp) the same ones.
        assert "tok_emb.weight.grad" in f["grads_differ"], f["grads_differ"]
        assert not [name for name in f["grads_differ"] if name.startswith("blocks.1.mlp.")]
    if first == "model state":
        assert not f["grads_differ"] and f["state_differ"], f
        assert f["loss_a"] == f["loss_b"]
    # The text report says what to record next.
    text = upguard("diff", reference, runs / plant)
    assert text.returncode == 1
    assert f"--fingerprint --steps {int(PLANT_STEP) - 1}:{int(PLANT_STEP) + 1}" in text.stdout


def test_the_divergent_step_recorded_in_full_names_the_op(runs: Path):
    """What the report asks for: the steps around it recorded in full, the rest fingerprinted."""
    window = f"{int(PLANT_STEP) - 1}:{int(PLANT_STEP) + 1}"
    a = fingerprinted(runs / "window_a", steps=window)
    b = fingerprinted(runs / "window_b", "--plant", "gelu-tanh", "--plant-step", PLANT_STEP,
                      steps=window)
    code, report = diff_json(a, b)
    assert code == 1 and report["verdict"] == "culprit", json.dumps(report, indent=1)[:3000]
    divergence = only_rank(report)["divergence"]
    assert divergence["step"] == int(PLANT_STEP)
    assert divergence["op"] == "aten::gelu" and divergence["module"] == "blocks.1.mlp.act"


def test_a_fingerprint_is_not_compared_with_a_step_recorded_in_full(runs: Path,
                                                                    reference: Path):
    full = record(runs / "full", "--steps", STEPS, cli_args=("--steps", "190:"))
    result = upguard("diff", reference, full)
    assert result.returncode == 2
    assert "recorded in full in one run and as a fingerprint in the other" in result.stderr


def fingerprinted_resnet(run_dir: Path, *args: str) -> Path:
    """torchvision's ResNet-18 (BatchNorm), batches from a DataLoader with 2 workers, and an
    evaluation under inference_mode after every step."""
    result = upguard("record", "--fingerprint", "-o", run_dir, "--", PYTHON, CNN, "--quiet",
                     "--model", "resnet18", "--steps", "6", "--workers", "2", "--eval", *args,
                     timeout=600)
    assert result.returncode == 0, result.stderr
    assert "upguard:" not in result.stderr, result.stderr  # no warning, nothing stopped
    return run_dir


@pytest.fixture(scope="module")
def resnet_reference(runs: Path) -> Path:
    return fingerprinted_resnet(runs / "resnet_a")


def test_resnet18_with_workers_and_eval_again_is_identical(runs: Path, resnet_reference: Path):
    code, report = diff_json(resnet_reference, fingerprinted_resnet(runs / "resnet_again"))
    assert code == 0 and report["verdict"] == "identical", json.dumps(report)[:2000]
    assert only_rank(report)["steps_compared"] == 7  # the evaluation after the last step: a 7th


@pytest.mark.parametrize("plant,names", [
    # The running statistics move differently; the outputs, loss and gradients do not.
    ("bn-momentum", ["bn1.running_mean", "bn1.running_var"]),
    # Memory written through numpy before optimizer.step: only the state shows it.
    ("buffer-numpy", ["bn1.running_var"]),
])
def test_resnet18_with_workers_and_eval(runs: Path, resnet_reference: Path, plant: str,
                                        names: list):
    code, report = diff_json(resnet_reference, fingerprinted_resnet(
        runs / f"resnet_{plant}", "--plant", plant, "--plant-step", "3"))
    assert code == 1 and report["verdict"] == "step", json.dumps(report)[:3000]
    f = only_rank(report)["fingerprint"]
    assert f["step"] == 3 and f["first"] == "model state", f
    assert not f["loss_differs"] and not f["grads_differ"], f
    assert f["state_differ"] == names, f


def fingerprinted_ddp(run_dir: Path, *args: str) -> Path:
    """The DDP GPT under torchrun, 2 ranks (gloo), 12 steps fingerprinted."""
    result = upguard("record", "--fingerprint", "-o", run_dir, "--", PYTHON, "-m",
                     "torch.distributed.run", "--nproc_per_node=2", DDP, "--quiet", "--steps",
                     "12", *args, timeout=300)
    assert result.returncode == 0, result.stderr
    return run_dir


def test_ddp_a_batch_changed_on_rank_1_is_named_there(runs: Path):
    """Fingerprint steps hold no collectives: the rank whose batch differs comes before the one
    whose gradients the all-reduce changed."""
    ref = fingerprinted_ddp(runs / "ddp_a")
    code, report = diff_json(ref, fingerprinted_ddp(runs / "ddp_again"))
    assert code == 0 and report["verdict"] == "identical", json.dumps(report)[:2000]
    code, report = diff_json(ref, fingerprinted_ddp(runs / "ddp_shift", "--plant", "data-shift",
                                                    "--plant-rank", "1", "--plant-step", "8"))
    assert code == 1 and report["verdict"] == "data", json.dumps(report)[:3000]
    ranks = {r["rank"]: r for r in report["ranks"]}
    assert ranks[1]["verdict"] == "data" and ranks[1]["fingerprint"]["step"] == 8
    assert ranks[1]["fingerprint"]["first"] == "batch"
    # Rank 0 trained on the same batch: its loss is the same, its gradients came averaged.
    f0 = ranks[0]["fingerprint"]
    assert f0["step"] == 8 and f0["first"] == "gradients" and not f0["loss_differs"], f0
    across = report["across_ranks"]
    assert across["first_rank"] == 1, across
    assert any("gradient synchronization" in note for note in across["notes"]), across


@pytest.mark.parametrize("mode", ["full", "fingerprint"])
def test_every_optimizer_step_ends_a_step_as_in_full_recording(mode: str):
    """A fingerprint step ends at the optimizer's profiler scope seen from Python (no callback
    there), also through learning-rate schedulers made before and while recording: the same
    steps as a recording in full, no scheduler warning, a scripted record_function compiles,
    and torch's own record_function after."""
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    result = subprocess.run([PYTHON, str(REPO / "tests" / "e2e" / "optimizer_steps.py"), mode],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "STEPS 0 2 4 6 8" in result.stdout and "RESTORED True" in result.stdout, result.stdout
    assert "SCRIPTED [2.0, 2.0]" in result.stdout, result.stdout

"""`upguard diff --zoom` (docs/long-runs.md): from two fingerprint runs, re-run both commands
recording the first divergent step (and the one before) in full, from the latest
`upguard.resume_point` snapshot, and name the first divergent op.

The example GPT trains 200 steps, a snapshot every 50 (--resume-every); each change is planted
from step 150 on."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Tuple

import pytest

from conftest import ONE_TORCH, PYTHON, REPO, TRAIN, record, upguard

DDP = REPO / "examples" / "gpt_ddp.py"
STEPS = ("--steps", "200", "--resume-every", "50")


def fingerprinted(run_dir: Path, *train_args: str, script: Path = TRAIN) -> Path:
    result = upguard("record", "-o", run_dir, "--fingerprint", "--", PYTHON, script, "--quiet",
                     *STEPS, *train_args)
    assert result.returncode == 0, result.stderr
    return run_dir


def zoom(a: Path, b: Path) -> Tuple[int, Dict, subprocess.CompletedProcess]:
    result = upguard("diff", a, b, "--zoom", "--json", timeout=600)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout), result


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("zoom")


@pytest.fixture(scope="module")
def reference(runs: Path) -> Path:
    return fingerprinted(runs / "a")


@pytest.fixture(scope="module")
def gelu(runs: Path) -> Path:
    return fingerprinted(runs / "gelu", "--plant", "gelu-tanh", "--plant-step", "150")


def first_op(report: Dict) -> Dict:
    (rank,) = report["ranks"]
    return rank["divergence"]


def test_zoom_resumes_at_the_latest_snapshot_and_names_the_op(reference: Path, gelu: Path):
    snapshots = sorted(p.name for p in (reference / "resume").iterdir())
    assert snapshots == ["step-100.rank0.pt", "step-150.rank0.pt", "step-50.rank0.pt"]
    code, report, result = zoom(reference, gelu)
    assert code == 1 and report["verdict"] == "culprit", json.dumps(report)[:3000]
    z = report["zoom"]
    assert (z["step"], z["first"], z["rank"]) == (150, 149, 0), z
    assert "step 150 is the first divergent step (loss first)" in z["fingerprint"]
    # Step 149 is recorded in full, so the snapshot must be of step 149 or before: 100.
    for side, run in (("a", reference), ("b", gelu)):
        assert z[side]["resumed_at"] == 100 and not z[side]["retried"], z
        assert z[side]["resumed_from"] == str(run / "resume" / "step-100")
        assert z[side]["dir"] == str(run / "zoom")
    op = first_op(report)
    assert (op["step"], op["op"], op["module"], op["phase"]) == (
        150, "aten::gelu", "blocks.1.mlp.act", "forward"), op
    # The re-runs hold only the zoomed steps, and ended after step 150 of 200.
    shown = upguard("show", reference / "zoom", "--json")
    assert [s["step"] for s in json.loads(shown.stdout)["steps"]] == [149, 150]
    text = upguard("diff", reference, gelu, "--zoom", timeout=600).stdout
    assert "run A: resumed at step 100" in text and "CULPRIT  step 150, forward, aten::gelu" in text


# The re-run's fallbacks below are the CLI's choice: on one torch (the resume itself, above, and
# the DDP zoom run on both).
@ONE_TORCH
def test_zoom_without_snapshots_runs_from_step_0(runs: Path, reference: Path):
    adamw = fingerprinted(runs / "adamw", "--plant", "adamw-eps", "--plant-step", "150")
    for run in (reference, adamw):
        bare = runs / f"{run.name}_bare"
        shutil.copytree(run, bare, ignore=shutil.ignore_patterns("resume", "zoom"))
    code, report, _ = zoom(runs / "a_bare", runs / "adamw_bare")
    assert code == 1 and report["verdict"] == "culprit", json.dumps(report)[:3000]
    assert report["zoom"]["a"]["resumed_at"] is None and report["zoom"]["b"]["resumed_at"] is None
    op = first_op(report)
    assert op["step"] == 150 and op["phase"] == "optimizer", op


NO_BATCHES = """
import runpy, sys
import upguard
resume_point = upguard.resume_point
# The snapshot misses the generator that draws the batches.
upguard.resume_point = lambda step, state, every=50: resume_point(
    step, {k: v for k, v in state.items() if k != "batches"}, every)
sys.argv = [sys.argv[0]] + sys.argv[1:]
runpy.run_path(%r, run_name="__main__")
"""


@ONE_TORCH
def test_a_snapshot_that_misses_the_batches_is_caught_and_run_again_from_step_0(
        runs: Path, tmp_path: Path):
    script = tmp_path / "no_batches.py"
    script.write_text(NO_BATCHES % str(TRAIN))
    a = fingerprinted(runs / "nb_a", script=script)
    b = fingerprinted(runs / "nb_gelu", "--plant", "gelu-tanh", "--plant-step", "150",
                      script=script)
    code, report, result = zoom(a, b)
    assert code == 1 and report["verdict"] == "culprit", result.stderr
    z = report["zoom"]
    for side in ("a", "b"):
        assert z[side]["resumed_at"] is None, z
        assert z[side]["retried"].startswith(
            "resumed at step 100, it departed from the run at step 149, the batch differs"), z
    assert first_op(report)["op"] == "aten::gelu"


RANDOM_SEED = """
import os, runpy, sys
sys.argv = [sys.argv[0]] + sys.argv[1:] + ["--seed", str(int.from_bytes(os.urandom(2), "big"))]
runpy.run_path(%r, run_name="__main__")
"""


@ONE_TORCH
def test_a_program_that_does_not_reproduce_is_an_error_not_a_culprit(runs: Path,
                                                                    tmp_path: Path):
    script = tmp_path / "random_seed.py"
    script.write_text(RANDOM_SEED % str(TRAIN))
    a = fingerprinted(runs / "rs_a", script=script)
    b = fingerprinted(runs / "rs_b", script=script)
    result = upguard("diff", a, b, "--zoom", timeout=600)
    assert result.returncode == 2, result.stdout
    assert "run A's re-run (" in result.stderr and "does not reproduce it at step 0" in \
        result.stderr, result.stderr
    assert "CULPRIT" not in result.stdout


def test_ddp_zoom_names_the_rank_and_the_batch(runs: Path):
    def ddp(run_dir: Path, *args: str) -> Path:
        result = upguard("record", "--fingerprint", "-o", run_dir, "--", PYTHON, "-m",
                         "torch.distributed.run", "--nproc_per_node=2", DDP, "--quiet",
                         "--steps", "12", *args, timeout=300)
        assert result.returncode == 0, result.stderr
        return run_dir

    a = ddp(runs / "ddp_a")
    b = ddp(runs / "ddp_shift", "--plant", "data-shift", "--plant-rank", "1", "--plant-step", "8")
    code, report, result = zoom(a, b)
    assert code == 1 and report["verdict"] == "data", result.stderr
    assert report["zoom"]["step"] == 8 and report["zoom"]["rank"] == 1, report["zoom"]
    assert report["across_ranks"]["origins"] == [1], report["across_ranks"]
    ranks = {r["rank"]: r for r in report["ranks"]}
    assert ranks[1]["divergence"]["op"] == "upguard::batch" and ranks[1]["divergence"]["step"] == 8

"""`upguard calibrate` (docs/long-runs.md): the reference's own run-to-run noise, learned from 3
runs, as a tolerance policy; a candidate judged against it.

The example GPT with --noisy-sum sums blocks.0.mlp's output projection in an order drawn from
the OS at each call (GPU atomics, on the CPU): no two runs are bitwise equal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import PYTHON, TRAIN, upguard

NOISY = ("--noisy-sum", "--steps", "4", "--quiet")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("calibrate") / "cal"
    result = upguard("calibrate", "-n", "3", "-o", out, "--", PYTHON, TRAIN, *NOISY, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "3 runs" in result.stdout and "op identities" in result.stdout
    return out


def candidate(run: Path, *extra: str) -> Path:
    result = upguard("record", "-o", run, "--", PYTHON, TRAIN, *NOISY, *extra)
    assert result.returncode == 0, result.stderr
    return run


def judged(calibrated: Path, run: Path):  # type: ignore[no-untyped-def]
    result = upguard("diff", calibrated / "run1", run, "--tolerance-policy",
                     calibrated / "policy.txt")
    assert result.returncode in (0, 1), result.stderr
    return result


def test_the_policy_holds_the_noisy_op_and_what_it_spreads_to(calibrated: Path):
    policy = (calibrated / "policy.txt").read_text().splitlines()
    assert policy[0].startswith("# upguard calibrate: 3 runs of `")
    assert any(line.startswith("default ulp:64 ") for line in policy), policy[:5]
    rules = [line.split("#")[0].split() for line in policy if line.startswith("at ")]
    by_identity = {(r[1], r[2], r[3]): r[4] for r in rules}
    # The noisy sum itself, and the ops after it, forward and backward.
    assert ("forward", "blocks.0.mlp", "aten::sum") in by_identity, by_identity
    assert ("forward", "blocks.1.mlp.act", "aten::gelu") in by_identity
    assert any(phase == "backward" for phase, _, _ in by_identity)
    # The noise starts at the noisy projection: the first identity to differ is there.
    report = json.loads((calibrated / "calibration.json").read_text())
    assert report["schema"] == "upguard.calibration/1" and report["pairs"] == 3
    first = report["envelopes"][0]
    assert (first["phase"], first["module"]) == ("forward", "blocks.0.mlp"), first
    assert first["first_seen"].startswith("step 0 #"), (first, report["notes"])
    # Element by element (two more runs capture the first call of each identity that varied in
    # step 0): the noisy sum moves some of its elements by a few ULP, not all of them.
    by_key = {(e["phase"], e["module"], e["op"]): e for e in report["envelopes"]}
    noisy_sum = by_key[("forward", "blocks.0.mlp", "aten::sum")]
    assert 0 < noisy_sum["element_fraction"] < 1, noisy_sum
    assert 1 <= noisy_sum["element_max_ulp"] <= 1 << 20, noisy_sum
    assert any("% of elements, up to" in line and "aten::sum" in line for line in policy)
    assert (calibrated / "elements1" / "captures").is_dir()
    # Every policy rule parses: the diff accepts the file.
    assert all(len(r) == 5 for r in rules), [r for r in rules if len(r) != 5]


def test_the_same_program_again_is_inside_the_noise(calibrated: Path, tmp_path: Path):
    for n in range(2):
        result = judged(calibrated, candidate(tmp_path / f"again{n}"))
        out = result.stdout
        assert result.returncode == 0, out[-3000:]
        assert "tolerance: the reference's own noise (calibrated: 3 runs of" in out
        assert "inside the reference's own noise (not a finding):" in out
        assert "IDENTICAL within the reference's own noise" in out
        assert "OUTSIDE" not in out


def test_a_planted_change_is_outside_the_noise_and_named(calibrated: Path, tmp_path: Path):
    result = judged(calibrated, candidate(tmp_path / "gelu", "--plant", "gelu-tanh"))
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    assert "inside the reference's own noise (not a finding):" in out
    assert "OUTSIDE the reference's own noise (a finding)" in out
    assert "CULPRIT  step 2, forward, aten::gelu" in out and "module     blocks.1.mlp.act" in out
    # Without the calibration, the noise itself is the first thing the diff names.
    plain = upguard("diff", calibrated / "run1", tmp_path / "gelu")
    assert plain.returncode == 1
    assert "aten::gelu" not in plain.stdout.split("verdict:")[0]


def test_bad_calls_are_clear_errors(calibrated: Path, tmp_path: Path):
    result = upguard("calibrate", "-n", "2", "-o", tmp_path / "x", "--", PYTHON, TRAIN)
    assert result.returncode == 2 and "needs 3 runs or more" in result.stderr
    result = upguard("calibrate", "-n", "3", "-o", calibrated, "--", PYTHON, TRAIN)
    assert result.returncode == 2 and "holds a calibration already" in result.stderr

"""`upguard nan` on the example GPT, one run and no reference: a NaN/Inf planted at a known op
from step 2 on must be named exactly (op, module, phase, step); the clean run, whose causal mask
writes -inf on purpose in every attention block, has none."""

from __future__ import annotations

import json
import shutil

from conftest import MODEL, line_of, record, upguard

MASKED = 8 * 4 * (32 * 31 // 2)  # batch x heads x the causal mask's zero probabilities
ELEMENTS = 8 * 4 * 32 * 32


def nan_json(run, *args):
    result = upguard("nan", run, "--json", *args)
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert report["schema"] == "upguard.nan/1"
    assert len(report["ranks"]) == 1
    return result.returncode, report


def test_clean_run_has_no_nan(reference):
    code, report = nan_json(reference)
    assert code == 0 and report["found"] is False
    rank = report["ranks"][0]
    assert rank["finding"] is None
    assert (rank["steps_scanned"], rank["first_step"], rank["last_step"]) == (4, 0, 3)
    assert rank["complete"] is True and rank["notes"] == []
    # att.masked_fill(~mask, -inf): deliberate, not a finding. aten::masked_fill and the
    # aten::masked_fill_ inside it, in 2 blocks, in 4 steps.
    assert rank["deliberate_fills"] == 2 * 2 * 4
    fill = rank["first_fill"]
    assert (fill["op"], fill["depth"], fill["module"], fill["phase"], fill["step"]) == (
        "aten::masked_fill_", 1, "blocks.0.attn", "forward", 0)
    assert fill["call_site"] == f"examples/gpt.py:{line_of(MODEL, 'att.masked_fill(')}"
    assert rank["contained"] == 0


def test_log_of_zero_probabilities_makes_neg_inf(runs):
    run = record(runs / "log-zero", "--plant", "log-zero")
    code, report = nan_json(run)
    assert code == 1 and report["found"] is True
    f = report["ranks"][0]["finding"]
    assert (f["kind"], f["op"], f["module"], f["phase"], f["step"], f["depth"]) == (
        "produced", "aten::log", "blocks.1.attn", "forward", 2, 0)
    assert f["call_site"] == f"examples/gpt.py:{line_of(MODEL, 'torch.log(att)')}"
    assert f["kinds"] == ["neg_inf"] and f["inputs_finite"] is True
    assert f["enclosing"] == [] and f["autograd_node"] == "" and f["scalar_reason"] is None
    assert f["arg"] == {"side": "output", "index": 0}
    (probabilities,) = f["inputs"]
    assert probabilities["name"] == "self"
    assert probabilities["counts"] == {"finite": ELEMENTS, "nan": 0, "pos_inf": 0, "neg_inf": 0}
    assert probabilities["finite_stats"]["min"] == 0.0
    counts = f["outputs"][0]["counts"]
    assert counts["nan"] == 0 and counts["pos_inf"] == 0
    assert MASKED <= counts["neg_inf"] < ELEMENTS  # the mask's zeros and dropout's
    assert counts["finite"] + counts["neg_inf"] == ELEMENTS

    text = upguard("nan", run)
    assert text.returncode == 1
    assert "  MADE  -Inf at step 2, forward, aten::log\n" in text.stdout
    assert "    module     blocks.1.attn\n" in text.stdout
    assert (f"  verdict: aten::log made -Inf from finite inputs: output 'result0' holds -Inf "
            f"{counts['neg_inf']} of {ELEMENTS} elements.\n") in text.stdout
    assert text.stdout.endswith("result: NaN/Inf found\n")


def test_overflowing_exp_makes_pos_inf(runs):
    run = record(runs / "overflow", "--plant", "overflow")
    code, report = nan_json(run)
    assert code == 1
    f = report["ranks"][0]["finding"]
    assert (f["kind"], f["op"], f["module"], f["phase"], f["step"]) == (
        "produced", "aten::exp", "blocks.0.mlp", "forward", 2)
    assert f["call_site"] == f"examples/gpt.py:{line_of(MODEL, 'torch.exp(h * 1e4)')}"
    assert f["kinds"] == ["pos_inf"] and f["inputs_finite"] is True
    assert f["inputs"][0]["counts"]["pos_inf"] == 0
    assert f["outputs"][0]["counts"]["pos_inf"] > 0


def test_a_truncated_trace_is_scanned_as_far_as_it_is_readable(runs, tmp_path):
    run = tmp_path / "cut"
    shutil.copytree(runs / "log-zero", run)
    trace = run / "rank0.ugt"
    trace.write_bytes(trace.read_bytes()[:-10])
    code, report = nan_json(run)
    assert code == 1
    rank = report["ranks"][0]
    assert rank["complete"] is False
    assert len(rank["notes"]) == 1 and "truncated record" in rank["notes"][0]
    assert (rank["finding"]["op"], rank["finding"]["step"]) == ("aten::log", 2)


def test_rank_option_and_errors(runs, reference):
    code, report = nan_json(reference, "--rank", "0")
    assert code == 0 and report["ranks"][0]["rank"] == 0
    missing = upguard("nan", reference, "--rank", "1")
    assert missing.returncode == 2
    assert missing.stderr == f"upguard nan: --rank 1: {reference} has 1 rank(s)\n"

    no_stats = record(runs / "no-stats", cli_args=("--no-stats", "--steps", "0"))
    result = upguard("nan", no_stats)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"upguard nan: {no_stats}: recorded without statistics (--no-stats); "
                             "record again without it to use `upguard nan`\n")

"""Issue 37, part 1: what can be read is read. A sparse COO or CSR tensor is compared by its
indices and values (digest.md §7.1) and a conjugated view by its resolved values; a BSR tensor,
which upguard does not read, makes the diff unverified, never identical."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import PYTHON, upguard

SCRIPT = Path(__file__).resolve().parent / "unread_layouts.py"


def record(run: Path, *args: str) -> str:
    result = upguard("record", "-o", run, "--", PYTHON, SCRIPT, *args, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stderr


def inputs_of(run: Path, op: str) -> list:
    """The tensor inputs of every `op` in the run, in order."""
    shown = json.loads(upguard("show", run, "--json").stdout)
    return [arg for step in shown["steps"] for item in step["ops"] if item["op"] == op
            for arg in item["inputs"] if "shape" in arg]


def test_sparse_and_conjugate_tensors_are_compared(tmp_path: Path) -> None:
    said = record(tmp_path / "a")
    record(tmp_path / "b")
    record(tmp_path / "c", "--value", "1.5")
    assert "were not digested" not in said, said
    # The sparse matrix is a value the product reads (shape-only before issue 37), the same in
    # two alike runs and another where one stored value changed; so is the conjugated view.
    sparse = {run: [arg.get("digest") for arg in inputs_of(tmp_path / run, "aten::_sparse_mm")]
              for run in "abc"}
    assert {arg["kind"] for arg in inputs_of(tmp_path / "a", "aten::_sparse_mm")} == {"tensor"}
    assert sparse["a"] == sparse["b"] and sparse["a"] != sparse["c"], sparse
    assert {arg["kind"] for arg in inputs_of(tmp_path / "a", "aten::mul")} == {"tensor"}
    same = upguard("diff", tmp_path / "a", tmp_path / "b", "--json")
    assert (same.returncode, json.loads(same.stdout)["verdict"]) == (0, "identical"), same.stdout
    changed = upguard("diff", tmp_path / "a", tmp_path / "c", "--json")
    report = json.loads(changed.stdout)
    assert changed.returncode == 1, changed.stdout
    first = report["ranks"][0]["divergence"]
    assert (first["verdict"], first["op"], first["differing_input"]) == (
        "propagated", "aten::sparse_coo_tensor", "values"), first
    assert report["not_compared"]["ops"] == 0


def test_a_layout_upguard_does_not_read_is_unverified(tmp_path: Path) -> None:
    said = record(tmp_path / "a", "--bsr")
    record(tmp_path / "b", "--bsr")
    assert "tensor(s) in layout sparse_bsr, which upguard does not read" in said, said
    result = upguard("diff", tmp_path / "a", tmp_path / "b", "--json")
    report = json.loads(result.stdout)
    assert (result.returncode, report["verdict"]) == (3, "unverified"), result.stdout
    assert [(r["reason"], r["detail"]) for r in report["not_compared"]["reasons"]] == [
        ("layout", "sparse_bsr")]

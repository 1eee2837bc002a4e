"""`diff --explain` when the input pipeline runs differently in the re-run, and when it cannot
reproduce a run; and labels a DataLoader makes in the training process (loader_explain.py).

- The runs were recorded with 2 DataLoader workers and are re-run with none (LOADER_WORKERS is
  not replayed): the re-run's input-pipeline ops differ, so the divergent op usually has another
  index there (how many ops the training process records as the workers' batches arrive varies
  with their timing: indices 178-186 measured, 182 without workers). The capture selects it by
  its position among the step's ops outside the input pipeline (`position=P`); by index it
  captured another op and the explain failed. The test checks the capture's index against a run
  recorded without workers, which is what the re-run is.
- B's dropout came from DROPOUT_P, which a re-run does not replay: the re-run of B does not
  reproduce its values, and the explanation must say there is none, not "identical".
- Labels collated in the training process are torch.tensor(list): aten::empty filled from
  Python without an op. They were recorded as "uninit" (not a value), so a change of labels
  was a CULPRIT at the loss (inputs "identical", output differs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Sequence

from conftest import PYTHON, REPO, diff_json, only_rank, upguard

SCRIPT = REPO / "tests" / "e2e" / "loader_explain.py"


def record(run: Path, *args: str, env: Dict[str, str]) -> Path:
    result = upguard("record", "-o", run, "--", PYTHON, SCRIPT, *args, env=env, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return run


def explain(a: Path, b: Path) -> Dict:
    result = upguard("diff", a, b, "--explain", "--json", env={"LOADER_WORKERS": "0"},
                     timeout=240)
    assert result.returncode == 1, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_explain_finds_the_op_when_the_input_pipeline_changed(runs: Path):
    workers = {"LOADER_WORKERS": "2"}
    a = record(runs / "loader_a", env=workers)
    b = record(runs / "loader_b", "--dropout", "0.3", env=workers)
    report = explain(a, b)
    assert report["verdict"] == "culprit"
    found = only_rank(report)["divergence"]
    assert found["op"] == "aten::bernoulli_" and found["phase"] == "forward"
    explained = report["explain"]
    assert explained["op"] == "aten::bernoulli_"
    assert explained["not_reproduced"] == []
    assert (explained["a"]["step"], explained["a"]["index"]) == (found["step"], found["index"])
    # The re-run took other input ops: the capture is the op at the index it has in a run without
    # workers (the same op by position), whatever its index in the run recorded with them.
    in_process = record(runs / "loader_a_in_process", env={"LOADER_WORKERS": "0"})
    code, report_in_process = diff_json(in_process, b)
    assert code == 1
    found_in_process = only_rank(report_in_process)["divergence"]
    assert found_in_process["op"] == "aten::bernoulli_", found_in_process
    assert explained["a"]["capture"].endswith(
        f".step{found['step']}.op{found_in_process['index']}.safetensors"), explained["a"]
    output = explained["outputs"][0]
    assert output["bitwise_equal"] is False and output["differing"] > 0

    # The same change made through the environment: the re-run of B is not B.
    e = record(runs / "loader_env", env={**workers, "DROPOUT_P": "0.3"})
    unreproduced = explain(a, e)["explain"]
    assert [w.split(":")[0] for w in unreproduced["not_reproduced"]] == ["B output.0"]
    assert unreproduced["headline"].startswith("no explanation: the re-run of B did not")


def test_labels_collated_in_process_are_values(runs: Path):
    workers = {"LOADER_WORKERS": "0"}
    a = record(runs / "labels_a", env=workers)
    b = record(runs / "labels_b", env={**workers, "LABEL_SHIFT": "1"})
    code, report = diff_json(a, b)
    assert code == 1
    rank = only_rank(report)
    assert rank["verdict"] == "propagated", rank["verdict"]
    found = rank["divergence"]
    assert found["differing_input"] == "target", found
    target = next(slot for slot in found["inputs"] if slot["name"] == "target")
    assert target["a"]["kind"] == "tensor" and target["b"]["kind"] == "tensor"

"""Targeted capture and `diff --explain` on the example GPT: the captured tensors are the op's
real inputs and outputs (checked by recomputing the op with torch), carry the digests the trace
recorded, and the explanation says how the planted change altered the culprit's output."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Dict, Tuple

import numpy as np
import torch

from conftest import PYTHON, TRAIN, planted, record, show_json, upguard

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64}


def read_safetensors(path: Path) -> Tuple[Dict[str, np.ndarray], Dict[str, str]]:
    """A minimal reader of the published format, independent of upguard's C++ one."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    meta = header.pop("__metadata__", {})
    buffer = data[8 + size:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(buffer[begin:end], dtype=DTYPES[info["dtype"]]).reshape(
            info["shape"])
    return tensors, meta


def gelu_op(run: Path) -> Dict:
    """The aten::gelu op of blocks.1.mlp.act in step 2, from `upguard show`."""
    ops = show_json(run, "--step", "2")["steps"][0]["ops"]
    hits = [op for op in ops if op["op"] == "aten::gelu" and op["module"] == "blocks.1.mlp.act"]
    assert len(hits) == 1
    return hits[0]


def test_capture_by_op_and_module_writes_the_ops_real_tensors(runs):
    run = record(runs / "capture_gelu", cli_args=(
        "--capture", "step=2,op=aten::gelu,module=blocks.1.mlp.act"))
    op = gelu_op(run)
    files = sorted((run / "captures").iterdir())
    assert [f.name for f in files] == [f"rank0.step2.op{op['index']}.safetensors"]
    tensors, meta = read_safetensors(files[0])
    assert sorted(tensors) == ["input.0", "output.0"]
    assert (meta["upguard.op"], meta["upguard.module"], meta["upguard.phase"],
            meta["upguard.step"], meta["upguard.index"]) == (
        "aten::gelu", "blocks.1.mlp.act", "forward", "2", str(op["index"]))
    # The digests are the ones the trace recorded for this op.
    assert meta["input.0.digest"] == op["inputs"][0]["digest"]
    assert meta["output.0.digest"] == op["outputs"][0]["digest"]
    # And the values are the op's: gelu of the captured input, bit for bit.
    x = torch.from_numpy(tensors["input.0"].copy())
    assert tensors["input.0"].shape == (8, 32, 256)
    assert np.array_equal(torch.nn.functional.gelu(x).numpy(), tensors["output.0"])


def test_capture_stop_ends_the_program_after_the_capture(runs):
    run = runs / "capture_stop"
    result = upguard("record", "-o", run, "--capture", "step=1,index=5,stop", "--", PYTHON,
                     TRAIN, "--quiet", "--steps", "4")
    assert result.returncode == 0, result.stderr
    assert "stopping the program here" in result.stderr
    assert [f.name for f in (run / "captures").iterdir()] == ["rank0.step1.op5.safetensors"]
    steps = [s["step"] for s in show_json(run)["steps"]]
    assert steps == [0, 1]  # steps 2 and 3 never ran


def test_a_bad_selector_is_refused_before_the_program_runs(runs):
    result = upguard("record", "-o", runs / "bad_sel", "--capture", "step=2,layer=3", "--",
                     PYTHON, TRAIN)
    assert result.returncode == 2
    assert "term 'layer=3' has an unknown key" in result.stderr
    assert not (runs / "bad_sel" / "rank0.ugt").exists()


def test_explain_compares_the_culprits_elements(runs, reference):
    candidate = planted(runs, "gelu-tanh")
    result = upguard("diff", reference, candidate, "--explain", "--json", timeout=600)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    explain = report["explain"]
    assert explain["op"] == "aten::gelu"
    assert explain["a"]["step"] == 2 and explain["b"]["step"] == 2
    assert explain["a"]["index"] == report["ranks"][0]["divergence"]["index"]
    assert explain["not_reproduced"] == []
    [self_in] = explain["inputs"]
    assert (self_in["name"], self_in["bitwise_equal"]) == ("self", True)
    [out] = explain["outputs"]
    assert out["bitwise_equal"] is False
    assert out["numel"] == 8 * 32 * 256
    assert 0 < out["differing"] <= out["numel"]
    # tanh-approximated GELU differs from the exact one by well under 1e-3 in absolute terms.
    assert 0 < out["max_abs_error"] < 1e-3
    assert out["summary"].startswith(f"{out['differing']:,} of 65,536 elements differ")
    assert explain["headline"].startswith("inputs identical; output 0: ")
    # The captures are real files in each run's explain directory.
    for side, run in (("a", reference), ("b", candidate)):
        path = Path(explain[side]["capture"])
        assert path.exists() and path.parent == run / "explain" / "captures"


def test_explain_text_report(runs, reference):
    candidate = planted(runs, "gelu-tanh")  # recorded once per session
    result = upguard("diff", reference, candidate, "--explain", timeout=600)
    assert result.returncode == 1, result.stderr
    assert "explain: re-ran both runs to capture aten::gelu" in result.stdout
    assert "input 0 (self)" in result.stdout and "identical: all 65,536 elements" in result.stdout
    assert "=> inputs identical; output 0: " in result.stdout

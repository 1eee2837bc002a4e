"""torch.compile (Inductor on CPU) while recording (python/upguard/_compiled.py, torch 2.x).

The example GPT runs compiled (gpt_train.py --compile model: torch.compile(model); --compile
method: model.compile()). Each call of a compiled graph is one op at the region's boundary
(inductor::forward / inductor::backward) with a digest of the generated code; Inductor's
kernels nest inside it with the source line of the ops fused into them. Nothing dynamo or
Inductor runs while compiling (on fake tensors) is recorded, nor anything Inductor's helper
processes do. Identical compiled runs are identical; a change inside the compiled model is
named at the generated kernel; an eager run against a compiled one says which compiled region
the runs part at; `record --no-compile` runs the same script eagerly, op for op. The same on
torchvision's ResNet-18 with BatchNorm, DataLoader workers and an eval loop (cnn_train.py).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import (MODEL, PYTHON, REPO, TORCH2, diff_json, line_of, only_rank, record,
                      show_json, upguard)

pytestmark = pytest.mark.skipif(not TORCH2, reason="torch.compile needs torch 2.x")

STEPS = ("--steps", "2")  # the plant starts at step 1
_RUNS: Dict[str, Path] = {}


def run(runs: Path, name: str, *train_args: str, cli_args: tuple = ()) -> Path:
    """`name` recorded once per session."""
    if name not in _RUNS:
        _RUNS[name] = record(runs / name, *STEPS, *train_args, cli_args=cli_args)
    return _RUNS[name]


def ops_of(run_dir: Path, step: int) -> List[Dict]:
    return show_json(run_dir, "--step", str(step))["steps"][0]["ops"]


def gelu_site() -> str:
    return f"examples/gpt.py:{line_of(MODEL, 'h = self.act(self.fc(x))')}"


@pytest.mark.parametrize("how", ("model", "method"))
def test_identical_compiled_runs_are_identical(runs, how):
    a = run(runs, f"compiled_{how}_a", "--compile", how)
    b = run(runs, f"compiled_{how}_b", "--compile", how)
    code, report = diff_json(a, b)
    assert (code, report["verdict"]) == (0, "identical")


@pytest.mark.parametrize("how", ("model", "method"))
def test_compiled_regions_are_ops_with_their_kernels_inside(runs, how):
    ops = ops_of(run(runs, f"compiled_{how}_a", "--compile", how), 0)
    names = [op["op"] for op in ops]
    # The compile itself (fake tensors) left no op: one forward and one backward graph ran.
    assert names.count("inductor::forward") == 1 and names.count("inductor::backward") == 1
    forward = ops[names.index("inductor::forward")]
    backward = ops[names.index("inductor::backward")]
    assert (forward["phase"], backward["phase"]) == ("forward", "backward")
    code = [arg for arg in forward["inputs"] if arg["name"] == "generated_code"]
    assert len(code) == 1 and code[0]["kind"] == "scalar" and len(code[0]["text"]) == 18
    # The graph's inputs (the parameters among them) and its outputs are tensors.
    assert all(arg["kind"] == "tensor" for arg in forward["inputs"][:-1])
    assert len(forward["outputs"]) > 1 and all(o["kind"] == "tensor" for o in forward["outputs"])
    # Inductor's kernels run inside the forward region, one level deeper, named without
    # Inductor's running number; the GELU's kernel carries the GELU's source line.
    kernels = [op for op in ops[:names.index("inductor::forward")]
               if op["op"].startswith("inductor::cpp_fused_")]
    assert kernels and all(op["depth"] == forward["depth"] + 1 for op in kernels)
    assert not any(op["op"][-1].isdigit() for op in kernels)
    gelu = [op for op in kernels if op["op"].endswith("_gelu")]
    assert len(gelu) == 2 and all(op["call_site"] == gelu_site() for op in gelu)
    # A kernel's out_ptr arguments are outputs, not read before it runs.
    out_args = [arg for arg in gelu[0]["inputs"] if arg["name"].startswith("out_ptr")]
    assert out_args and all(arg["kind"] == "uninit" for arg in out_args)
    assert [arg["name"] for arg in gelu[0]["outputs"]] == [arg["name"] for arg in out_args]


def test_change_inside_the_compiled_model_is_the_generated_kernel(runs):
    a = run(runs, "compiled_model_a", "--compile", "model")
    b = run(runs, "compiled_model_gelu", "--compile", "model", "--plant", "gelu-tanh",
            "--plant-step", "1")
    code, report = diff_json(a, b)
    assert (code, report["verdict"]) == (1, "culprit")
    divergence = only_rank(report)["divergence"]
    where = (divergence["step"], divergence["phase"], divergence["op"], divergence["call_site"])
    assert where == (1, "forward", "inductor::cpp_fused__unsafe_view_gelu", gelu_site())
    assert divergence["enclosing"][0] == "inductor::forward"


def test_eager_against_compiled_names_the_compiled_region(runs):
    eager = run(runs, "eager_a")
    compiled = run(runs, "compiled_model_a", "--compile", "model")
    code, report = diff_json(eager, compiled)
    assert (code, report["verdict"]) == (1, "structural")
    structural = only_rank(report)["structural"]
    assert (structural["step"], structural["compiled_only"]) == (0, "b")
    assert structural["only_b"][0]["op"] == "Torch-Compiled Region"
    assert structural["only_a"][0]["phase"] == "forward"


def test_no_compile_runs_the_same_script_op_for_op(runs):
    eager = run(runs, "eager_a")
    uncompiled = run(runs, "no_compile_a", "--compile", "model", cli_args=("--no-compile",))
    code, report = diff_json(eager, uncompiled)
    assert (code, report["verdict"]) == (0, "identical")
    names = {op["op"] for op in ops_of(uncompiled, 0)}
    assert not any(name.startswith("inductor::") for name in names)


def record_resnet(run_dir: Path, *args: str) -> Path:
    """torchvision's ResNet-18 (BatchNorm) compiled, batches from a DataLoader with 2 workers,
    an evaluation under no_grad after each step (an inference graph)."""
    result = upguard("record", "-o", run_dir, "--", PYTHON, REPO / "examples" / "cnn_train.py",
                     "--quiet", "--model", "resnet18", "--steps", "2", "--workers", "2",
                     "--eval", "--eval-mode", "no_grad", "--compile", *args, timeout=900)
    assert result.returncode == 0, result.stderr
    return run_dir


def test_compiled_resnet18_identical_and_a_batchnorm_change_named(runs):
    """Real code nobody here wrote: identical runs identical; bn1's eps changed is named at the
    kernel Inductor fused bn1's batch norm into, at torchvision's line."""
    a = record_resnet(runs / "resnet_compiled_a")
    b = record_resnet(runs / "resnet_compiled_b")
    code, report = diff_json(a, b)
    assert (code, report["verdict"]) == (0, "identical")
    # Step 1 begins with the evaluation after step 0's optimizer step.
    names = [op["op"] for op in ops_of(a, 1)]
    assert {"inductor::inference", "inductor::forward", "inductor::backward"} <= set(names)
    planted = record_resnet(runs / "resnet_compiled_eps", "--plant", "bn-eps")
    code, report = diff_json(a, planted)
    assert (code, report["verdict"]) == (1, "culprit")
    divergence = only_rank(report)["divergence"]
    resnet = Path(subprocess.run([PYTHON, "-c", "import torchvision.models.resnet as r; "
                                  "print(r.__file__)"], capture_output=True, text=True,
                                 check=True).stdout.strip())
    site = f"torchvision/models/resnet.py:{line_of(resnet, 'x = self.bn1(x)')}"
    assert (divergence["step"], divergence["phase"]) == (0, "forward")
    assert divergence["op"].startswith("inductor::cpp_fused_")
    assert "batch_norm" in divergence["op"] and divergence["call_site"].endswith(site)
    assert divergence["enclosing"][0] == "inductor::forward"


def test_a_graph_cached_from_another_checkout_names_this_checkouts_lines(runs, tmp_path):
    """Inductor's caches key a graph on its code, not on where the code lives: a second
    checkout of the same project gets the first one's compiled graph back, with the first
    one's paths in its provenance, and their lines. The kernels' call sites are this
    checkout's files, at their lines now: this copy of the model has a line more at its top."""
    run(runs, "compiled_model_a", "--compile", "model")  # the cache holds REPO's paths
    checkout = tmp_path / "other_checkout"
    shutil.copytree(REPO / "examples", checkout / "examples")
    model = checkout / "examples" / "gpt.py"
    model.write_text("# a line added above the model: the cached graph's lines are stale\n" +
                     model.read_text())
    result = upguard("record", "-o", checkout / "run", "--", PYTHON,
                     checkout / "examples" / "gpt_train.py", "--quiet", *STEPS,
                     "--compile", "model", cwd=checkout)
    assert result.returncode == 0, result.stderr
    kernels = [op for op in ops_of(checkout / "run", 0) if op["op"].startswith("inductor::cpp")]
    assert kernels and not any(str(REPO) in op["call_site"] for op in kernels)
    gelu = [op for op in kernels if op["op"].endswith("_gelu")]
    here = f"examples/gpt.py:{line_of(model, 'h = self.act(self.fc(x))')}"
    assert here != gelu_site()
    assert len(gelu) == 2 and all(op["call_site"] == here for op in gelu), gelu

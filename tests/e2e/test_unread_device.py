"""Issue 37, part 1: never IDENTICAL about tensors nobody compared.

A tiny MLP trains with Adam on a stand-in accelerator (tests/device/stand_in_device.cc): a
PrivateUse1 backend whose device memory is host memory and whose kernels run on the CPU with
RecordFunction off, so upguard records every device op, with its tensors unread (shape only),
and none of its kernels, as on a GPU. Two runs whose device memory differs in one weight
element (--nudge, written outside ATen) train to different losses; upguard compared none of
those tensors, so the diff must say that it did not (verdict `unverified`, exit code 3), never
IDENTICAL. The same model on the CPU stays IDENTICAL.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

from conftest import BUILD, PYTHON, TORCH2, show_json, upguard

E2E = Path(__file__).resolve().parent
SCRIPT = E2E / "stand_in_device_train.py"
LIBRARY = BUILD / "tests" / "device" / "libupguard_standin_device.so"
# The device as torch prints it: torch 1.13 cannot rename PrivateUse1.
DEVICE = "standin:0" if TORCH2 else "privateuseone:0"
UNVERIFIED_EXIT = 3


def record_mlp(run_dir: Path, *args: str, cli_args: Tuple[str, ...] = ()) -> str:
    """`upguard record` of the MLP; what it printed."""
    result = upguard("record", "-o", run_dir, *cli_args, "--", PYTHON, SCRIPT, "--device-lib",
                     LIBRARY, *args, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def device_runs(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Dict[str, str]]:
    """Three runs on the device: `a` and `again` alike, `nudged` with one weight changed."""
    assert LIBRARY.exists(), f"{LIBRARY} is missing: it is built with the adapter (upguard_python)"
    root = tmp_path_factory.mktemp("standin")
    printed = {name: record_mlp(root / name, *args)
               for name, args in (("a", ()), ("again", ()), ("nudged", ("--nudge",)))}
    return root, printed


def diff(a: Path, b: Path, *args: str) -> subprocess.CompletedProcess:
    return upguard("diff", a, b, *args)


def tensors(op: Dict) -> List[Dict]:
    return [arg for arg in op["inputs"] + op["outputs"] if "shape" in arg]


def on_device(op: Dict) -> bool:
    """An op with a tensor upguard could not read: on this script, a device tensor."""
    return any(arg["kind"] == "unread" for arg in tensors(op))


def nested(ops: List[Dict]) -> Iterator[Tuple[Dict, Dict]]:
    """(op, the op it ran inside) for every nested op; a step lists an op after those nested in
    it, so the op nested ones belong to is the next one listed with a smaller depth."""
    for idx, op in enumerate(ops):
        for outer in ops[idx + 1:]:
            if outer["depth"] < op["depth"]:
                yield op, outer
                break


# The script's main() once per argument list in one process (one torch import), each run's
# printout after a line "run N".
PLAIN_RUNS = r"""
import json, runpy, sys
script, runs = sys.argv[1], json.loads(sys.argv[2])
for run_idx, args in enumerate(runs):
    print("run", run_idx, flush=True)
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")
"""


def test_the_nudge_changes_the_numbers_and_the_device_computes_as_the_cpu() -> None:
    """Without upguard: one weight element changes every loss; unnudged, the device's losses
    are the CPU's, bit for bit (its kernels are CPU kernels)."""
    base = ["--device-lib", str(LIBRARY), "--print-loss"]
    runs = [base, [*base, "--nudge"], [*base, "--device", "cpu"]]
    result = subprocess.run([PYTHON, "-c", PLAIN_RUNS, SCRIPT, json.dumps(runs)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    printed = result.stdout.split("run ")[1:]
    lines = [[line.split() for line in run.splitlines()[1:]] for run in printed]
    losses = [[words[3] for words in run] for run in lines]  # step N: loss L on D
    devices = [{words[5] for words in run} for run in lines]
    assert devices == [{DEVICE}, {DEVICE}, {"cpu"}]
    device, nudged, cpu = losses
    assert len(device) == 3 and device == cpu
    assert all(a != b for a, b in zip(device, nudged))


def test_device_ops_are_recorded_unread_and_their_kernels_unseen(device_runs) -> None:
    """upguard sees the device ops, forward, backward and optimizer, with shapes only; the
    CPU kernels the fallback runs, and the ops they call, are not recorded at all."""
    root, _ = device_runs
    ops = [op for step in show_json(root / "a")["steps"] for op in step["ops"]]
    device_ops = {(op["phase"], op["op"]) for op in ops if on_device(op)}
    for phase, name in (("forward", "aten::addmm"), ("forward", "aten::relu"),
                        ("forward", "aten::mse_loss"), ("backward", "aten::threshold_backward"),
                        ("backward", "aten::mm"), ("optimizer", "aten::sqrt")):
        assert (phase, name) in device_ops
    for op in ops:
        if op["op"] in ("aten::addmm", "aten::relu", "aten::threshold_backward"):
            # Values unread on the device; an out= buffer is uninit wherever it lies.
            kinds = {arg["kind"] for arg in tensors(op)}
            assert "unread" in kinds and kinds <= {"unread", "uninit"}, op
            assert {(arg["reason"], arg["detail"]) for arg in tensors(op)
                    if arg["kind"] == "unread"} == {("device", DEVICE)}
            assert all(arg["dtype"] == "float32" and arg["shape"] for arg in tensors(op))
    # Each op that runs inside a device op touches the device itself: had the fallback's CPU
    # kernel been recorded, its ops (on readable CPU aliases) would show up nested here.
    inside = [(op, outer) for op, outer in nested(ops) if on_device(outer)]
    assert inside, "no nested device ops: the check below would check nothing"
    # The device's own kernels (stand_in_device.cc registers them for PrivateUse1): an empty
    # result or an out= destination on the device is uninit, not unread, wherever it lies.
    own = {"aten::empty.memory_format", "aten::empty_strided", "aten::_copy_from",
           "aten::_copy_from_and_resize", "aten::empty"}
    for op, outer in inside:  # a kernel run on CPU aliases would read a "tensor" value
        readable = any(arg["kind"] == "tensor" for arg in tensors(op))
        assert on_device(op) or not readable or op["op"] in own, (op["op"], "inside",
                                                                    outer["op"])


def test_differing_runs_on_the_device_are_unverified(device_runs) -> None:
    """Today: IDENTICAL, exit 0, although every loss differs."""
    root, _ = device_runs
    text = diff(root / "a", root / "nudged")
    assert text.returncode == UNVERIFIED_EXIT, text.stdout + text.stderr
    assert "IDENTICAL" not in text.stdout
    headline = [line.strip() for line in text.stdout.splitlines() if line.strip()]
    assert any(line.startswith("UNVERIFIED") for line in headline), text.stdout
    assert DEVICE in text.stdout

    result = diff(root / "a", root / "nudged", "--json")
    assert result.returncode == UNVERIFIED_EXIT, result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "unverified"
    not_compared = report["not_compared"]
    assert not_compared["ops"] > 0 and not_compared["tensors"] > 0
    reasons = not_compared["reasons"]
    assert [(r["reason"], r["detail"]) for r in reasons] == [("device", DEVICE)]
    assert 0 < reasons[0]["ops"] <= not_compared["ops"]
    assert 0 < reasons[0]["tensors"] <= not_compared["tensors"]


def test_alike_runs_on_the_device_are_unverified_too(device_runs) -> None:
    """Same values, yet upguard compared none of them: not IDENTICAL either."""
    root, _ = device_runs
    result = diff(root / "a", root / "again", "--json")
    assert result.returncode == UNVERIFIED_EXIT, result.stdout
    assert json.loads(result.stdout)["verdict"] == "unverified"


def test_record_says_what_it_did_not_digest(device_runs) -> None:
    _, printed = device_runs
    said = [line for line in printed["a"].splitlines() if "were not digested" in line]
    assert len(said) == 1 and DEVICE in said[0], printed["a"]


def test_the_same_model_on_the_cpu_stays_identical(tmp_path: Path) -> None:
    printed = [record_mlp(tmp_path / name, "--device", "cpu") for name in ("a", "b")]
    assert all("were not digested" not in text for text in printed)
    result = diff(tmp_path / "a", tmp_path / "b", "--json")
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["verdict"] == "identical"


def test_online_comparison_says_what_it_could_not_compare(device_runs, tmp_path: Path) -> None:
    """`record --against`: no divergence is found, and it says that was not a comparison of the
    device's tensors (before: only "no divergence from REF")."""
    root, _ = device_runs
    printed = record_mlp(tmp_path / "online", "--nudge", cli_args=("--against", str(root / "a")))
    assert "no divergence from" in printed, printed
    assert "op(s) had tensors upguard did not read" in printed, printed
    assert "not known to match" in printed, printed

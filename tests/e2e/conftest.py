"""End-to-end fixtures: the built `upguard` CLI, the example GPT, recorded runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("UPGUARD_BUILD", REPO / "build" / "release"))
UPGUARD = BUILD / "upguard"
PYTHON = os.environ.get("UPGUARD_TEST_PYTHON", "/usr/bin/python3")  # whose torch is tested
TRAIN = REPO / "examples" / "gpt_train.py"
MODEL = REPO / "examples" / "gpt.py"


def _torch_version() -> Tuple[int, int]:
    out = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__)"],
                         capture_output=True, text=True, check=True).stdout
    major, minor = out.strip().split(".")[:2]
    return int(major), int(minor)


# (major, minor) of the torch under test. Where torch itself decomposes an op differently
# (1.13 runs bmm as a loop of selects, 2.x calls one batched gemm), a test pins the values it
# measured on each version, beside each other.
TORCH_VERSION = _torch_version()
TORCH2 = TORCH_VERSION >= (2, 0)


# `one_torch`: a test whose subject does not depend on the torch that runs the training (the
# machines detector and its agents, the watch monitor against injected faults and across hosts,
# the fault harness, the terminal), or a later case of a matrix whose other cases run on both.
# `make test` runs these on Debian's torch 1.13 only; `make test-all` on both torches.
ONE_TORCH = pytest.mark.one_torch


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "one_torch: runs on one torch in `make test`, on both in `make test-all`")


def line_of(path: Path, text: str) -> int:
    """The 1-based line of the only line of `path` containing `text`."""
    hits = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(hits) == 1, f"{text!r} found {len(hits)} times in {path}"
    return hits[0]


def upguard(*args: str, cwd: Path = REPO, timeout: int = 300,
            env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """`upguard ARGS`; `env` adds to the environment."""
    return subprocess.run([str(UPGUARD), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})


def record(run_dir: Path, *train_args: str, cli_args: Tuple[str, ...] = ()) -> Path:
    """`upguard record` of the example GPT (4 steps unless train_args say otherwise)."""
    result = upguard("record", "-o", run_dir, *cli_args, "--", PYTHON, TRAIN, "--quiet",
                     "--steps", "4", *train_args)
    assert result.returncode == 0, result.stderr
    return run_dir


def diff_json(a: Path, b: Path) -> Tuple[int, Dict]:
    result = upguard("diff", a, b, "--json")
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def only_rank(report: Dict) -> Dict:
    """The one rank of a single-process diff report."""
    assert len(report["ranks"]) == 1
    return report["ranks"][0]


def show_json(run: Path, *args: str) -> Dict:
    result = upguard("show", run, "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert UPGUARD.exists(), f"build upguard first ({UPGUARD} is missing): make build"
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="session")
def reference(runs: Path) -> Path:
    return record(runs / "reference")


_PLANTED: Dict[Path, Path] = {}


def planted(runs: Path, plant: str, *train_args: str) -> Path:
    """The example GPT recorded with `plant`: once per session, shared by every test asking."""
    name = "_".join([plant, *(arg.lstrip("-") for arg in train_args)])
    run_dir = runs / name
    if run_dir not in _PLANTED:
        _PLANTED[run_dir] = record(run_dir, "--plant", plant, *train_args)
    return _PLANTED[run_dir]


__all__: List[str] = ["REPO", "TRAIN", "MODEL", "PYTHON", "TORCH_VERSION", "TORCH2", "line_of",
                      "upguard", "record", "diff_json", "show_json", "planted"]
sys.path.insert(0, str(Path(__file__).parent))

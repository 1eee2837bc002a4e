"""`upguard record` loads the adapter built for the torch of the command's interpreter.

No fitting adapter is one clear error with exit code 2 before the command runs (the CLI,
src/cli/adapter_select.h), or, for a command whose interpreter the CLI cannot see, as soon as the
program imports torch (the bootstrap, python/upguard/_build_check.py). Never a crash, never a
program that runs on unrecorded.

A made-up torch 9.9.9 (a package and its dist-info on PYTHONPATH) plays "another torch" in the
tests that need no second torch; the torch 2.x venv (`make venv-torch2`,
UPGUARD_TORCH2_PYTHON) is used where it is there.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD, PYTHON, REPO, show_json, upguard

TORCH2_PYTHON = Path(os.environ.get("UPGUARD_TORCH2_PYTHON", REPO / ".venv-torch2/bin/python"))
BUILT_FOR = json.loads((BUILD / "python/upguard/_build_info.json").read_text())

# Writes a file when it runs: the proof that it ran.
SCRIPT = """
import pathlib, sys
pathlib.Path(sys.argv[1]).write_text("ran")
import torch
"""

TRAIN = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
"""


@pytest.fixture
def fake_torch(tmp_path: Path) -> dict:
    """An environment whose PYTHONPATH holds a torch 9.9.9 (with its metadata), which no
    adapter is built for."""
    site = tmp_path / "fake_site"
    (site / "torch").mkdir(parents=True)
    (site / "torch/__init__.py").write_text("__version__ = '9.9.9'\n")
    (site / "torch-9.9.9.dist-info").mkdir()
    (site / "torch-9.9.9.dist-info/METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 9.9.9\n")
    return dict(os.environ, PYTHONPATH=str(site))


def record(tmp_path: Path, *command: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(BUILD / "upguard"), "record", "-o", str(tmp_path / "run"), "--",
                           *command], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


def assert_names_the_fix(stderr: str, python: str) -> None:
    assert f"make -C {REPO} build PYTHON={python}" in stderr, stderr
    assert f"pip install --no-build-isolation {REPO}" in stderr, stderr


def test_a_torch_no_adapter_is_built_for_stops_before_the_command_runs(tmp_path, fake_torch):
    (tmp_path / "script.py").write_text(SCRIPT)
    result = record(tmp_path, PYTHON, "script.py", str(tmp_path / "ran"), env=fake_torch)
    assert result.returncode == 2, result.stderr
    assert f"upguard record: {PYTHON} runs torch 9.9.9 (cpython-" in result.stderr
    assert f"torch {BUILT_FOR['torch_version']} for {BUILT_FOR['python']}" in result.stderr
    assert_names_the_fix(result.stderr, PYTHON)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # one error
    assert not (tmp_path / "ran").exists()  # the command never ran
    assert not (tmp_path / "run").exists()


def test_the_interpreter_of_a_console_script_is_read_from_its_shebang(tmp_path, fake_torch):
    launcher = tmp_path / "train-launcher"
    launcher.write_text(f"#!/usr/bin/env {Path(PYTHON).name}\n" + SCRIPT)
    launcher.chmod(0o755)
    fake_torch["PATH"] = f"{tmp_path}:{Path(PYTHON).parent}:{os.environ.get('PATH', '')}"
    result = record(tmp_path, "train-launcher", str(tmp_path / "ran"), env=fake_torch)
    assert result.returncode == 2, result.stderr
    assert "runs torch 9.9.9" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_the_bootstrap_stops_a_command_whose_interpreter_cannot_be_seen(tmp_path, fake_torch):
    """A shell line hides the python from the CLI: the bootstrap checks when torch is imported,
    and stops the program there (exit code 2) instead of letting it run unrecorded."""
    (tmp_path / "script.py").write_text("import torch, pathlib, sys\n"
                                        "pathlib.Path(sys.argv[1]).write_text('ran')\n")
    result = record(tmp_path, "/bin/sh", "-c", f"{PYTHON} script.py {tmp_path / 'ran'}",
                    env=fake_torch)
    assert result.returncode == 2, result.stderr
    assert "upguard: this program runs torch 9.9.9" in result.stderr
    assert f"built for torch {BUILT_FOR['torch_version']}" in result.stderr
    assert_names_the_fix(result.stderr, os.path.abspath(PYTHON))
    assert "stopped before the program ran unrecorded" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_import_upguard_under_another_torch_is_an_import_error(tmp_path, fake_torch):
    fake_torch["PYTHONPATH"] = f"{BUILD / 'python'}:{fake_torch['PYTHONPATH']}"
    result = subprocess.run([PYTHON, "-c", "import upguard"], env=fake_torch,
                            capture_output=True, text=True)
    assert result.returncode == 1, result.stderr  # not a crash (a signal)
    assert "ImportError: upguard: this program runs torch 9.9.9" in result.stderr


@pytest.mark.skipif(not TORCH2_PYTHON.exists(),
                    reason=f"no torch 2.x venv at {TORCH2_PYTHON} (make venv-torch2)")
@pytest.mark.skipif(BUILT_FOR["torch_version"].startswith("2."),
                    reason="this build is the torch 2.x one (test-e2e-torch2)")
def test_the_torch2_venv_with_only_the_debian_adapter_is_refused(tmp_path):
    """UPGUARD_PYTHONPATH names the only adapter to try: this build's (Debian's torch 1.13)."""
    env = dict(os.environ, UPGUARD_PYTHONPATH=str(BUILD / "python"))
    (tmp_path / "script.py").write_text(SCRIPT)
    result = record(tmp_path, str(TORCH2_PYTHON), "script.py", str(tmp_path / "ran"), env=env)
    assert result.returncode == 2, result.stderr
    assert f"{TORCH2_PYTHON} runs torch 2." in result.stderr
    assert f"torch {BUILT_FOR['torch_version']} for {BUILT_FOR['python']}" in result.stderr
    assert "UPGUARD_PYTHONPATH" in result.stderr
    assert_names_the_fix(result.stderr, str(TORCH2_PYTHON))
    assert not (tmp_path / "ran").exists()


def torch2_builds() -> list:
    """Build directories beside this one with an adapter for torch 2.x (make build-torch2, or
    the build directory of `make test-pip-torch2`)."""
    found = []
    for info in sorted(BUILD.parent.glob("*/python/upguard/_build_info.json")):
        if json.loads(info.read_text())["torch_version"].startswith("2."):
            found.append(info.parents[2])
    return found


@pytest.mark.skipif(not TORCH2_PYTHON.exists() or not torch2_builds(),
                    reason="no torch 2.x venv, or no torch 2.x build beside this one "
                           "(make build-torch2)")
def test_a_build_beside_this_one_records_the_torch2_venv(tmp_path):
    """This (torch 1.13) binary records the torch 2.x venv's command with the adapter built
    for it in the sibling build directory."""
    (tmp_path / "train.py").write_text(TRAIN)
    env = {k: v for k, v in os.environ.items() if k != "UPGUARD_PYTHONPATH"}
    result = record(tmp_path, str(TORCH2_PYTHON), "train.py", env=env)
    assert result.returncode == 0, result.stderr
    shown = show_json(tmp_path / "run")
    assert shown["meta"]["torch_version"].startswith("2."), shown["meta"]
    assert len(shown["steps"][0]["ops"]) > 5

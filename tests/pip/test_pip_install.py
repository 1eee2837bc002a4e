"""`pip install --no-build-isolation .` in a venv builds upguard for that venv's torch and
installs the package and the `upguard` command, which then records a training there.

Run by `make test-pip-torch2` (in the torch 2.x venv's python): the venv installed into is a
throwaway one, UPGUARD_PIP_VENV, that sees the torch 2.x venv's packages through a .pth file,
so torch is never installed again and the torch 2.x venv is left as it was. The venv and the
build directory (build/pip-<wheel tag>) are kept between runs: a second run rebuilds nothing
that did not change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("UPGUARD_PIP_VENV", REPO / "build/pip-venv-torch2"))
TORCH2_PYTHON = Path(os.environ.get("UPGUARD_TORCH2_PYTHON", sys.executable))
SKBUILD_PIN = os.environ.get("UPGUARD_SKBUILD_PIN", "scikit-build-core==1.1.2")
PYTHON = VENV / "bin/python"
UPGUARD = VENV / "bin/upguard"

TRAIN = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(torch.randn(4, 8)).pow(2).mean().backward()
    opt.step()
"""

# Nothing of the caller's may point the installed command at another package.
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "UPGUARD_PYTHONPATH", "UPGUARD_PYTHON")}


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("env", CLEAN_ENV)
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{args}\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def purelib(python: Path) -> str:
    return run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip()


@pytest.fixture(scope="module")
def installed() -> Path:
    if not TORCH2_PYTHON.exists():
        pytest.skip(f"no torch 2.x venv at {TORCH2_PYTHON} (make venv-torch2)")
    if not PYTHON.exists():
        run(TORCH2_PYTHON, "-m", "venv", VENV)
        site = purelib(PYTHON)
        torch2_site = purelib(TORCH2_PYTHON)
        # After the venv's own site-packages: what pip installs here wins.
        Path(site, "upguard_torch2_packages.pth").write_text(torch2_site + "\n")
        run(PYTHON, "-m", "pip", "install", "--quiet", SKBUILD_PIN)
    started = time.monotonic()
    run(PYTHON, "-m", "pip", "install", "--no-build-isolation", "--quiet", REPO, cwd=REPO,
        timeout=1800)
    print(f"pip install: {time.monotonic() - started:.0f} s")
    return VENV


def test_the_installed_adapter_is_built_for_the_venvs_torch(installed):
    info = json.loads(run(PYTHON, "-c",
                          "import importlib.resources as r; "
                          "print(r.files('upguard').joinpath('_build_info.json').read_text())")
                      .stdout)
    assert info["torch_version"] == run(PYTHON, "-c", "import torch; print(torch.__version__)").stdout.strip()
    assert info["torch_version"].startswith("2.")
    assert info["python"] == str(PYTHON)
    where = run(PYTHON, "-c", "import torch, upguard, upguard._C; print(upguard.__file__)",
                cwd="/").stdout.strip()
    assert where.startswith(str(VENV / "lib")), where


def test_the_installed_command_records_a_training(installed, tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    result = run(UPGUARD, "record", "-o", "runs/a", "--", PYTHON, "train.py", cwd=tmp_path)
    assert "wrote runs/a" in result.stderr
    shown = json.loads(run(UPGUARD, "show", tmp_path / "runs/a", "--json").stdout)
    assert shown["meta"]["torch_version"].startswith("2."), shown["meta"]
    assert len(shown["steps"]) >= 3
    assert any(op["op"] == "aten::addmm" for op in shown["steps"][0]["ops"])


def test_the_installed_command_finds_its_package_without_seeing_the_python(installed, tmp_path):
    """A shell line hides the interpreter: the command's own package (site-packages beside
    its bin/) is loaded, as for a build tree."""
    (tmp_path / "train.py").write_text(TRAIN)
    run(UPGUARD, "record", "-o", "runs/b", "--", "/bin/sh", "-c", f"{PYTHON} train.py",
        cwd=tmp_path)
    shown = json.loads(run(UPGUARD, "show", tmp_path / "runs/b", "--json").stdout)
    assert len(shown["steps"]) >= 3

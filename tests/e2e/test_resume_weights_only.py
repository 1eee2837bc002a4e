"""Issue 37, part 3: resume snapshots load with torch.load(weights_only=True).

`diff --zoom` resumes a re-run from RUN/resume/step-<S>.rank<R>.pt, a file in a run directory
that may come from anyone: unpickled in full, it runs whatever code it names. A snapshot that
upguard.resume_point writes (a model with BatchNorm, Adam, a OneCycleLR, numpy's, Python's and
torch's generators) must load with weights_only=True and restore every state exactly; a crafted
snapshot whose pickle calls os.system must be refused with a clear error, its code never run.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Dict

from conftest import BUILD, PYTHON

# Three steps, a snapshot as each of steps 1 and 2 begins; at step 2 (not skipped) prints what
# every state and generator holds (resumed: after loading step 2's snapshot).
TRAIN = r"""
import json, random, sys
import numpy as np, torch, upguard

run, resume_from = sys.argv[1], sys.argv[2] or None
torch.manual_seed(0); np.random.seed(0); random.seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
# torch 1.13's OneCycleLR keeps a bound method in its state_dict (left out of the snapshot).
schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=10)
state = {"model": model, "optimizer": optimizer, "schedule": schedule,
         "np": np.random.RandomState(1),
         "rng": np.random.default_rng(2), "py": random.Random(3),
         "gen": torch.Generator().manual_seed(4)}
with upguard.record(run, resume_from=resume_from):
    for step in range(3):
        if upguard.resume_point(step, state, every=1):
            continue
        if step == 2:
            print(json.dumps({
                "params": [p.double().sum().item() for p in model.state_dict().values()],
                "adam": [float(s["exp_avg_sq"].double().sum()) for s in optimizer.state.values()],
                "lr": optimizer.param_groups[0]["lr"], "betas": optimizer.param_groups[0]["betas"],
                "np": int(state["np"].randint(1 << 30)), "rng": int(state["rng"].integers(1 << 30)),
                "py": state["py"].random(), "gen": torch.rand(1, generator=state["gen"]).item(),
                "np_global": float(np.random.standard_normal()), "py_global": random.random(),
                "torch_global": torch.rand(1).item()}))
        loss = model(torch.randn(8, 4)).pow(2).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        schedule.step()
"""

# A snapshot whose unpickling would run a command: the marker file shows whether it did.
CRAFT = r"""
import os, sys, torch
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
torch.save({"format": "upguard.resume/2", "step": 1, "recorder_step": 1,
            "state": {"model": Payload()}, "generators": {}}, sys.argv[1])
"""


def run_python(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(BUILD / "python")}
    return subprocess.run([PYTHON, *args], capture_output=True, text=True, timeout=300, env=env)


def step_two(result: subprocess.CompletedProcess) -> Dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_snapshot_loads_with_weights_only_and_restores_every_state(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    recorded = step_two(run_python(str(tmp_path / "train.py"), str(tmp_path / "run"), ""))
    snapshot = tmp_path / "run" / "resume" / "step-2.rank0.pt"
    assert snapshot.exists(), sorted((tmp_path / "run").rglob("*"))
    load = run_python("-c", "import sys, torch; torch.load(sys.argv[1], weights_only=True)",
                      str(snapshot))
    assert load.returncode == 0, load.stderr
    resumed = step_two(run_python(str(tmp_path / "train.py"), str(tmp_path / "resumed"),
                                  str(tmp_path / "run" / "resume" / "step-2")))
    assert resumed == recorded


def test_crafted_snapshot_is_refused_and_its_code_never_runs(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "craft.py").write_text(CRAFT)
    marker = tmp_path / "pwned"
    (tmp_path / "evil" / "resume").mkdir(parents=True)
    crafted = run_python(str(tmp_path / "craft.py"),
                         str(tmp_path / "evil" / "resume" / "step-1.rank0.pt"), str(marker))
    assert crafted.returncode == 0, crafted.stderr
    result = run_python(str(tmp_path / "train.py"), str(tmp_path / "resumed"),
                        str(tmp_path / "evil" / "resume" / "step-1"))
    assert not marker.exists(), "the snapshot's pickle ran its command"
    assert "refused to load the snapshot" in result.stderr, result.stderr
    assert "unpickling those could run any code" in result.stderr, result.stderr

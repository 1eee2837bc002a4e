"""Run by test_fingerprint.py with "full" or "fingerprint": each optimizer step ends one step
alike in a recording in full (the recorder's scope callback) and in a fingerprint recording
(upguard/_optimizer.py: no callback there), also through a learning-rate scheduler made before
recording began and one made while recording, which keep working without a warning; when
recording stops, torch's record_function is its own again. A function using record_function
scripted while recording compiles and runs. Prints "STEPS <the step at each iteration's
start>", "SCRIPTED <its result>" and "RESTORED <bool>"."""

from __future__ import annotations

import sys
import tempfile
import warnings

import torch

import upguard
from upguard import _C

warnings.simplefilter("error")  # a scheduler's "optimizer.step() overridden" warning fails it
warnings.filterwarnings("ignore", message=".*torch.jit.script.*deprecated")  # torch 2.x
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
first = torch.optim.SGD(model[0].parameters(), lr=0.1)
before = torch.optim.lr_scheduler.StepLR(first, step_size=2)
with upguard.record(tempfile.mkdtemp(), fingerprint=sys.argv[1] == "fingerprint"):
    second = torch.optim.Adam(model[2].parameters(), lr=0.01)
    during = torch.optim.lr_scheduler.StepLR(second, step_size=2)
    @torch.jit.script
    def scripted(x: torch.Tensor) -> torch.Tensor:
        with torch.autograd.profiler.record_function("scripted"):
            y = x * 2
        return y

    print("SCRIPTED", scripted(torch.ones(2)).tolist())
    starts = []
    for _ in range(5):
        starts.append(_C.current_step())
        loss = model(torch.randn(4, 8)).square().mean()
        first.zero_grad()
        second.zero_grad()
        loss.backward()
        first.step()  # a step ends here
        second.step()  # and another here
        before.step()
        during.step()
print("STEPS", " ".join(map(str, starts)))
print("RESTORED", not any(hasattr(method, "__wrapped__") for method in (
    torch.autograd.profiler.record_function.__enter__,
    torch.autograd.profiler.record_function.__exit__)))

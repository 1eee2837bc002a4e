"""Recording under torchrun (issue 6, part 1): the documented command works out of the box
(upguard works around Debian torch 1.13's launcher bug under Python 3.11), the launcher itself
records nothing, and each worker writes its own rank's trace into the one run directory."""

from __future__ import annotations

import json

from conftest import PYTHON, REPO, show_json, upguard

DDP = REPO / "examples" / "gpt_ddp.py"


def test_torchrun_writes_one_trace_per_rank(runs):
    run = runs / "ddp2"
    result = upguard("record", "-o", run, "--", PYTHON, "-m", "torch.distributed.run",
                     "--nproc_per_node=2", DDP, "--quiet", "--steps", "2", timeout=300)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in run.iterdir() if p.suffix == ".ugt") == ["rank0.ugt",
                                                                         "rank1.ugt"]
    meta = json.loads((run / "meta.json").read_text())
    assert meta["world_size"] == 2
    assert meta["launcher_argv"][1:4] == ["-m", "torch.distributed.run", "--nproc_per_node=2"]
    for rank in (0, 1):
        shown = show_json(run, "--rank", str(rank))
        assert [s["step"] for s in shown["steps"]] == [0, 1]
        ops = [op["op"] for step in shown["steps"] for op in step["ops"]]
        assert "upguard::batch" in ops and "aten::embedding" in ops

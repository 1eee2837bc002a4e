"""Recording itself: it never changes the training, the Python API, filters, and safety."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

from conftest import BUILD, PYTHON, REPO, TRAIN, diff_json, show_json, upguard

ENV = dict(os.environ, PYTHONPATH=str(BUILD / "python"))

BITWISE_EQUAL = """
import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert a.keys() == b.keys() and len(a) > 10
for name in a:
    assert a[name].dtype == torch.float32
    assert torch.equal(a[name].view(torch.int32), b[name].view(torch.int32)), name
print("bitwise equal:", len(a), "tensors")
"""


def test_recording_does_not_change_the_final_parameters(tmp_path):
    plain = tmp_path / "plain.pt"
    traced = tmp_path / "traced.pt"
    subprocess.run([PYTHON, TRAIN, "--quiet", "--steps", "4", "--save", plain], check=True)
    result = upguard("record", "-o", tmp_path / "run", "--", PYTHON, TRAIN, "--quiet",
                     "--steps", "4", "--save", traced)
    assert result.returncode == 0, result.stderr
    check = subprocess.run([PYTHON, "-c", BITWISE_EQUAL, plain, traced], capture_output=True,
                           text=True)
    assert check.returncode == 0, check.stderr
    assert "bitwise equal" in check.stdout


def run_script(tmp_path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run([PYTHON, script], cwd=tmp_path, env=ENV, capture_output=True,
                          text=True, timeout=300)


def test_python_api_steps_depth_and_explicit_step_marks(tmp_path):
    result = run_script(tmp_path, """
        import torch, upguard
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with upguard.record("run", steps="1:3", max_depth=0) as rec:
            for step in range(4):
                loss = model(torch.ones(2, 4)).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                upguard.step()
        print(rec.ops_recorded)
        """)
    assert result.returncode == 0, result.stderr
    shown = show_json(tmp_path / "run")
    assert [s["step"] for s in shown["steps"]] == [1, 2]
    ops = [op for s in shown["steps"] for op in s["ops"]]
    assert int(result.stdout.strip()) == len(ops) > 0
    assert all(op["depth"] == 0 for op in ops)
    linear = [op for op in ops if op["op"] == "aten::linear"]
    assert [op["module"] for op in linear[:2]] == ["0", "2"]
    assert linear[0]["call_site"] == "script.py:8"  # the `loss = model(...)` line
    assert shown["meta"]["record_options"]["max_depth"] == 0


def test_op_filter_and_no_stats(tmp_path):
    result = upguard("record", "-o", tmp_path / "run", "--ops", "aten::gelu,aten::*mm",
                     "--no-stats", "--steps", "0", "--", PYTHON, TRAIN, "--quiet", "--steps", "2")
    assert result.returncode == 0, result.stderr
    shown = show_json(tmp_path / "run")
    names = {op["op"] for s in shown["steps"] for op in s["ops"]}
    assert names == {"aten::gelu", "aten::addmm", "aten::mm", "aten::bmm"}
    assert [s["step"] for s in shown["steps"]] == [0]


def test_dataloader_workers_do_not_write_into_the_trace(tmp_path):
    result = run_script(tmp_path, """
        import torch, upguard
        data = torch.utils.data.TensorDataset(torch.arange(64.).view(16, 4))
        loader = torch.utils.data.DataLoader(data, batch_size=4, num_workers=2)
        with upguard.record("run"):
            for (batch,) in loader:
                (batch * 2).sum()
                upguard.step()
        """)
    assert result.returncode == 0, result.stderr
    shown = show_json(tmp_path / "run")
    assert shown["complete"] is True
    # Four marked steps each hold the batch's mul and sum; ops after the last mark (the
    # loader's end of iteration) form a final partial step.
    for step in shown["steps"][:4]:
        assert [op["op"] for op in step["ops"] if op["depth"] == 0][-2:] == ["aten::mul",
                                                                             "aten::sum"]
    code, report = diff_json(tmp_path / "run", tmp_path / "run")
    assert code == 0


def test_record_passes_the_exit_code_and_keeps_the_prefix_of_a_crash(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent("""
        import os, torch
        x = torch.ones(3)
        for step in range(3):
            x = x * 2
            torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1).step()
        os._exit(3)
        """))
    result = upguard("record", "-o", tmp_path / "run", "--", PYTHON, script)
    assert result.returncode == 3
    shown = show_json(tmp_path / "run")
    assert shown["complete"] is False
    assert len(shown["steps"]) >= 1


def test_a_program_that_imports_upguard_before_torch_is_recorded(tmp_path):
    """upguard's own import imports torch: the recording starts once upguard is imported."""
    script = tmp_path / "upguard_first.py"
    script.write_text(textwrap.dedent("""
        import upguard
        import torch
        x = torch.ones(3)
        for step in range(2):
            y = torch.nn.functional.gelu(x * 2)
            upguard.step()
        """))
    result = upguard("record", "-o", tmp_path / "run", "--", PYTHON, script)
    assert result.returncode == 0, result.stderr
    assert "could not start" not in result.stderr
    shown = show_json(tmp_path / "run")
    assert [s["step"] for s in shown["steps"]] == [0, 1]
    assert "aten::gelu" in [op["op"] for op in shown["steps"][1]["ops"]]


def test_a_program_that_never_imports_torch_is_reported(tmp_path):
    result = upguard("record", "-o", tmp_path / "run", "--", PYTHON, "-c", "print('hi')")
    assert result.returncode == 2
    assert "recorded nothing" in result.stderr


def test_recording_again_into_a_run_needs_overwrite_and_keeps_user_files(tmp_path):
    """The recorder writes into DIR/.upguard-record-<pid>; the run is moved into DIR at the end,
    meta.json still naming the command (not the staging directory)."""
    run = tmp_path / "run"
    args = ("--", PYTHON, TRAIN, "--quiet", "--steps", "2")
    assert upguard("record", "-o", run, *args).returncode == 0
    (run / "notes.txt").write_text("mine")
    first = (run / "rank0.ugt").read_bytes()
    refused = upguard("record", "-o", run, *args)
    assert refused.returncode == 2 and "--overwrite" in refused.stderr
    assert (run / "rank0.ugt").read_bytes() == first
    never = upguard("record", "-o", run, "--overwrite", "--", PYTHON, "-c", "pass")
    assert never.returncode == 2 and "left as it was" in never.stderr
    assert (run / "rank0.ugt").read_bytes() == first
    again = upguard("record", "-o", run, "--overwrite", "--steps", "1", *args)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in run.iterdir()) == ["meta.json", "notes.txt", "rank0.ugt"]
    meta = json.loads((run / "meta.json").read_text())
    assert meta["argv"][1:] == [str(TRAIN), "--quiet", "--steps", "2"]
    assert ".upguard-record" not in json.dumps(meta)
    assert [s["step"] for s in show_json(run)["steps"]] == [1]


def test_digest_cache_sees_every_write(tmp_path):
    """Digests are reused only while a tensor's storage is unwritten: an in-place op, a write
    through .data (its own version counter), and an out= op must all show new values."""
    result = run_script(tmp_path, """
        import torch, upguard
        x = torch.ones(64)
        out = torch.empty(64)
        with upguard.record("run", max_depth=0):
            torch.mul(x, 2)            # x hashed, cached
            torch.mul(x, 2)            # cache hit: same digest
            x.add_(1)                  # in-place
            torch.mul(x, 2)
            x.data.mul_(3)             # through .data
            torch.mul(x, 2)
            torch.add(x, 1, out=x)     # out= into x itself
            torch.mul(x, 2)
            torch.add(x.view(8, 8), 0, out=out.view(8, 8))  # writes out's storage via a view
            torch.mul(out, 2)
        """)
    assert result.returncode == 0, result.stderr
    ops = show_json(tmp_path / "run")["steps"][0]["ops"]
    muls = [op for op in ops if op["op"] == "aten::mul"]
    x_digests = [op["inputs"][0]["digest"] for op in muls[:5]]
    assert x_digests[0] == x_digests[1]
    assert len(set(x_digests[1:])) == 4, x_digests
    # The last mul reads `out`, written through a view: its digest is that of x + 0 as [64].
    assert muls[5]["inputs"][0]["digest"] == muls[4]["inputs"][0]["digest"]

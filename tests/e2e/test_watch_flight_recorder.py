"""PyTorch Flight Recorder dumps through `python3 -m upguard.flight_recorder` (dump -> watch
rings -> `upguard watch --analyze`): the same findings as a watched run, from dumps people
already have.

Two kinds of dumps:
- checked in (tests/data/flight_recorder/hang_rank*, from a real torch 2.15 run of
  examples/gpt_ddp.py --plant hang --plant-step 3 under fr_dump.py, pickled and JSON): read
  under any torch, with a fixed dump time, so the report is exact;
- made here by real torchrun runs (gloo on CPU) with torch's own `_dump_fr_trace_file`: a hang
  and a size mismatch. They need a torch whose gloo records into the Flight Recorder (2.x);
  Debian's torch 1.13 has none, and those tests skip.

The rings the converter writes are read back by the spec-only reader (tests/faults/ring.py)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BUILD, PYTHON, REPO, UPGUARD, line_of

sys.path.insert(0, str(REPO / "tests" / "faults"))
import ring  # noqa: E402

DATA = REPO / "tests" / "data" / "flight_recorder"
DDP = REPO / "examples" / "gpt_ddp.py"
MISMATCH = REPO / "tests" / "e2e" / "fr_mismatch.py"
WRAPPER = REPO / "tests" / "e2e" / "fr_dump.py"
# The checked-in hang: rank 0 issued seq 9 at ...906037197 ns; the dump is looked at 8 s later.
HANG_DUMP_NS = 1796358416906037197 + 8_000_000_000


def converter(*args: object, timeout: int = 120) -> subprocess.CompletedProcess:
    for name in ("flight_recorder.py", "_fr_dump.py", "_ring_file.py"):
        built, source = BUILD / "python" / "upguard" / name, REPO / "python" / "upguard" / name
        assert built.exists() and built.read_bytes() == source.read_bytes(), \
            f"{built} is missing or stale: rebuild (make build copies python/upguard)"
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    return subprocess.run([PYTHON, "-m", "upguard.flight_recorder", *map(str, args),
                           "--upguard", str(UPGUARD)], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=timeout)


def golden(tmp_path: Path, *names: str) -> list:
    """Copies of checked-in dumps whose modification time is the dump time."""
    out = []
    for name in names:
        copy = tmp_path / "dumps" / name
        copy.parent.mkdir(exist_ok=True)
        shutil.copyfile(DATA / name, copy)
        os.utime(copy, ns=(HANG_DUMP_NS, HANG_DUMP_NS))
        out.append(copy)
    return out


def test_golden_hang_names_the_rank_that_never_issued_it(tmp_path):
    result = converter(*golden(tmp_path, "hang_rank0", "hang_rank1"), "-o", tmp_path / "run")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "upguard watch: 2 ranks, 1 finding"
    assert lines[1] == (
        "  STALL rank 1 (python): rank 0 waits 8.0 s in it; rank 1 never issued it: it runs "
        "Python code and no op for 8.0 s at step 0 [allreduce float32[105472] in group 0, seq 9 "
        "(examples/gpt_ddp.py:145)]")
    assert "2 dumps (version 2.10) of 2 ranks" in result.stderr
    # The rings, read by the second reader of the format.
    mine = [ring.read(str(tmp_path / "run" / "watch" / f"rank{r}.ring")) for r in (0, 1)]
    assert [r.rank for r in mine] == [0, 1] and all(r.closed for r in mine)
    assert [s.seq for s in mine[0].slots] == list(range(1, 10))
    assert [s.seq for s in mine[1].slots] == list(range(1, 9))
    assert [s.state for s in mine[0].slots] == [3] * 8 + [1]  # completed..., issued
    assert [s.op for s in mine[0].slots][:4] == ["allgather", "broadcast", "broadcast",
                                                 "allreduce"]
    last = mine[0].slots[-1]
    assert (last.op, last.dtype, last.count, last.call_site) == \
        ("allreduce", "float32", 105472, "examples/gpt_ddp.py:145")
    assert mine[0].realtime(mine[0].slots[-1].issued_ns) == pytest.approx(
        (HANG_DUMP_NS - 8e9) / 1e9)


def test_golden_json_dumps_make_the_same_rings(tmp_path):
    pickled = converter(*golden(tmp_path, "hang_rank0", "hang_rank1"), "-o", tmp_path / "p",
                        "--convert-only")
    jsoned = converter(*golden(tmp_path, "hang_rank0.json", "hang_rank1.json"), "-o",
                       tmp_path / "j", "--json")
    assert pickled.returncode == 0 and jsoned.returncode == 1, pickled.stderr + jsoned.stderr
    for rank in (0, 1):
        a = ring.read(str(tmp_path / "p" / "watch" / f"rank{rank}.ring"))
        b = ring.read(str(tmp_path / "j" / "watch" / f"rank{rank}.ring"))
        fields = lambda s: (s.seq, s.state, s.op, s.dtype, s.count, s.issued_ns, s.completed_ns)
        assert [fields(s) for s in a.slots] == [fields(s) for s in b.slots]
        assert all(s.call_site == "" for s in b.slots)  # torch's JSON dump has no frames
    finding, = json.loads(jsoned.stdout)["findings"]
    assert (finding["trigger"], finding["ranks"], finding["cause"]) == ("stall", [1], "python")
    assert finding["collective"] == "allreduce float32[105472] in group 0, seq 9"


def test_golden_missing_dump_is_a_rank_without_record(tmp_path):
    result = converter(*golden(tmp_path, "hang_rank0"), "-o", tmp_path / "run", "--json")
    assert result.returncode == 1, result.stderr
    finding, = json.loads(result.stdout)["findings"]
    assert (finding["trigger"], finding["ranks"], finding["cause"]) == ("stall", [1], "no_ring")
    assert "rank 1 left no dump among these: it has no record" in result.stderr


def test_unknown_version_and_missing_field_are_named(tmp_path):
    dump = json.loads((DATA / "hang_rank0.json").read_text())
    dump["version"] = "3.0"
    (tmp_path / "v_rank0.json").write_text(json.dumps(dump))
    result = converter(tmp_path / "v_rank0.json", "-o", tmp_path / "run")
    assert result.returncode == 2
    assert f"{tmp_path}/v_rank0.json: Flight Recorder dump version '3.0'" in result.stderr
    dump["version"] = "2.10"
    del dump["entries"][4]["time_created_ns"]
    (tmp_path / "f_rank0.json").write_text(json.dumps(dump))
    result = converter(tmp_path / "f_rank0.json", "-o", tmp_path / "run")
    assert result.returncode == 2
    assert "entry 4 has no field 'time_created_ns' (dump version 2.10)" in result.stderr


def _records_gloo() -> bool:
    probe = "import torch._C._distributed_c10d as c; print(hasattr(c, '_dump_fr_trace_file'))"
    out = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True).stdout
    return out.strip() == "True"


live = pytest.mark.skipif(not _records_gloo(), reason="this torch has no Flight Recorder for "
                          "gloo (_dump_fr_trace_file); the live dumps need torch 2.x")


def dumped_run(tmp_path: Path, after: float, *script: object) -> Path:
    """torchrun (2 ranks, gloo) of `script` under fr_dump.py; returns the dumps' folder once
    every rank dumped, the job stopped."""
    dumps, done = tmp_path / "dumps", tmp_path / "done"
    dumps.mkdir()
    env = dict(os.environ, TORCH_FR_DUMP_TEMP_FILE=str(dumps / "rank"))
    env.pop("PYTHONPATH", None)
    log = tmp_path / "torchrun.log"
    with open(log, "w") as out:
        job = subprocess.Popen([PYTHON, "-m", "torch.distributed.run", "--nproc_per_node=2",
                                WRAPPER, "--after", str(after), "--done", done, "--", *script],
                               cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=True)
    dumped = lambda: all((done / f"rank{r}").exists() for r in (0, 1))  # noqa: E731
    try:
        deadline = time.monotonic() + 120
        while not dumped():
            if job.poll() is not None and not dumped():
                pytest.fail(f"the job ended before every rank dumped:\n{log.read_text()}")
            assert time.monotonic() < deadline, f"no dump within 120 s:\n{log.read_text()}"
            time.sleep(0.2)
    finally:
        _stop(job, done)
    return dumps


def _stop(job: subprocess.Popen, done: Path) -> None:
    """torchrun, then any rank left (each rank runs in a session of its own): a hung rank
    waits forever once its dump is written."""
    if job.poll() is None:
        job.terminate()  # torchrun stops its ranks on SIGTERM
        try:
            job.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    for marker in done.glob("rank[0-9]") if done.exists() else []:
        try:
            os.kill(int(marker.read_text()), signal.SIGKILL)
        except (ValueError, ProcessLookupError):
            pass  # ended with torchrun


@live
def test_hang_from_real_dumps(tmp_path):
    dumps = dumped_run(tmp_path, 10, os.path.relpath(DDP, REPO), "--quiet", "--steps", "30",
                       "--plant", "hang", "--plant-step", "3")
    # What rank 0 waits in, from its dump itself (not through the converter).
    entries = pickle.loads((dumps / "rank0").read_bytes())["entries"]
    hung, = [e for e in entries if not e["retired"]]
    assert hung["profiling_name"] == "gloo:all_reduce"
    result = converter(dumps, "-o", tmp_path / "run", "--json")
    assert result.returncode == 1, result.stderr
    finding, = json.loads(result.stdout)["findings"]
    assert (finding["trigger"], finding["ranks"], finding["cause"]) == ("stall", [1], "python")
    backward = line_of(DDP, "loss.backward()")
    assert finding["collective"].startswith("allreduce float32[")
    assert finding["collective"].endswith(
        f"in group 0, seq {hung['collective_seq_id']} (examples/gpt_ddp.py:{backward})")
    assert "rank 1 never issued it" in finding["detail"]


@live
def test_size_mismatch_from_real_dumps(tmp_path):
    dumps = dumped_run(tmp_path, 0, os.path.relpath(MISMATCH, REPO), "--plant-step", "2")
    result = converter(dumps, "-o", tmp_path / "run", "--json")
    assert result.returncode == 1, result.stderr
    finding, = json.loads(result.stdout)["findings"]
    assert (finding["trigger"], finding["ranks"], finding["cause"]) == \
        ("mismatch", [1], "mismatch")
    # Steps 0-2 all-reduce (seq 1-3), then step 2's broadcast: seq 4.
    site = f"tests/e2e/fr_mismatch.py:{line_of(MISMATCH, '# the planted mismatch')}"
    assert finding["collective"] == f"broadcast float32[1024] in group 0, seq 4 ({site})"
    assert "rank 0 issued broadcast float32[1024], rank 1 issued broadcast float32[1025]" in \
        finding["detail"]

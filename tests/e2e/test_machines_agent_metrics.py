"""`upguard machines agent`'s metrics beyond /proc: the training's step time and collective wait
from a real DDP run under `upguard watch`, GPU metrics through a stand-in libnvidia-ml (and none,
quietly, without one), and a cgroup's disk writes counted on that machine only."""

from __future__ import annotations

import fcntl
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import BUILD, ONE_TORCH, PYTHON, REPO, UPGUARD

sys.path.insert(0, str(REPO / "tests" / "faults"))
import ring  # noqa: E402  (the ring read from its spec alone, not through upguard's reader)

pytestmark = ONE_TORCH

DDP = REPO / "examples" / "gpt_ddp.py"
FAKE_NVML = BUILD / "testdata" / "libupguard_fake_nvml.so"
TORCHRUN_LOCK = "/tmp/upguard-torchrun.lock"  # one torchrun at a time on this host


def start_agent(*args: str, env: Dict[str, str] | None = None) -> "tuple[subprocess.Popen, int]":
    agent = subprocess.Popen([str(UPGUARD), "machines", "agent", "--listen", "127.0.0.1:0",
                              *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, **(env or {})})
    line = agent.stdout.readline()
    assert "serving http://127.0.0.1:" in line, line + agent.stderr.read()
    return agent, int(line.rsplit(":", 1)[1].split("/")[0])


def stop(agent: subprocess.Popen) -> str:
    """Stops the agent as a user would (SIGTERM) and returns its stderr."""
    agent.send_signal(signal.SIGTERM)
    assert agent.wait(timeout=10) == 0
    return agent.stderr.read()


def scrape(port: int) -> Dict[str, float]:
    import urllib.request
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in body.splitlines() if line and not line.startswith("#")}


def csv_values(csv: Path, metric: str) -> List[float]:
    lines = csv.read_text().splitlines()
    assert lines[0] == "time,machine,metric,value"
    return [float(fields[3]) for fields in (line.split(",") for line in lines[1:])
            if fields[2] == metric]


def test_step_time_and_collective_wait_of_a_ddp_training(tmp_path: Path) -> None:
    """Two ranks step every ~0.3 s (a 0.25 s pause after each step). The agent's step time is
    the ring's own step time within 15 %, and each interval's collective wait is in (0, 1]."""
    run, csv = tmp_path / "w", tmp_path / "agent.csv"
    agent, _ = start_agent("--machine", "node-0", "--interval", "0.5", "--output", str(csv),
                           "--watch-dir", str(run), "--ranks", "0-1",
                           env={"UPGUARD_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1"})
    try:
        with open(TORCHRUN_LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            result = subprocess.run(
                [str(UPGUARD), "watch", "-o", str(run), "--", PYTHON, "-m",
                 "torch.distributed.run", "--nproc_per_node=2", str(DDP), "--quiet", "--steps",
                 "24", "--step-delay", "0.25"], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        time.sleep(1.2)  # two more samples: the closed rings leave the metrics
    finally:
        stderr = stop(agent)
    assert "no GPU metrics" in stderr
    rings = [ring.read(str(run / "watch" / f"rank{rank}.ring")) for rank in (0, 1)]
    assert all(r.step == 24 for r in rings)
    ends = rings[0].step_ends
    measured = statistics.median(b - a for a, b in zip(ends[1:], ends[2:])) / 1e9
    assert measured > 0.25
    steps = csv_values(csv, "training_step_seconds")
    waits = csv_values(csv, "collective_wait_fraction")
    assert len(steps) >= 5, csv.read_text()
    assert abs(statistics.median(steps) - measured) < 0.15 * measured, (steps, measured)
    # 0 where no collective was in flight in an interval (the ranks still starting, measured
    # under torch 2.x), the rest in (0, 1].
    assert waits and all(0 <= wait <= 1 for wait in waits), waits
    assert statistics.median(waits) > 0, waits
    # After the training the rings are closed: the last sample has no training metrics.
    last_time = csv.read_text().splitlines()[-1].split(",")[0]
    assert not any(line.startswith(last_time + ",") and "training_" in line
                   for line in csv.read_text().splitlines())


def test_gpu_metrics_through_a_stand_in_nvml(tmp_path: Path) -> None:
    if not (BUILD / "upguard_tests").exists():  # a CLI-and-adapter build (`make build PYTHON=`)
        pytest.skip("the stand-in NVML is built with upguard_tests, which this build has not")
    assert FAKE_NVML.exists(), f"{FAKE_NVML}: build the upguard_tests target"
    csv = tmp_path / "gpu.csv"
    agent, port = start_agent("--machine", "gpu-node", "--interval", "0.2", "--output", str(csv),
                              env={"UPGUARD_NVML_LIBRARY": str(FAKE_NVML)})
    try:
        time.sleep(0.7)
        values = scrape(port)
    finally:
        stderr = stop(agent)
    assert "2 GPU(s) through NVML" in stderr
    label = 'machine="gpu-node",interface='
    assert values[f'upguard_gpu_utilization{{{label}"gpu0"}}'] == 0.37
    assert values[f'upguard_gpu_memory_used_bytes{{{label}"gpu0"}}'] == 5 * 2 ** 30
    assert values[f'upguard_gpu_xid_errors{{{label}"gpu1"}}'] == 2
    assert values[f'upguard_gpu_xid_errors{{{label}"gpu0"}}'] == 0
    assert 123.456 in csv_values(csv, "gpu_power_watts.gpu0")


def test_no_nvml_no_gpu_metrics_and_no_error(tmp_path: Path) -> None:
    agent, port = start_agent("--interval", "0.2",
                              env={"UPGUARD_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1"})
    try:
        time.sleep(0.5)
        values = scrape(port)
    finally:
        stderr = stop(agent)
    assert not any(key.startswith("upguard_gpu_") for key in values)
    assert any(key.startswith("upguard_cpu_utilization") for key in values)
    assert [line for line in stderr.splitlines() if "GPU" in line] == [
        line for line in stderr.splitlines() if line.startswith(
            "upguard machines agent: no GPU metrics: cannot load /nonexistent/libnvidia-ml.so.1")]


def test_a_cgroups_disk_writer_shows_on_that_machine_only(tmp_path: Path) -> None:
    """A writer that dirties 96 MiB without fsync in cgroup A: A's agent reports the writes,
    B's (an idle cgroup on the same disk) does not."""
    names = [f"upguard-io-{os.getpid()}-{side}" for side in "ab"]
    roots = [Path("/sys/fs/cgroup") / c for c in ("cpuacct", "memory")]
    if not all(r.is_dir() and os.access(r, os.W_OK) for r in roots):
        pytest.skip("needs writable cgroup v1 cpuacct and memory controllers (root)")
    made: List[Path] = []
    agents: List[subprocess.Popen] = []
    writer = None
    try:
        for name in names:
            for root in roots:
                (root / name).mkdir()
                made.append(root / name)
        csvs = [tmp_path / f"{name}.csv" for name in names]
        for name, csv in zip(names, csvs):
            agents.append(start_agent("--cgroup", name, "--interval", "0.25", "--output",
                                      str(csv))[0])
        time.sleep(0.6)
        join = " && ".join(f"echo $$ > {root / names[0]}/cgroup.procs" for root in roots)
        target = tmp_path / "fill.bin"
        writer = subprocess.run(
            ["sh", "-c", f"{join} && dd if=/dev/zero of={target} bs=1M count=96 2>/dev/null"
             " && sleep 0.6"], timeout=60)  # sh reaps dd: dd's bytes become sh's
        assert writer.returncode == 0
        time.sleep(0.6)
    finally:
        for agent in agents:
            stop(agent)
        for group in reversed(made):
            for _ in range(50):  # a process that ended leaves the cgroup asynchronously
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
    written = [sum(v * 0.25 for v in csv_values(csv, "disk_write_bytes_per_second"))
               for csv in csvs]
    assert written[0] > 80 * 2 ** 20, written  # about 96 MiB over the samples
    assert written[1] < 1 * 2 ** 20, written

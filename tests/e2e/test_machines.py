"""`upguard machines detect` on metric exports: the machine that parts from its peers, named with
its metrics and times, at 1 s agent resolution and at 5-minute export resolution; nothing on a
healthy cluster; bad input named by file and line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict

import pytest

from conftest import REPO, upguard

sys.path.insert(0, str(REPO / "examples"))
from machine_metrics import START, write_cluster  # noqa: E402


def test_names_the_starved_machine_with_its_metrics_and_start(tmp_path: Path) -> None:
    csv = tmp_path / "metrics.csv"
    write_cluster(csv, machines=6, points=300, step=1.0, faulty=3, fault_at=150, seed=7)
    result = upguard("machines", "detect", "--input", csv, "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["schema"] == "upguard.machines/1"
    assert len(report["detections"]) == 1, report
    found = report["detections"][0]
    assert found["machine"] == "node-3"
    assert "cpu_utilization" in found["metrics"] or "training_step_seconds" in found["metrics"]
    assert START + 150 <= found["start"] <= START + 160, found
    assert found["alert"] - found["start"] == 3  # four windows in a row, one second apart
    assert found["end"] == START + 299
    metric = found["metrics"][0]
    band = found["peers"][metric]
    assert band["machine"] > band["peers_p90"]
    text = upguard("machines", "detect", "--input", csv)
    assert text.returncode == 1
    assert "node-3 parts from its 5 peers" in text.stdout, text.stdout


def test_example_command_from_the_readme(tmp_path: Path) -> None:
    csv = tmp_path / "metrics.csv"
    made = subprocess.run(
        [sys.executable, str(REPO / "examples/machine_metrics.py"), "-o", str(csv),
         "--faulty", "3"], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    result = upguard("machines", "detect", "--input", csv)
    assert result.returncode == 1
    assert result.stdout.startswith("upguard machines: node-3 parts from its 7 peers"), result.stdout


def test_healthy_cluster_raises_nothing(tmp_path: Path) -> None:
    for seed in (1, 2, 3):
        csv = tmp_path / f"healthy{seed}.csv"
        write_cluster(csv, machines=8, points=400, step=1.0, faulty=None, fault_at=0, seed=seed)
        result = upguard("machines", "detect", "--input", csv, "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        assert json.loads(result.stdout)["detections"] == []


def test_five_minute_exports_with_iso_times(tmp_path: Path) -> None:
    csv = tmp_path / "export.csv"
    write_cluster(csv, machines=5, points=96, step=300.0, faulty=0, fault_at=60, seed=3,
                  iso=True)
    result = upguard("machines", "detect", "--input", csv, "--json")
    assert result.returncode == 1, result.stderr
    found = json.loads(result.stdout)["detections"][0]
    assert found["machine"] == "node-0"
    assert isinstance(found["start"], str) and found["start"].endswith("Z")
    assert json.loads(result.stdout)["step_seconds"] == 300


def test_bad_input_is_named(tmp_path: Path) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text("time,machine,metric,value\n1,a,cpu,0.5\n2,a,cpu\n")
    result = upguard("machines", "detect", "--input", csv)
    assert result.returncode == 2
    assert f"{csv}:3: expected 4 fields" in result.stderr
    result = upguard("machines", "detect", "--input", csv, "--method", "vae")
    assert result.returncode == 2 and "--method" in result.stderr
    result = upguard("machines", "nonsense")
    assert result.returncode == 2 and "upguard machines detect" in result.stderr


def start_agent(*args: str) -> "tuple[subprocess.Popen, int]":
    from conftest import UPGUARD
    agent = subprocess.Popen([str(UPGUARD), "machines", "agent", "--listen", "127.0.0.1:0",
                              *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = agent.stdout.readline()
    assert "serving http://127.0.0.1:" in line, line + agent.stderr.read()
    return agent, int(line.rsplit(":", 1)[1].split("/")[0])


def scrape(port: int) -> Dict[str, float]:
    """{series with labels: value} from the agent's /metrics."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    values: Dict[str, float] = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            values[key] = float(value)
    return values


def test_agent_serves_a_cgroups_cpu_and_appends_the_csv(tmp_path: Path) -> None:
    """A busy process in its own cgroup: the agent, pointed at that cgroup, serves its CPU
    utilisation for Prometheus, and the CSV it appends reads back in the detector."""
    name = f"upguard-test-{os.getpid()}"
    groups = [Path("/sys/fs/cgroup/cpuacct") / name, Path("/sys/fs/cgroup/memory") / name]
    if not all(g.parent.is_dir() and os.access(g.parent, os.W_OK) for g in groups):
        pytest.skip("needs writable cgroup v1 cpuacct and memory controllers (root)")
    busy = agent = None
    try:
        for group in groups:
            group.mkdir()
        # Joins both cgroups before Python starts, so what it allocates (50 MiB, touched) is
        # charged to the cgroup, then spins.
        join = " && ".join(f"echo $$ > {group}/cgroup.procs" for group in groups)
        busy = subprocess.Popen(["sh", "-c", f"{join} && exec {sys.executable} -c "
                                 "'x = bytearray(b\"\\1\") * (50 << 20)\nwhile True: pass'"])
        csv = tmp_path / "agent.csv"
        agent, port = start_agent("--machine", "node-7", "--cgroup", name, "--interval", "0.5",
                                  "--output", str(csv))
        deadline, cores = time.time() + 20, os.cpu_count() or 1
        values: Dict[str, float] = {}
        while time.time() < deadline:
            time.sleep(1.2)
            values = scrape(port)
            if values.get('upguard_cpu_utilization{machine="node-7"}', 0) > 0.6 / cores:
                break
        # One busy process of the machine's cores: about 1/cores, less when the host is busy
        # (measured: 0.165 of 2 cores beside a 4-rank training), and nothing of the rest of the
        # host (an idle cgroup reads about 0; the host reads up to 1 when it is that busy).
        cpu = values['upguard_cpu_utilization{machine="node-7"}']
        assert 0.15 / cores < cpu <= 1.0 / cores + 0.05, values
        assert values['upguard_memory_used_bytes{machine="node-7"}'] > 50e6
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=10) == 0, agent.stderr.read()
        lines = csv.read_text().splitlines()
        assert lines[0] == "time,machine,metric,value"
        assert any(",node-7,cpu_utilization," in line for line in lines[1:])
        result = upguard("machines", "detect", "--input", csv)
        assert result.returncode == 0, result.stderr  # one machine: no peers, no finding
    finally:
        for proc in (agent, busy):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        for group in groups:
            if group.exists():
                for _ in range(50):  # the killed process leaves the cgroup asynchronously
                    try:
                        group.rmdir()
                        break
                    except OSError:
                        time.sleep(0.1)

"""`upguard machines detect` reading a real Prometheus and the agents' SQLite files: four agents
on loopback, each on a cgroup of its own, one of them with a busy process in it; a Prometheus of
the test's own (Debian's `prometheus`, a temporary config and storage, a free port) scrapes them
every second; detect names exactly the busy machine through Prometheus' query API and through the
SQLite files the agents wrote. Also: the node_exporter recording rules pass promtool."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from conftest import ONE_TORCH, REPO, UPGUARD, upguard

pytestmark = ONE_TORCH

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
MACHINES = 4
BUSY = 2  # node-2 runs the busy process
SCRAPE_SECONDS = 25


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(proc: "subprocess.Popen | None") -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def remove_cgroup(group: Path) -> None:
    for _ in range(50):  # a killed process leaves the cgroup asynchronously
        if not group.exists():
            return
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)


@pytest.fixture
def cgroups() -> Iterator[List[str]]:
    """One cgroup v1 (cpuacct and memory) per machine, removed at the end."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the machines are cgroups")
    roots = [Path("/sys/fs/cgroup/cpuacct"), Path("/sys/fs/cgroup/memory")]
    if not all(root.is_dir() and os.access(root, os.W_OK) for root in roots):
        pytest.skip("needs writable cgroup v1 cpuacct and memory controllers")
    names = [f"upguard-src-{os.getpid()}-{idx}" for idx in range(MACHINES)]
    made: List[Path] = []
    try:
        for name in names:
            for root in roots:
                (root / name).mkdir()
                made.append(root / name)
        yield names
    finally:
        for group in made:
            remove_cgroup(group)


def start_busy(cgroup: str) -> subprocess.Popen:
    """A process that joins `cgroup`, touches 50 MiB there and spins."""
    join = " && ".join(f"echo $$ > /sys/fs/cgroup/{controller}/{cgroup}/cgroup.procs"
                       for controller in ("cpuacct", "memory"))
    return subprocess.Popen(["sh", "-c", f"{join} && exec {sys.executable} -c "
                             "'x = bytearray(b\"\\1\") * (50 << 20)\nwhile True: pass'"])


def start_agent(machine: str, cgroup: str, output: Path) -> Tuple[subprocess.Popen, int]:
    agent = subprocess.Popen(
        [str(UPGUARD), "machines", "agent", "--listen", "127.0.0.1:0", "--machine", machine,
         "--cgroup", cgroup, "--output", str(output), "--duration", "300"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = agent.stdout.readline()
    assert "serving http://127.0.0.1:" in line, line
    return agent, int(line.rsplit(":", 1)[1].split("/")[0])


def start_prometheus(tmp_path: Path, targets: List[int]) -> Tuple[subprocess.Popen, int]:
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: upguard\n    static_configs:\n"
        f"      - targets: [{', '.join(f'127.0.0.1:{t}' for t in targets)}]\n")
    log = open(tmp_path / "prometheus.log", "w")
    prometheus = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while time.time() < deadline:
        assert prometheus.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2).status == 200:
                return prometheus, port
        except OSError:
            pass
        time.sleep(0.2)
    stop(prometheus)
    pytest.fail("Prometheus was not ready within 30 s:\n" +
                (tmp_path / "prometheus.log").read_text()[-2000:])


def detected(result: subprocess.CompletedProcess) -> List[str]:
    assert result.returncode in (0, 1), result.stderr
    return sorted({found["machine"] for found in json.loads(result.stdout)["detections"]})


@pytest.mark.skipif(PROMETHEUS is None, reason="needs Debian's prometheus (scripts/install-deps.sh)")
def test_detect_names_the_busy_machine_through_prometheus_and_sqlite(
        tmp_path: Path, cgroups: List[str]) -> None:
    started = time.time()
    procs: List[subprocess.Popen] = []
    try:
        procs.append(start_busy(cgroups[BUSY]))
        ports = []
        for idx, cgroup in enumerate(cgroups):
            agent, port = start_agent(f"node-{idx}", cgroup, tmp_path / f"node-{idx}.db")
            procs.append(agent)
            ports.append(port)
        prometheus, prom_port = start_prometheus(tmp_path, ports)
        procs.append(prometheus)
        time.sleep(SCRAPE_SECONDS)
        url = f"http://127.0.0.1:{prom_port}"
        t0 = time.time()
        result = upguard("machines", "detect", "--input", url, "--start", f"{started:.0f}",
                         "--json", timeout=60)
        query_seconds = time.time() - t0
        assert detected(result) == [f"node-{BUSY}"], result.stdout
        report = json.loads(result.stdout)
        assert report["machines"] == MACHINES and report["step_seconds"] == 1, report
        # The same agents' SQLite files, read while the agents still write them.
        files = ",".join(str(tmp_path / f"node-{idx}.db") for idx in range(MACHINES))
        result = upguard("machines", "detect", "--input", files, "--json", timeout=60)
        assert detected(result) == [f"node-{BUSY}"], result.stdout
        # The machine label is an option: Prometheus' own `instance` names the same agent.
        result = upguard("machines", "detect", "--input", url, "--start", f"{started:.0f}",
                         "--machine-label", "instance", "--json", timeout=60)
        assert detected(result) == [f"127.0.0.1:{ports[BUSY]}"], result.stdout
        print(f"\nscrape {SCRAPE_SECONDS} s, one detect through Prometheus {query_seconds:.2f} s, "
              f"whole test {time.time() - started:.1f} s")
    finally:
        for proc in reversed(procs):
            stop(proc)


@pytest.mark.skipif(PROMETHEUS is None, reason="needs Debian's prometheus (scripts/install-deps.sh)")
def test_errors_name_the_url_and_the_fix(tmp_path: Path) -> None:
    result = upguard("machines", "detect", "--input", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 2
    assert "cannot connect to http://127.0.0.1:" in result.stderr
    prometheus, port = start_prometheus(tmp_path, [free_port()])  # a target nobody serves
    try:
        result = upguard("machines", "detect", "--input", f"http://127.0.0.1:{port}", timeout=60)
        assert result.returncode == 2, result.stdout
        assert f"http://127.0.0.1:{port}: no upguard_* series" in result.stderr, result.stderr
        assert "/targets" in result.stderr
        result = upguard("machines", "detect", "--input", f"http://127.0.0.1:{port}",
                         "--start", "-1h", "--step", "0.1", timeout=60)  # 36,001 points: 4 queries
        assert result.returncode == 2 and "no upguard_* series" in result.stderr, result.stderr
    finally:
        stop(prometheus)


@pytest.mark.skipif(PROMTOOL is None, reason="needs promtool (Debian's prometheus)")
def test_node_exporter_rules_pass_promtool() -> None:
    rules = REPO / "examples" / "prometheus-upguard-rules.yml"
    checked = subprocess.run([PROMTOOL, "check", "rules", str(rules)], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run([PROMTOOL, "test", "rules",
                             str(REPO / "tests" / "e2e" / "prometheus_rules_test.yml")],
                            capture_output=True, text=True, timeout=60)
    assert tested.returncode == 0, tested.stdout + tested.stderr

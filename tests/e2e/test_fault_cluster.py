"""The fault-injection harness (issue 14, part 4): tests/faults/cluster.py puts each rank of the
DDP GPT on a "host" of its own (a network namespace on a bridge) and plants faults from outside;
gpt_ddp.py plants a hang or a mismatch itself. These tests check the harness, not the monitor:
that the ranks train across namespaces, that each fault does what it says, and that nothing the
harness created outlives a test, even one that raises midway or whose process is killed.

Root only (namespaces, links, cgroups); every test has a timeout (SIGALRM: no pytest-timeout)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ONE_TORCH, PYTHON, REPO

sys.path.insert(0, str(REPO / "tests" / "faults"))
import sweep  # noqa: E402
from cluster import Cluster  # noqa: E402

DDP = REPO / "examples" / "gpt_ddp.py"


def _why_unusable() -> str:
    """Empty when namespaces, bridges and veth links can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, links and cgroups)"
    try:
        with Cluster(2):
            pass
    except Exception as error:
        return f"cannot build a cluster of network namespaces here: {error}"
    return ""


WHY_UNUSABLE = _why_unusable()
pytestmark = [ONE_TORCH, pytest.mark.skipif(bool(WHY_UNUSABLE), reason=WHY_UNUSABLE)]


class TimeLimitExceeded(Exception):
    pass


def timeout(seconds: int):
    """A test's time limit when not the default 60 s (pytest-timeout is not installed)."""
    def mark(test):
        test.timeout_s = seconds
        return test
    return mark


def mine(pid: int) -> list:
    """What remains of the clusters process `pid` made: namespaces, links, cgroups, qdiscs."""
    items = [item for item in sweep.leftovers() if item.pid == pid]
    links = {f"dev {item.name} " for item in items if item.kind == "link"}
    # A link's rate limit goes with it; listed apart all the same, as what a fault added.
    qdiscs = [line for line in sweep.run("tc", "qdisc", "show").splitlines()
              if " tbf " in line and any(link in line for link in links)]
    return items + qdiscs


@pytest.fixture(autouse=True)
def timeout_and_no_leftovers(request) -> Iterator[None]:
    """Fails a test past its timeout, raising inside it so its cluster unwinds; then checks
    that nothing this process made is left."""
    seconds = getattr(request.function, "timeout_s", 60)

    def fire(signum, frame):
        raise TimeLimitExceeded(f"{request.node.name} ran past its {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert mine(os.getpid()) == []


def wchan(pid: int) -> str:
    """Where in the kernel the process's main thread waits ("0" when running)."""
    return Path(f"/proc/{pid}/wchan").read_text()


def test_two_hosts_train_across_namespaces(tmp_path):
    with Cluster(2) as cluster:
        job = cluster.launch(DDP, ["--steps", "3"], log_dir=tmp_path, python=PYTHON)
        assert job.wait(timeout=50) == [0, 0], job.stderr(0)[-3000:] + job.stderr(1)[-3000:]
        assert "step 2:" in job.stdout(0)


def step_seconds(cluster: Cluster, log_dir: Path) -> float:
    """Seconds per step over steps 2..5 of a DDP GPT whose gradients (1.6 MB) take 0.25 s
    through a 50mbit link."""
    # Small batches keep the compute short, so that the step is mostly the all-reduce.
    args = ["--steps", "6", "--width", "128", "--layers", "2", "--batch", "1", "--block", "16"]
    job = cluster.launch(DDP, args, log_dir=log_dir, python=PYTHON)
    start = job.wait_output(0, "step 1:", timeout=40)
    end = job.wait_output(0, "step 5:", timeout=40)
    assert job.wait(timeout=20) == [0, 0]
    return (end - start) / 4


@timeout(100)
def test_rate_limit_slows_every_step(tmp_path):
    with Cluster(2) as cluster:
        free = step_seconds(cluster, tmp_path / "free")
        cluster.rate_limit(1, "50mbit")
        limited = step_seconds(cluster, tmp_path / "limited")
    print(f"step: {free:.3f} s free, {limited:.3f} s at 50mbit")
    assert limited > 3 * free, (free, limited)


def test_planted_hang_leaves_its_peer_waiting(tmp_path):
    with Cluster(2) as cluster:
        job = cluster.launch(DDP, ["--steps", "0", "--plant", "hang", "--plant-step", "1"],
                             log_dir=tmp_path, python=PYTHON)
        job.wait_output(0, "step 0:", timeout=40)
        time.sleep(3)
        assert "step 1:" not in job.stdout(0)
        assert [proc.poll() for proc in job.procs] == [None, None]
        assert "nanosleep" in wchan(job.worker_pid(1))  # in time.sleep
        assert "nanosleep" not in wchan(job.worker_pid(0))  # waiting for rank 1
        assert wchan(job.worker_pid(0)) != "0"  # not running: blocked


def test_cleanup_after_a_test_raises_midway(tmp_path):
    """Every fault primitive applied, then an exception: the `with` still undoes them all."""
    with pytest.raises(RuntimeError, match="midway"):
        with Cluster(3) as cluster:
            job = cluster.launch(DDP, ["--steps", "0", "--step-delay", "0.2"], log_dir=tmp_path,
                                 python=PYTHON)
            job.wait_output(0, "step 0:", timeout=40)
            cluster.slow_cpu(1, 3)
            cgroup = sweep.cgroup_path(cluster.rid, cluster.pid, 1)
            assert str(job.worker_pid(1)) in Path(f"{cgroup}/tasks").read_text().split()
            cluster.rate_limit(2)
            cluster.link_down(2)
            cluster.sigstop(0)
            workers = [job.worker_pid(rank) for rank in range(3)]
            assert mine(os.getpid()) != []
            raise RuntimeError("midway")
    for pid in workers:  # gone, or zombies until init reaps them
        assert not sweep.alive(pid) or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


HOLD_A_CLUSTER = f"""
import sys, time
sys.path.insert(0, {str(REPO / 'tests' / 'faults')!r})
from cluster import Cluster
with Cluster(2):
    print("ready", flush=True)
    time.sleep(60)
"""


def hold_a_cluster() -> subprocess.Popen:
    holder = subprocess.Popen([PYTHON, "-c", HOLD_A_CLUSTER], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "ready\n"
        assert len(mine(holder.pid)) == 5  # two namespaces, the bridge, two veth links
    except BaseException:
        holder.terminate()  # it cleans up after itself
        raise
    return holder


def test_sigterm_cleans_up_and_sweep_removes_what_sigkill_left():
    holder = hold_a_cluster()
    holder.terminate()
    assert holder.wait(timeout=10) == 128 + signal.SIGTERM
    assert mine(holder.pid) == []

    holder = hold_a_cluster()
    holder.kill()
    holder.wait(timeout=10)
    try:
        assert len(mine(holder.pid)) == 5  # a killed process cleans up nothing
    finally:
        removed = sweep.sweep()
    assert {item.pid for item in removed} >= {holder.pid}
    assert mine(holder.pid) == []

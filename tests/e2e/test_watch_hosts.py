"""`upguard watch --exchange` across hosts (issue 14, part 2; docs/watch.md, "Several hosts"):
the DDP GPT on two "hosts" (network namespaces, tests/faults/cluster.py), each host's rank
writing its ring into a directory of its own, and one `upguard watch --attach` per host, inside
that host's namespace, sharing summaries through a common directory. Host 0's monitor never
reads rank 1's ring, so whatever it says about rank 1 came through the exchange.

Root only (namespaces); each test has a timeout and leaves nothing behind (the fixtures of
test_fault_cluster.py)."""

from __future__ import annotations

import datetime
import json
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import pytest

from conftest import BUILD, ONE_TORCH, PYTHON, REPO
from test_fault_cluster import WHY_UNUSABLE, timeout, timeout_and_no_leftovers  # noqa: F401

sys.path.insert(0, str(REPO / "tests" / "faults"))
import ring  # noqa: E402
from cluster import Cluster, Job  # noqa: E402

pytestmark = [ONE_TORCH, pytest.mark.skipif(bool(WHY_UNUSABLE), reason=WHY_UNUSABLE)]

DDP = REPO / "examples" / "gpt_ddp.py"
HOSTS = 2
FAULTY = 1  # the rank (on host 1) that is stopped
WARMUP_STEPS = 10


def alerts(run_dir: Path) -> List[dict]:
    try:
        return [json.loads(line) for line in (run_dir / "alerts.jsonl").read_text().splitlines()
                if line.strip()]
    except FileNotFoundError:
        return []


def epoch(iso: str) -> float:
    return datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def stop(monitor: subprocess.Popen) -> None:
    """Ends a monitor as Ctrl-C does; SIGKILL if it does not end."""
    if monitor.poll() is None:
        monitor.send_signal(signal.SIGINT)
    try:
        monitor.wait(timeout=10)
    except subprocess.TimeoutExpired:
        monitor.kill()
        monitor.wait()


@dataclass
class Hosts:
    cluster: Cluster
    job: Job
    dirs: List[Path]  # host k's run directory: its rank's ring, its monitor's alerts
    exchange: Path
    monitors: List[subprocess.Popen]

    def steps(self, rank: int) -> int:
        try:
            return ring.read(str(self.dirs[rank] / "watch" / f"rank{rank}.ring")).step
        except (FileNotFoundError, ValueError, IndexError):
            return 0

    def warm_up(self) -> None:
        deadline = time.monotonic() + 120
        while min(self.steps(rank) for rank in range(HOSTS)) < WARMUP_STEPS:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the ranks did not train {WARMUP_STEPS} steps: "
                                   f"{self.job.stderr(0)[-2000:]}")
            for host, monitor in enumerate(self.monitors):
                assert monitor.poll() is None, (self.dirs[host] / "monitor.err").read_text()
            time.sleep(0.1)

    def wait_alert(self, host: int, match: Callable[[dict], bool],
                   timeout_s: float) -> Optional[dict]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [alert for alert in alerts(self.dirs[host]) if match(alert)]
            if found:
                return found[0]
            time.sleep(0.05)
        return None


@contextmanager
def watched_hosts(tmp_path: Path) -> Iterator[Hosts]:
    dirs = [tmp_path / f"host{host}" for host in range(HOSTS)]
    exchange = tmp_path / "exchange"
    package = BUILD / "python"
    env = {"PYTHONPATH": f"{package}/upguard/_bootstrap:{package}"}
    with Cluster(HOSTS) as cluster:
        # A pause after each step keeps the step time steady on a machine whose cores other
        # work shares: these tests are about the exchange, not about a throughput drop.
        job = cluster.launch(DDP, ["--steps", "0", "--quiet", "--step-delay", "0.05"],
                             log_dir=tmp_path / "logs",
                             python=PYTHON, env=env,
                             host_env=[{"UPGUARD_WATCH_DIR": str(d)} for d in dirs])
        monitors: List[subprocess.Popen] = []
        try:
            for host, run_dir in enumerate(dirs):
                run_dir.mkdir(parents=True, exist_ok=True)
                # Every namespace has the machine's hostname: each monitor needs a name.
                command = ["ip", "netns", "exec", cluster.netns(host),  # ip execs it
                           str(BUILD / "upguard"), "watch", "--attach", str(run_dir),
                           "--exchange", str(exchange), "--host-name", f"host{host}"]
                with open(run_dir / "monitor.out", "wb") as out, \
                        open(run_dir / "monitor.err", "wb") as err:
                    monitors.append(subprocess.Popen(command, stdout=out, stderr=err))
            yield Hosts(cluster, job, dirs, exchange, monitors)
        finally:
            for monitor in monitors:
                stop(monitor)
            job.kill()


def summary_ranks(hosts: Hosts, host: int) -> List[dict]:
    return json.loads((hosts.exchange / f"host{host}.json").read_text())["ranks"]


@timeout(150)
def test_a_stopped_rank_is_named_by_the_other_hosts_monitor(tmp_path):
    with watched_hosts(tmp_path) as hosts:
        hosts.warm_up()
        start = time.time()
        hosts.cluster.sigstop(FAULTY)
        right = hosts.wait_alert(
            0, lambda a: (a["trigger"], a["cause"], a["ranks"]) == ("dead", "stopped", [FAULTY]),
            timeout_s=15)
        seen_by_0 = alerts(hosts.dirs[0])
        ranks_0, ranks_1 = summary_ranks(hosts, 0), summary_ranks(hosts, 1)
    print(f"host 0's alerts: {seen_by_0}")
    # Host 0 has only its own rank's ring; it learnt of rank 1 from host 1's summary.
    assert not (hosts.dirs[0] / "watch" / f"rank{FAULTY}.ring").exists()
    assert [r["rank"] for r in ranks_0] == [0] and [r["rank"] for r in ranks_1] == [FAULTY]
    assert ranks_1[0]["process"] == "stopped"
    assert right is not None, seen_by_0
    assert epoch(right["time"]) - start <= 10.0
    assert seen_by_0[0]["ranks"] == [FAULTY], seen_by_0[0]  # no other rank blamed first


@timeout(150)
def test_healthy_hosts_raise_no_alert_and_a_silent_host_is_named_only_as_unseen(tmp_path):
    with watched_hosts(tmp_path) as hosts:
        hosts.warm_up()
        before = hosts.steps(0)
        time.sleep(15)
        assert hosts.steps(0) >= before + 10  # it did train meanwhile
        assert alerts(hosts.dirs[0]) == [] and alerts(hosts.dirs[1]) == []
        assert [r["rank"] for r in summary_ranks(hosts, 1)] == [FAULTY]

        # Host 1's monitor goes; its rank trains on. Host 0 sees no fault in that.
        hosts.monitors[1].kill()
        hosts.monitors[1].wait()
        time.sleep(6)
        assert alerts(hosts.dirs[0]) == []

        # Now rank 1 stops: host 0 sees its own rank wait, and can only say that rank 1 is out
        # of sight; it makes up no cause.
        hosts.cluster.sigstop(FAULTY)
        unseen = hosts.wait_alert(0, lambda a: a["trigger"] == "stall", timeout_s=20)
        seen_by_0 = alerts(hosts.dirs[0])
    print(f"host 0's alerts: {seen_by_0}")
    assert unseen is not None, seen_by_0
    assert (unseen["cause"], unseen["ranks"]) == ("unseen", [FAULTY]), unseen
    assert "rank 1 may not have issued it: the monitor of its host host1 has not reported for" \
        in unseen["detail"], unseen
    assert all(alert["cause"] == "unseen" for alert in seen_by_0), seen_by_0

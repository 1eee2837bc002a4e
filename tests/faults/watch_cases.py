"""The fault-injection cases of `upguard watch` (issue 14, part 4), shared by the test
(tests/e2e/test_watch_faults.py: every kind once) and the benchmark (bench/watch_faults.py: the
full table).

Each case trains the DDP GPT (examples/gpt_ddp.py) with one rank per "host" (tests/faults/
cluster.py: network namespaces on a bridge), every rank writing its watch ring, and
`upguard watch --attach` watching from the root namespace. Once the ranks have trained a few
steps, rank 1's fault begins; the case measures the time from the fault to the first alert and
to the first alert that names the right rank and cause.

    result = run_case("sigstop", build=Path("build/release"), workdir=tmp)
    assert result.correct and result.cause_s <= 10
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ring  # noqa: E402
from cluster import Cluster  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DDP = REPO / "examples" / "gpt_ddp.py"
FAULTY = 1  # the rank every case plants its fault on
WARMUP_STEPS = 12  # steps trained before the fault: the monitor's baselines


@dataclass
class Case:
    name: str
    expect: Tuple[str, str]  # (trigger, cause) of the right finding
    plant: Sequence[str] = ()  # gpt_ddp.py's own plant, from step WARMUP_STEPS
    fault: Optional[Callable[[Cluster], None]] = None  # from outside, after the warm-up
    train: Sequence[str] = ()


CASES: Dict[str, Case] = {case.name: case for case in (
    Case("hang", ("stall", "python"), plant=("--plant", "hang")),
    Case("mismatch", ("mismatch", "mismatch"), plant=("--plant", "mismatch")),
    Case("sigstop", ("dead", "stopped"), fault=lambda c: c.sigstop(FAULTY)),
    Case("sigkill", ("dead", "exited"), fault=lambda c: c.sigkill(FAULTY)),
    # A step long enough that a CPU quota makes the rank late at most collectives, not at one
    # in seven (torch 2's default GPT step is 5 ms). 4x (25 ms of each 100 ms period): at 3x the
    # rank's median lateness (50-62 ms, three ranks on two cores) sat on the straggler margin
    # (50 ms), and the alert came after 0.5 s or after 13 s, by chance.
    Case("slow_cpu", ("straggler", "slow_compute"), fault=lambda c: c.slow_cpu(FAULTY, 4),
         train=("--width", "192")),
    Case("rate_limit", ("throughput", "communication"), fault=lambda c: c.rate_limit(FAULTY),
         train=("--width", "128", "--batch", "1", "--block", "16")),
    Case("link_down", ("stall", "link_down"), fault=lambda c: c.link_down(FAULTY)),
)}


@dataclass
class Result:
    case: str
    hosts: int
    alert_s: Optional[float] = None  # fault -> first alert
    cause_s: Optional[float] = None  # fault -> first alert with the right rank and cause
    first: Optional[dict] = None
    right: Optional[dict] = None
    alerts: List[dict] = field(default_factory=list)
    report: str = ""  # the monitor's text report when it was stopped

    @property
    def correct(self) -> bool:
        return self.right is not None


def _alerts(path: Path) -> List[dict]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def _epoch(iso: str) -> float:
    import datetime
    return datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def _read_ring(run_dir: Path, rank: int) -> Optional[ring.Ring]:
    try:
        return ring.read(str(run_dir / "watch" / f"rank{rank}.ring"))
    except (FileNotFoundError, ValueError, IndexError):
        return None


def _stop(monitor: subprocess.Popen) -> str:
    """Ends `upguard watch --attach` as Ctrl-C does; returns the report it prints."""
    monitor.send_signal(signal.SIGINT)
    try:
        return monitor.communicate(timeout=10)[0]
    except subprocess.TimeoutExpired:
        monitor.kill()
        return ""


def _planted_start(case: Case, run_dir: Path) -> Optional[float]:
    """When a fault the script plants began: the end of the faulty rank's last step before it
    (a hang), the issue of its odd collective (a mismatch)."""
    faulty = _read_ring(run_dir, FAULTY)
    if faulty is None:
        return None
    if case.name == "mismatch":
        odd = [s for s in faulty.slots if s.op == "allreduce" and s.count == 1025]
        return faulty.realtime(odd[0].issued_ns) if odd else None
    return faulty.realtime(faulty.step_ends[-1]) if faulty.step_ends else None


def run_case(name: str, build: Path, workdir: Path, hosts: int = 2,
             python: str = "/usr/bin/python3", timeout_s: float = 30.0,
             stall_floor: Optional[float] = None) -> Result:
    case = CASES[name]
    run_dir = workdir / f"{name}-{hosts}"
    run_dir.mkdir(parents=True, exist_ok=True)
    package = build / "python"
    env = {"PYTHONPATH": f"{package}/upguard/_bootstrap:{package}",
           "UPGUARD_WATCH_DIR": str(run_dir)}
    plant = [*case.plant, "--plant-rank", str(FAULTY), "--plant-step", str(WARMUP_STEPS)] \
        if case.plant else []
    result = Result(name, hosts)
    with Cluster(hosts) as cluster:
        job = cluster.launch(DDP, ["--steps", "0", "--quiet", *case.train, *plant],
                             log_dir=run_dir / "logs", python=python, env=env)
        watch = [str(build / "upguard"), "watch", "--attach", str(run_dir)]
        if stall_floor is not None:
            watch += ["--stall-floor", str(stall_floor)]
        monitor = subprocess.Popen(watch, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # the warm-up: every rank trains its steps
                rings = [_read_ring(run_dir, rank) for rank in range(hosts)]
                if all(r is not None and len(r.step_ends) >= WARMUP_STEPS - 1 for r in rings):
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError(f"{name}: the ranks did not train {WARMUP_STEPS} steps: "
                                   f"{job.stderr(0)[-2000:]}")
            start = None
            if case.fault is not None:
                start = time.time()
                case.fault(cluster)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and result.right is None:
                time.sleep(0.05)
                if start is None:
                    start = _planted_start(case, run_dir)
                    if start is None:
                        continue
                result.alerts = _alerts(run_dir / "alerts.jsonl")
                for alert in result.alerts:
                    at = _epoch(alert["time"]) - start
                    if result.first is None and at >= -0.5:
                        result.first, result.alert_s = alert, max(0.0, at)
                    if ((alert["trigger"], alert["cause"]) == case.expect
                            and alert["ranks"] == [FAULTY]):
                        result.right, result.cause_s = alert, max(0.0, at)
                        break
        finally:
            result.report = _stop(monitor)  # the ranks as the fault left them
            job.kill()
    return result


def healthy_alerts(build: Path, workdir: Path, seconds: float, hosts: int = 2,
                   python: str = "/usr/bin/python3") -> Tuple[List[dict], int]:
    """The alerts of `seconds` of healthy training, and the steps it trained meanwhile."""
    run_dir = workdir / f"healthy-{hosts}"
    run_dir.mkdir(parents=True, exist_ok=True)
    package = build / "python"
    env = {"PYTHONPATH": f"{package}/upguard/_bootstrap:{package}",
           "UPGUARD_WATCH_DIR": str(run_dir)}
    with Cluster(hosts) as cluster:
        job = cluster.launch(DDP, ["--steps", "0", "--quiet"], log_dir=run_dir / "logs",
                             python=python, env=env)
        monitor = subprocess.Popen([str(build / "upguard"), "watch", "--attach", str(run_dir)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(seconds)
            first = _read_ring(run_dir, 0)
            steps = first.step if first is not None else 0
        finally:
            _stop(monitor)
            job.kill()
    return _alerts(run_dir / "alerts.jsonl"), steps


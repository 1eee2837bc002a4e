"""Machines for `upguard machines` (issue 16, part 3): each "machine" a network namespace on a
shared bridge (cluster.py) with a cgroup of its own in every v1 controller there is (cpu,
cpuacct, memory, blkio), its own `upguard machines agent` (inside the namespace and the cgroup,
writing its own CSV), one rank of a DDP training, and faults planted in it from outside, each
labelled (machine, kind, start, end) in the run directory. Root only; stdlib only.

    with Machines(4, run_dir, upguard="build/release/upguard") as machines:
        machines.start_agents()
        job = machines.train(["--steps", "0", "--quiet"])
        fault = machines.fault("cpu_quota", 1)
        fault.start(); time.sleep(20); fault.stop()      # labels.csv gets its line
    # namespaces, links, qdiscs, cgroups, agents, ranks and faults' processes are gone here

Machine k is named node-k, runs rank k, and its cgroup is ugf-<rid>-<pid>-h<k> (sweep.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep  # noqa: E402
from cluster import PYTHON, Cluster, Job, join_cgroups  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DDP = REPO / "examples" / "gpt_ddp.py"
# The faults' labels, as `upguard machines fit --labels` reads them (src/machines/fault_labels.h):
# a header, then machine,start,end,kind; times in seconds since the epoch.
LABELS, LABELS_HEADER = "labels.csv", "machine,start,end,kind\n"

# The processes a fault starts in a machine's cgroup.
_BUSY = "while True: pass"
_HOG = """
import sys, time
size, chunk = int(sys.argv[1]) << 20, 64 << 20
held = []
while sum(map(len, held)) < size:  # allocate gradually, then keep every page touched
    held.append(bytearray(b"x" * chunk)); time.sleep(0.05)
while True:
    for block in held:
        block[::4096] = b"y" * len(range(0, len(block), 4096))
    time.sleep(0.5)
"""
_WRITER = """
import os, sys
path, cap, chunk = sys.argv[1], int(sys.argv[2]) << 20, os.urandom(8 << 20)
while True:  # write and sync, then start over below the cap: the disk's real work
    with open(path, "wb") as out:
        for _ in range(cap // len(chunk)):
            out.write(chunk); out.flush(); os.fsync(out.fileno())
    os.unlink(path)
"""


class Fault:
    """One fault on one machine: start() plants it, stop() undoes it and appends the label.
    The cluster stops a fault still running when it closes (no label then)."""

    def __init__(self, machines: "Machines", kind: str, host: int,
                 plant: Callable[[], Callable[[], None]]):
        self.machines, self.kind, self.host = machines, kind, host
        self._plant = plant
        self._undo: Optional[Callable[[], None]] = None  # while planted
        self.start_time: Optional[float] = None
        self.end_time: Optional[float] = None

    def start(self) -> None:
        self.start_time = time.time()
        self._undo = self._plant()
        self.machines.add_undo(self._release)

    def _release(self) -> None:
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    def stop(self) -> None:
        self._release()
        self.end_time = time.time()
        path = self.machines.run_dir / LABELS
        with open(path, "a") as labels:
            if labels.tell() == 0:
                labels.write(LABELS_HEADER)
            labels.write(f"{self.machines.machine(self.host)},{self.start_time:.3f},"
                         f"{self.end_time:.3f},{self.kind}\n")


class Machines(Cluster):
    """A Cluster whose hosts are machines: cgroups, agents, a training, labelled faults."""

    def __init__(self, machines: int, run_dir: Path, upguard: str, python: str = PYTHON):
        super().__init__(machines)
        self.run_dir = Path(run_dir)
        self.upguard, self.python = str(upguard), python
        self.agents: List[subprocess.Popen] = []
        self._helpers: List[subprocess.Popen] = []

    def machine(self, host: int) -> str:
        return f"node-{host}"

    def cgroup(self, host: int) -> str:
        return f"{sweep.PREFIX}-{self.rid}-{self.pid}-h{host}"

    def cgroup_dirs(self, host: int) -> List[str]:
        return [f"{sweep.CGROUP_ROOT}/{controller}/{self.cgroup(host)}"
                for controller in sweep.CONTROLLERS
                if os.path.isdir(f"{sweep.CGROUP_ROOT}/{controller}")]

    def watch_dir(self, host: int) -> Path:
        """Where machine k's rank writes its watch ring (DIR/watch/rank<k>.ring)."""
        return self.run_dir / self.machine(host)

    def csv(self, host: int) -> Path:
        return self.run_dir / f"{self.machine(host)}.csv"

    def add_undo(self, undo: Callable[[], None]) -> None:
        self._undo.append(undo)

    def _build(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        super()._build()
        for host in range(self.size):
            for path in self.cgroup_dirs(host):
                os.mkdir(path)
                self._undo.append(lambda path=path: sweep.free_cgroup(path))
        self._undo.append(self._stop_helpers)

    def _spawn(self, host: int, argv: Sequence[str], log: Optional[Path] = None,
               netns: bool = True) -> subprocess.Popen:
        """A process on machine `host`: in its cgroups (and network namespace), killed at
        close. nsenter, not `ip netns exec`: that one mounts a /sys of its own, without the
        cgroup hierarchies the agent reads."""
        prefix = ["nsenter", f"--net={sweep.NETNS_DIR}/{self.netns(host)}"] if netns else []
        out = open(log, "ab") if log else subprocess.DEVNULL
        try:
            proc = subprocess.Popen([*prefix, *argv], stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True,
                                    preexec_fn=lambda: join_cgroups(self.cgroup_dirs(host)))
        finally:
            if log:
                out.close()
        self._helpers.append(proc)
        return proc

    def _stop_helpers(self) -> None:
        for proc in self._helpers:
            _end(proc)
        self._helpers.clear()

    def agent_options(self) -> str:
        """The agent's --help (to pass the options this build has)."""
        result = subprocess.run([self.upguard, "machines", "agent", "--help"],
                                capture_output=True, text=True)
        return result.stdout + result.stderr

    def start_agents(self, interval: float = 1.0) -> None:
        """One agent per machine, in its namespace and cgroups, appending to node-<k>.csv."""
        has_watch = "--watch-dir" in self.agent_options()
        for host in range(self.size):
            argv = [self.upguard, "machines", "agent", "--machine", self.machine(host),
                    "--cgroup", self.cgroup(host), "--interval", str(interval),
                    "--output", str(self.csv(host))]
            if has_watch:
                argv += ["--watch-dir", str(self.watch_dir(host))]
            self.agents.append(self._spawn(host, argv, self.run_dir / f"agent-{host}.log"))

    def stop_agents(self) -> None:
        for agent in self.agents:
            _end(agent, signal.SIGTERM)  # it finishes its line and exits 0
        self.agents.clear()

    def train(self, args: Sequence[str], script: Path = DDP, watch: bool = True) -> Job:
        """Rank k of `script` on machine k, in its cgroups; with `watch`, writing its watch ring
        into watch_dir(k) (the adapter's bootstrap, as `upguard watch -o` sets it)."""
        package = Path(self.upguard).resolve().parent / "python"
        env = {"PYTHONPATH": f"{package}/upguard/_bootstrap:{package}"} if watch else {}
        host_env = [{"UPGUARD_WATCH_DIR": str(self.watch_dir(host))} if watch else {}
                    for host in range(self.size)]
        return self.launch(script, args, log_dir=self.run_dir / "logs", python=self.python,
                           env=env, host_env=host_env,
                           host_cgroups=[self.cgroup_dirs(host) for host in range(self.size)])

    # Faults: fault(kind, host) -> Fault, not yet started.
    def fault(self, kind: str, host: int, **options) -> Fault:
        return Fault(self, kind, host, lambda: getattr(self, f"_plant_{kind}")(host, **options))

    def _plant_cpu_quota(self, host: int, cpus: float = 0.1) -> Callable[[], None]:
        """The machine's CPU cut to `cpus` CPUs (CFS quota per 100 ms period)."""
        path = f"{sweep.CGROUP_ROOT}/cpu/{self.cgroup(host)}"
        period = int(Path(f"{path}/cpu.cfs_period_us").read_text())
        _write(f"{path}/cpu.cfs_quota_us", str(max(1000, int(period * cpus))))
        return lambda: _write(f"{path}/cpu.cfs_quota_us", "-1")

    def _plant_cpu_contention(self, host: int, workers: int = 1) -> Callable[[], None]:
        """Busy loops in the machine's cgroup, competing with its rank."""
        procs = [self._spawn(host, [self.python, "-c", _BUSY], netns=False)
                 for _ in range(workers)]

        def undo() -> None:
            for proc in procs:
                _end(proc)
        return undo

    def _plant_memory_pressure(self, host: int, mib: int = 1536) -> Callable[[], None]:
        """A process in the machine's cgroup that allocates `mib` MiB and keeps touching it."""
        proc = self._spawn(host, [self.python, "-c", _HOG, str(mib)], netns=False)
        return lambda: _end(proc)

    def _plant_disk_fill(self, host: int, cap_mib: int = 512) -> Callable[[], None]:
        """A writer in the machine's cgroup filling a file (synced) in a temporary directory
        up to `cap_mib`, over and over; the directory is removed when it stops."""
        tmp = tempfile.mkdtemp(prefix=f"{self.cgroup(host)}{sweep.DISK_INFIX}",
                               dir=sweep.SCRATCH_DIR)
        proc = self._spawn(host, [self.python, "-c", _WRITER, f"{tmp}/fill", str(cap_mib)],
                           netns=False)

        def undo() -> None:
            _end(proc)
            shutil.rmtree(tmp, ignore_errors=True)
        return undo

    def _plant_rate_limit(self, host: int, rate: str = "20mbit") -> Callable[[], None]:
        """Both directions of the machine's link through a token bucket (tbf)."""
        tbf = ["root", "tbf", "rate", rate, "burst", "32kb", "latency", "100ms"]
        inside = ["ip", "netns", "exec", self.netns(host)]
        sides = (([], self.veth(host)), (inside, "eth0"))
        for prefix, dev in sides:
            sweep.run(*prefix, "tc", "qdisc", "add", "dev", dev, *tbf)

        def undo() -> None:
            for prefix, dev in sides:
                sweep.run(*prefix, "tc", "qdisc", "del", "dev", dev, "root", check=False)
        return undo

    def _plant_link_down(self, host: int) -> Callable[[], None]:
        """The machine's link down: nothing in or out of its namespace."""
        sweep.ip("link", "set", self.veth(host), "down")

        def undo() -> None:
            sweep.ip("link", "set", self.veth(host), "up", check=False)
        return undo

    def _plant_sigstop(self, host: int, stopped: float = 1.0,
                       running: float = 1.0) -> Callable[[], None]:
        """The rank stopped for `stopped` s, then let run for `running` s, over and over."""
        pid = self.jobs[-1].worker_pid(host)
        done = threading.Event()

        def cycle() -> None:
            while not done.is_set():
                _signal(pid, signal.SIGSTOP)
                done.wait(stopped)
                _signal(pid, signal.SIGCONT)
                done.wait(running)
        thread = threading.Thread(target=cycle, daemon=True)
        thread.start()

        def undo() -> None:
            done.set()
            thread.join()
            _signal(pid, signal.SIGCONT)
        return undo


# In the order the full scenario plants them: link_down last, since every rank halts with it
# and TCP's retransmission backoff keeps them halted for up to ~25 s after the link is back.
KINDS = ("cpu_quota", "cpu_contention", "memory_pressure", "disk_fill", "rate_limit",
         "sigstop", "link_down")


def read_labels(run_dir: Path) -> List[Dict[str, object]]:
    try:
        lines = (Path(run_dir) / LABELS).read_text().splitlines()
    except FileNotFoundError:
        return []
    labels = []
    for line in lines[1:]:
        machine, start, end, kind = line.split(",")
        labels.append({"machine": machine, "kind": kind, "start": float(start),
                       "end": float(end)})
    return labels


def _write(path: str, value: str, check: bool = True) -> None:
    try:
        with open(path, "w") as out:
            out.write(value)
    except OSError:
        if check:
            raise


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _end(proc: subprocess.Popen, signum: int = signal.SIGKILL, timeout: float = 5) -> None:
    """Ends a process (and its session), then reaps it; SIGKILL when `signum` is not enough."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

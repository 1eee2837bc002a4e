"""Machines on one host, for fault injection: each "host" a network namespace on a shared bridge,
one torchrun per host, and faults planted from outside (a slow CPU, a slow or dead link, a
stopped or killed rank). Root only; stdlib only, so benchmarks can import it too.

    sys.path.insert(0, "tests/faults")
    from cluster import Cluster

    with Cluster(hosts=2) as cluster:
        job = cluster.launch("examples/gpt_ddp.py", ["--steps", "0"], log_dir=tmp)
        job.wait_output(0, "step 3:", timeout=60)
        cluster.sigstop(1)              # or slow_cpu, rate_limit, link_down, sigkill
        ...
    # every namespace, link, qdisc, cgroup and process is gone here, whatever happened inside

Host k runs node rank k with one process, so host k holds exactly rank k. The bridge has
10.A.B.1/24 and host k 10.A.B.(10+k) on its `eth0`; A.B come from the run id, chosen so that no
route on this machine already uses that /24. Names follow sweep.py, which also removes what a
crashed run left.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep  # noqa: E402
from sweep import ip, run  # noqa: E402

PYTHON = "/usr/bin/python3"
_TORCHRUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchrun.py")
MASTER_PORT = 29500  # free in every run: host 0's namespace has a port space of its own
_LOCK = "/run/ugf.lock"  # serializes picking a subnet between concurrent runs
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)


def _children(pid: int) -> List[int]:
    """Child pids of `pid` (this kernel has no /proc/PID/task/TID/children: scan /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # The fields after the parenthesized command, which may itself hold spaces.
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _cmdline(pid: int) -> List[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def _running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Job:
    """One launch: a torchrun per host, its output in log_dir/host<k>.{out,err}."""

    def __init__(self, procs: List[subprocess.Popen], script: str, log_dir: Path):
        self.procs = procs
        self.script = script
        self.log_dir = log_dir
        self._workers: Dict[int, int] = {}

    def worker_pid(self, rank: int, timeout: float = 60) -> int:
        """The training process of `rank` (torchrun's python child), once it exists."""
        if rank in self._workers:
            return self._workers[rank]
        torchrun = self.procs[rank]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # The child that runs the script (a newer torchrun may start helpers too).
            workers = [pid for pid in _children(torchrun.pid) if self.script in _cmdline(pid)]
            if workers:
                self._workers[rank] = workers[0]
                return workers[0]
            if torchrun.poll() is not None:
                raise RuntimeError(f"torchrun of rank {rank} exited ({torchrun.returncode}) "
                                   f"before starting a worker: see {self.log_dir}")
            time.sleep(0.05)
        raise TimeoutError(f"rank {rank} has no worker after {timeout} s: see {self.log_dir}")

    def wait(self, timeout: float) -> List[int]:
        """Every torchrun's exit code; raises subprocess.TimeoutExpired past the deadline."""
        deadline = time.monotonic() + timeout
        return [proc.wait(max(0.0, deadline - time.monotonic())) for proc in self.procs]

    def kill(self) -> None:
        """SIGKILL every torchrun and worker (each torchrun leads a session of its own)."""
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for pid in self._workers.values():
            try:
                os.kill(pid, signal.SIGKILL)  # one may have left the session: be sure
            except ProcessLookupError:
                pass
        for proc in self.procs:
            proc.wait()
        # Orphaned workers are reaped by init: wait until they are gone or zombies, so that a
        # caller sees them dead when this returns.
        deadline = time.monotonic() + 10
        while any(_running(pid) for pid in self._workers.values()) and \
                time.monotonic() < deadline:
            time.sleep(0.02)

    def stdout(self, rank: int) -> str:
        return (self.log_dir / f"host{rank}.out").read_text(errors="replace")

    def stderr(self, rank: int) -> str:
        return (self.log_dir / f"host{rank}.err").read_text(errors="replace")

    def wait_output(self, rank: int, text: str, timeout: float) -> float:
        """Wait until `text` appears in rank's stdout; returns time.monotonic() when seen
        (within ~20 ms), so tests can time steps from the lines a script prints."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stdout(rank):
                return time.monotonic()
            if self.procs[rank].poll() is not None:
                raise RuntimeError(f"rank {rank} exited ({self.procs[rank].returncode}) "
                                   f"without printing {text!r}:\n{self.stderr(rank)[-3000:]}")
            time.sleep(0.02)
        raise TimeoutError(f"rank {rank} did not print {text!r} in {timeout} s")


class Cluster:
    """N hosts joined by a bridge. Everything it creates is undone, last first, on exit from the
    `with`, at interpreter exit, or on SIGTERM/SIGHUP (turned into SystemExit so the `with`
    unwinds); cleanup runs with stop signals blocked so a second Ctrl-C cannot cut it short."""

    def __init__(self, hosts: int = 2):
        if not 2 <= hosts <= 4:
            raise ValueError(f"a cluster has 2 to 4 hosts, not {hosts}")
        self.size = hosts
        self.pid = os.getpid()
        self.rid = ""
        self.subnet = ""  # "10.A.B"
        self.jobs: List[Job] = []
        self._undo: List[Callable[[], None]] = []
        self._saved_handlers: Dict[int, object] = {}
        self._closed = False

    # Names and addresses of the parts.
    def netns(self, host: int) -> str:
        return sweep.netns_name(self.rid, self.pid, host)

    def veth(self, host: int) -> str:
        return sweep.veth_name(self.rid, self.pid, host)

    def address(self, host: int) -> str:
        return f"{self.subnet}.{10 + host}"

    @property
    def bridge(self) -> str:
        return sweep.bridge_name(self.rid, self.pid)

    def __enter__(self) -> "Cluster":
        self._catch_signals()
        atexit.register(self.close)
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _catch_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) is signal.SIG_DFL:
                self._saved_handlers[signum] = signal.signal(signum, _exit_on_signal)

    def _build(self) -> None:
        # Choosing a free /24 and taking it (the bridge's address makes its route) is one step
        # under a lock, so two runs starting together cannot pick the same one.
        with open(_LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            routes = ip("-4", "-o", "route", "show")
            taken = {item.rid for item in sweep.leftovers()}
            while True:
                number = random.randrange(16 * 256)
                self.rid, self.subnet = f"{number:03x}", f"10.{100 + number // 256}.{number % 256}"
                if self.rid not in taken and f"{self.subnet}." not in routes:
                    break
            self._run_undoable(["ip", "link", "add", self.bridge, "type", "bridge",
                                "forward_delay", "0"], ["ip", "link", "delete", self.bridge])
            ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
            ip("link", "set", self.bridge, "up")
        for host in range(self.size):
            self._add_host(host)

    def _add_host(self, host: int) -> None:
        ns, veth = self.netns(host), self.veth(host)
        self._run_undoable(["ip", "netns", "add", ns], ["ip", "netns", "delete", ns],
                           before_undo=lambda: sweep.kill_netns_processes(ns))
        # Deleting our end deletes the pair, the namespace's eth0 with it.
        self._run_undoable(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0",
                            "netns", ns], ["ip", "link", "delete", veth])
        ip("link", "set", veth, "master", self.bridge, "up")
        inside = ["netns", "exec", ns, "ip"]
        ip(*inside, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
        ip(*inside, "link", "set", "eth0", "up")
        ip(*inside, "link", "set", "lo", "up")

    def _run_undoable(self, do: Sequence[str], undo: Sequence[str],
                      before_undo: Optional[Callable[[], None]] = None) -> None:
        """Run `do` now and remember to run `undo` (after `before_undo`) at close."""
        run(*do)

        def undo_it() -> None:
            if before_undo:
                before_undo()
            run(*undo, check=False)
        self._undo.append(undo_it)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        errors = []
        try:
            for job in self.jobs:
                job.kill()
            for undo in reversed(self._undo):
                try:
                    undo()
                except Exception as error:  # keep undoing the rest; report at the end
                    errors.append(error)
            self._undo.clear()
            for signum, handler in self._saved_handlers.items():
                signal.signal(signum, handler)
            atexit.unregister(self.close)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if errors:
            raise RuntimeError(f"cleanup of cluster {self.rid} failed: {errors}")

    def launch(self, script: str, args: Sequence[str] = (), log_dir: Optional[Path] = None,
               python: str = PYTHON, env: Optional[Dict[str, str]] = None,
               host_env: Optional[Sequence[Dict[str, str]]] = None,
               host_cgroups: Optional[Sequence[Sequence[str]]] = None) -> Job:
        """One `torchrun --nnodes N --node_rank k` (through torchrun.py) per host inside its
        namespace, rendezvous at host 0, gloo on eth0; stdout and stderr of host k (its rank's
        too) in log_dir/host<k>.{out,err}. `env` adds to (or overrides) this process's, and
        `host_env[k]` to host k's (a watch directory of its own, say); host k's torchrun, and
        so its rank, starts in the cgroup directories `host_cgroups[k]`."""
        log_dir = Path(log_dir or f"/tmp/{self.netns(0)}-logs")
        log_dir.mkdir(parents=True, exist_ok=True)
        child_env = {**os.environ, "GLOO_SOCKET_IFNAME": "eth0", "TP_SOCKET_IFNAME": "eth0",
                     "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
        procs = []
        for host in range(self.size):
            command = ["ip", "netns", "exec", self.netns(host),  # ip execs: no extra process
                       python, _TORCHRUN, "--nnodes", str(self.size),
                       "--nproc_per_node", "1", "--node_rank", str(host),
                       "--master_addr", self.address(0), "--master_port", str(MASTER_PORT),
                       str(script), *map(str, args)]
            with open(log_dir / f"host{host}.out", "wb") as out, \
                    open(log_dir / f"host{host}.err", "wb") as err:
                env_k = {**child_env, **(host_env[host] if host_env else {})}
                cgroups = host_cgroups[host] if host_cgroups else ()
                procs.append(subprocess.Popen(command, stdout=out, stderr=err, env=env_k,
                                              start_new_session=True,
                                              preexec_fn=lambda dirs=cgroups: join_cgroups(dirs)))
        job = Job(procs, str(script), log_dir)
        self.jobs.append(job)
        return job

    # Faults. Each acts on the newest job's rank and is undone at close (a stopped rank is
    # killed then, which needs no SIGCONT).
    def _worker(self, rank: int) -> int:
        if not self.jobs:
            raise RuntimeError("no job: launch() first")
        return self.jobs[-1].worker_pid(rank)

    def slow_cpu(self, rank: int, factor: float) -> None:
        """Cap the rank's process at 1/factor of one CPU (cgroup v1 CFS quota, every thread)."""
        path = sweep.cgroup_path(self.rid, self.pid, rank)
        os.makedirs(path, exist_ok=True)
        self._undo.append(lambda: sweep.free_cgroup(path))
        with open(f"{path}/cpu.cfs_period_us") as period_file:
            period = int(period_file.read())
        with open(f"{path}/cpu.cfs_quota_us", "w") as quota:
            quota.write(str(max(1000, int(period / factor))))  # the kernel's minimum is 1 ms
        pid = self._worker(rank)
        # Threads made later inherit their creator's cgroup; moving today's ones is enough.
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"{path}/tasks", "w") as tasks:
                    tasks.write(tid)
            except (ProcessLookupError, OSError):
                pass  # the thread ended meanwhile

    def rate_limit(self, host: int, rate: str = "50mbit", burst: str = "64kb",
                   latency: str = "100ms") -> None:
        """Token-bucket both directions of host's link (tbf: netem is not in this kernel)."""
        tbf = ["root", "tbf", "rate", rate, "burst", burst, "latency", latency]
        inside = ["ip", "netns", "exec", self.netns(host)]
        for prefix, dev in (([], self.veth(host)), (inside, "eth0")):
            self._run_undoable([*prefix, "tc", "qdisc", "add", "dev", dev, *tbf],
                               [*prefix, "tc", "qdisc", "del", "dev", dev, "root"])

    def link_down(self, host: int) -> None:
        self._run_undoable(["ip", "link", "set", self.veth(host), "down"],
                           ["ip", "link", "set", self.veth(host), "up"])

    def sigstop(self, rank: int) -> None:
        os.kill(self._worker(rank), signal.SIGSTOP)

    def sigcont(self, rank: int) -> None:
        os.kill(self._worker(rank), signal.SIGCONT)

    def sigkill(self, rank: int) -> None:
        os.kill(self._worker(rank), signal.SIGKILL)


def join_cgroups(dirs: Sequence[str]) -> None:
    """Move the calling process into each cgroup v1 directory (a Popen's preexec_fn: the child
    joins before it execs, so everything it starts is in them too)."""
    for path in dirs:
        with open(f"{path}/cgroup.procs", "w") as procs:
            procs.write(str(os.getpid()))


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)

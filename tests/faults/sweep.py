"""Names of the fault harness's kernel objects, and the sweeper for those crashed runs left.

Every network namespace, link and cgroup that cluster.py creates is named after its run id and
its creator's pid, so that anyone can tell whose it is without a registry file:

    netns   ugf-<rid>-<pid>-h<k>                 host k
    links   ugf<rid><pid>b, ugf<rid><pid>v<k>    the bridge, host k's end of its veth pair
    cgroup  /sys/fs/cgroup/cpu/ugf-<rid>-<pid>-r<k>   rank k slowed by slow_cpu
    cgroup  /sys/fs/cgroup/{cpu,cpuacct,memory,blkio}/ugf-<rid>-<pid>-h<k>   machine k
            (machines_cluster.py: the rank, its agent and the faults planted in it)
    dir     /var/tmp/ugf-<rid>-<pid>-h<k>-disk-*   what a disk-filling fault on machine k writes

(a link name has 15 characters at most: no dashes there; <rid> is always 3 hex digits). Qdiscs
live on those links and go with them. The sweeper removes only objects whose creator is dead;
a live creator cleans up after itself.

    /usr/bin/python3 tests/faults/sweep.py          # list leftovers, remove the dead ones
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import List, Optional

PREFIX = "ugf"
CGROUP_ROOT = "/sys/fs/cgroup"
CPU_CGROUP = f"{CGROUP_ROOT}/cpu"
CONTROLLERS = ("cpu", "cpuacct", "memory", "blkio")  # the cgroup v1 hierarchies swept
SCRATCH_DIR, DISK_INFIX = "/var/tmp", "-disk-"  # a disk-filling fault's directory
NETNS_DIR = "/run/netns"

_DASHED = re.compile(rf"^{PREFIX}-([0-9a-f]{{3}})-(\d+)-[hr]\d+$")
_LINK = re.compile(rf"^{PREFIX}([0-9a-f]{{3}})(\d+)(b|v\d+)$")


def netns_name(rid: str, pid: int, host: int) -> str:
    return f"{PREFIX}-{rid}-{pid}-h{host}"


def bridge_name(rid: str, pid: int) -> str:
    return f"{PREFIX}{rid}{pid}b"


def veth_name(rid: str, pid: int, host: int) -> str:
    return f"{PREFIX}{rid}{pid}v{host}"


def cgroup_path(rid: str, pid: int, rank: int) -> str:
    return f"{CPU_CGROUP}/{PREFIX}-{rid}-{pid}-r{rank}"


@dataclass(frozen=True)
class Leftover:
    kind: str  # "netns", "link", "cgroup" or "dir"
    name: str  # a cgroup's with its controller: "cpu/ugf-..."
    rid: str
    pid: int


def run(*argv: str, check: bool = True) -> str:
    """Run a command; a failure raises with its own message (ip and tc name object and reason)."""
    result = subprocess.run(argv, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip()}")
    return result.stdout


def ip(*args: str, check: bool = True) -> str:
    return run("ip", *args, check=check)


def _listdir(path: str) -> List[str]:
    try:
        return os.listdir(path)
    except FileNotFoundError:
        return []


def leftovers(rid: Optional[str] = None) -> List[Leftover]:
    """Every object named with the prefix (of run `rid` only, if given), whoever made it."""
    found = []
    cgroups = [("cgroup", [f"{controller}/{name}"
                           for name in _listdir(f"{CGROUP_ROOT}/{controller}")], _DASHED)
               for controller in CONTROLLERS]
    for kind, names, pattern in (
            ("netns", _listdir(NETNS_DIR), _DASHED),
            ("link", [line.split(":")[1].strip().split("@")[0]
                      for line in ip("-o", "link", "show").splitlines()], _LINK),
            *cgroups,
            ("dir", [name for name in _listdir(SCRATCH_DIR) if DISK_INFIX in name], _DASHED)):
        for name in names:
            match = pattern.match(name.rsplit("/", 1)[-1].split(DISK_INFIX)[0])
            if match and rid in (None, match.group(1)):
                found.append(Leftover(kind, name, match.group(1), int(match.group(2))))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def free_cgroup(path: str, timeout: float = 10) -> None:
    """Move every task of the cgroup back to its hierarchy's root, then remove the cgroup. A
    task just killed keeps it busy (EBUSY) until its exit completes: retry until the deadline."""
    root_tasks = f"{os.path.dirname(path)}/tasks"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(f"{path}/tasks") as tasks:
                tids = tasks.read().split()
        except FileNotFoundError:
            return
        for tid in tids:
            try:
                with open(root_tasks, "w") as root:
                    root.write(tid)
            except OSError:
                pass  # the task exited meanwhile
        try:
            os.rmdir(path)
            return
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def kill_netns_processes(netns: str) -> None:
    """SIGKILL whatever still runs inside the namespace (deleting a netns does not stop them)."""
    for pid in ip("netns", "pids", netns, check=False).split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def remove(item: Leftover) -> None:
    if item.kind == "netns":
        kill_netns_processes(item.name)
        ip("netns", "delete", item.name, check=False)
    elif item.kind == "link":
        ip("link", "delete", item.name, check=False)  # a veth's peer goes with it
    elif item.kind == "dir":
        shutil.rmtree(f"{SCRATCH_DIR}/{item.name}", ignore_errors=True)
    else:
        free_cgroup(f"{CGROUP_ROOT}/{item.name}")


def sweep() -> List[Leftover]:
    """Remove the leftovers whose creating process is dead; returns what it removed."""
    dead = [item for item in leftovers() if not alive(item.pid)]
    for item in dead:
        remove(item)
    return dead


if __name__ == "__main__":
    removed = sweep()
    for item in removed:
        print(f"removed {item.kind} {item.name} (creator {item.pid} is dead)")
    for item in leftovers():
        print(f"kept {item.kind} {item.name} (creator {item.pid} is alive)")
    sys.exit(0)

"""`upguard machines agent`'s endpoint and files against clients and files it did not make: a
client that dribbles its request a byte every 0.9 s costs only its own connection (scrapes go on,
SIGTERM ends the agent at once), a request is bounded in time and size, the agent listens on
loopback unless told otherwise and prints where it really listens, and `--output` never changes a
file the agent did not write; a line torn by a kill costs that line only."""

from __future__ import annotations

import hashlib
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import List, Optional, Tuple

from conftest import ONE_TORCH, UPGUARD, upguard

pytestmark = ONE_TORCH

HEADER = "time,machine,metric,value\n"


def start_agent(listen: str, *args: str) -> Tuple[subprocess.Popen, str, int]:
    """The agent and the host and port of the line it prints first."""
    agent = subprocess.Popen([str(UPGUARD), "machines", "agent", "--listen", listen,
                              "--interval", "0.2", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    line = agent.stdout.readline()
    assert "serving http://" in line, line + agent.stderr.read()
    host, port = line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)
    return agent, host, int(port)


def end(agent: subprocess.Popen) -> None:
    if agent.poll() is None:
        agent.kill()
        agent.wait()


class Dribbler:
    """A client that sends one byte every 0.9 s and never finishes its request; records what
    the server answered and when it closed the connection."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.answer = b""
        self.closed_after: Optional[float] = None
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.sock.settimeout(0.9)
        while not self._stop.is_set():
            try:
                self.sock.sendall(b"G")
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                data = b""
            if not data:
                self.closed_after = time.monotonic() - self._started
                return
            self.answer += data

    def wait_closed(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def timed_scrape(port: int) -> float:
    started = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=3) as reply:
        assert reply.status == 200 and b"upguard_cpu_utilization" in reply.read()
    return time.monotonic() - started


def test_a_dribbling_client_blocks_neither_scrapes_nor_sigterm() -> None:
    """Today's server read the dribbler's bytes for an hour, one connection at a time: every
    scrape and SIGTERM waited behind it."""
    agent, _, port = start_agent("127.0.0.1:0")
    dribblers: List[Dribbler] = []
    try:
        time.sleep(0.3)  # a first sample is published
        dribblers = [Dribbler(port) for _ in range(2)]
        time.sleep(0.2)  # both are accepted and being read
        took = [timed_scrape(port) for _ in range(3)]
        assert max(took) < 1.0, took  # measured: a few ms
        assert all(d.closed_after is None for d in dribblers)  # still connected
        started = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        try:
            code = agent.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        waited = time.monotonic() - started
        assert code == 0 and waited < 2.0, (code, waited)
    finally:
        end(agent)
        for dribbler in dribblers:
            dribbler.close()


def test_a_request_is_bounded_in_time_and_size() -> None:
    """The request head has 5 s (408 after) and 8 KiB (431 past it)."""
    agent, _, port = start_agent("127.0.0.1:0")
    dribbler = None
    try:
        dribbler = Dribbler(port)
        with socket.create_connection(("127.0.0.1", port), timeout=3) as big:
            big.sendall(b"GET /metrics HTTP/1.1\r\nX-Padding: " + b"a" * 9000)
            assert big.recv(4096).startswith(b"HTTP/1.0 431 "), "no 431 for a 9 KiB head"
        assert dribbler.wait_closed(timeout=8), "the dribbler is still connected after 8 s"
        assert dribbler.answer.startswith(b"HTTP/1.0 408 "), dribbler.answer
        assert 4.0 < dribbler.closed_after < 7.0, dribbler.closed_after
    finally:
        end(agent)
        if dribbler is not None:
            dribbler.close()


def listening_addresses(port: int) -> List[str]:
    """The local addresses of the IPv4 sockets listening on `port` ("0100007F": 127.0.0.1)."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, hex_port = fields[1].split(":")
        if int(hex_port, 16) == port and fields[3] == "0A":  # TCP_LISTEN
            found.append(address)
    return found


def test_it_listens_on_loopback_unless_told_and_prints_where() -> None:
    agent, host, port = start_agent(":0")  # no host: loopback only
    try:
        assert host == "127.0.0.1"
        assert listening_addresses(port) == ["0100007F"]
    finally:
        end(agent)
    agent, host, port = start_agent("0.0.0.0:0")  # every interface, when asked, and it says so
    try:
        assert host == "0.0.0.0"
        assert listening_addresses(port) == ["00000000"]
        time.sleep(0.3)  # a first sample is published
        assert timed_scrape(port) < 1.0
    finally:
        end(agent)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_output_refuses_files_it_did_not_write_and_changes_nothing(tmp_path: Path) -> None:
    notes = tmp_path / "notes.csv"
    notes.write_text("name,phone\nada,555-0100\n")
    foreign_db = tmp_path / "app.db"
    with sqlite3.connect(foreign_db) as db:  # another program's database, rollback journal
        db.execute("CREATE TABLE users (name TEXT)")
        db.execute("INSERT INTO users VALUES ('ada')")
    db.close()
    for path, says in ((notes, "is not a metrics CSV"), (foreign_db, "not upguard's")):
        before = digest(path)
        result = upguard("machines", "agent", "--output", path, "--duration", "0.3",
                         "--interval", "0.1", timeout=20)
        assert result.returncode == 2, result.stdout + result.stderr
        assert str(path) in result.stderr and says in result.stderr, result.stderr
        assert digest(path) == before, f"{path} was changed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "notes.csv"]


def test_a_torn_last_line_costs_that_line_only(tmp_path: Path) -> None:
    """A kill -9 mid-line leaves a line without its end: the reader skips it (with a warning),
    and the agent appending to its file again removes it before it writes."""
    csv = tmp_path / "node-0.csv"
    run = ["machines", "agent", "--output", csv, "--machine", "node-0", "--interval", "0.1",
           "--duration", "0.35"]
    assert upguard(*run, timeout=20).returncode == 0
    lines = csv.read_text().splitlines()
    assert lines[0] == HEADER.strip() and len(lines) > 2
    torn = lines[1][:lines[1].index("cpu_util") + 4]  # "<time>,node-0,cpu_"
    with open(csv, "a") as out:
        out.write(str(float(lines[-1].split(",")[0]) + 0.05) + torn[torn.index(","):])
    result = upguard("machines", "detect", "--input", csv)
    assert result.returncode == 0, result.stderr
    assert f"{csv}:{len(lines) + 1}: skipped a torn last line" in result.stderr, result.stderr
    result = upguard(*run, timeout=20)
    assert result.returncode == 0, result.stderr
    assert "removed a torn last line" in result.stderr, result.stderr
    again = csv.read_text()
    assert again.startswith("\n".join(lines) + "\n") and again.endswith("\n")
    assert all(len(line.split(",")) == 4 for line in again.splitlines())
    assert len(again.splitlines()) > len(lines)
    result = upguard("machines", "detect", "--input", csv)
    assert result.returncode == 0 and "torn" not in result.stderr, result.stderr

"""`upguard diff` on a terminal (issue 18): the verdict and DIFFERS colored, plain with NO_COLOR
or through a pipe; a progress line on a terminal's stderr, erased before the report."""

from __future__ import annotations

import os
import re
import subprocess

from conftest import UPGUARD, planted


def on_terminal(*args, env=None) -> str:
    """stdout and stderr of `upguard ARGS` on a pseudo-terminal, as the terminal got them."""
    leader, follower = os.openpty()
    process = subprocess.Popen([str(UPGUARD), *map(str, args)], stdout=follower, stderr=follower,
                               env={**os.environ, "TERM": "xterm", **(env or {})})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode()


def without_progress(text: str) -> str:
    """The terminal's text without the progress line (drawn and erased with CR, ESC [K)."""
    drawn = re.sub(r"\r\x1b\[K[^\r\n]*(?=\r\x1b\[K)", "", text)  # each draw, up to the next
    return drawn.replace("\r\x1b[K", "").replace("\r", "")


def test_colored_on_a_terminal_plain_otherwise(runs, reference):
    candidate = planted(runs, "gelu-tanh")
    colored = on_terminal("diff", reference, candidate, env={"NO_COLOR": ""})
    assert "\x1b[1;31mCULPRIT\x1b[0m  step 2, forward, aten::gelu" in colored
    assert "\x1b[31mDIFFERS\x1b[0m" in colored
    assert "\x1b[1;31mresult: culprit\x1b[0m" in colored
    plain = on_terminal("diff", reference, candidate, env={"NO_COLOR": "1"})
    assert re.search(r"upguard diff: 1 rank, step \d, \d steps? compared, [\d,]+ ops \(", plain)
    plain = without_progress(plain)
    assert "\x1b[" not in plain
    assert "  CULPRIT  step 2, forward, aten::gelu" in plain
    piped = subprocess.run([str(UPGUARD), "diff", reference, candidate], capture_output=True,
                           text=True, timeout=120)
    assert "\x1b" not in piped.stdout and "\x1b" not in piped.stderr
    assert piped.stdout == plain  # the same report, no progress line

"""`upguard diff` on a terminal (issue 18): the verdict and DIFFERS colored, plain with NO_COLOR
or through a pipe; a progress line on a terminal's stderr, erased before the report. `upguard
record` on a terminal: its progress line on the last row while the training prints above it."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import termios

from conftest import ONE_TORCH, PYTHON, TRAIN, UPGUARD, planted

pytestmark = ONE_TORCH


def on_terminal(*args, env=None, rows=24, columns=100) -> str:
    """stdout and stderr of `upguard ARGS` on a pseudo-terminal of `rows` x `columns`, as the
    terminal got them."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
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


def test_record_keeps_the_last_row_for_its_progress_while_the_training_prints(runs, tmp_path):
    progress_tmp = tmp_path / "tmp"
    progress_tmp.mkdir()
    text = on_terminal("record", "-o", runs / "progress", "--", PYTHON, TRAIN, "--steps", "12",
                       env={"TMPDIR": str(progress_tmp), "NO_COLOR": ""}, rows=24, columns=120)
    reserve = "\n\x1b7\x1b[1;23r\x1b8\x1b[1A"  # rows 1..23 scroll, row 24 is the line's
    release = "\x1b7\x1b[r\x1b[24;1H\x1b[2K\x1b8"
    assert text.count(reserve) == 1 and text.count(release) == 1, text[-2000:]
    start, end = text.index(reserve), text.index(release)
    # The training's own lines, whole, between the two: nothing drawn ran into them (a line
    # starts after the previous one or where a draw put the cursor back).
    for step in range(12):
        assert re.search(rf"(\n|\x1b8)step {step}: loss \d+\.\d+\r?\n", text[start:end]), step
    # Each draw: the cursor saved, row 24 cleared, the line in inverse video, the cursor back.
    draws = re.findall(r"\x1b7\x1b\[24;1H\x1b\[2K\x1b\[7m(upguard record: [^\x1b]*)\x1b\[0m\x1b8",
                       text[start:end])
    counted = [re.fullmatch(r"upguard record: 1 rank( \(1 done\))?, step (\d+), (\d+) steps? "
                            r"recorded, ([\d,]+) ops( \([\d,]+ ops/s\))?, [\d.]+ [KMG]iB", line)
               for line in draws if "waiting" not in line]
    assert counted and all(counted), draws
    steps = [int(m.group(2)) for m in counted]
    ops = [int(m.group(4).replace(",", "")) for m in counted]
    assert steps == sorted(steps) and ops == sorted(ops) and steps[-1] >= 2, draws
    assert ops[-1] >= 1000 * int(counted[-1].group(3)), draws  # the GPT's thousands of ops a step
    assert any(m.group(5) for m in counted), draws  # a rate once two steps were seen
    assert "upguard record: wrote " in text[end:]
    # The ranks' records and their directory removed (torch 2 keeps its own torchinductor_*).
    assert list(progress_tmp.glob("upguard-progress-*")) == []
    # Asked not to, or not on a terminal: no row kept, nothing drawn.
    quiet = on_terminal("record", "-o", runs / "progress-off", "--no-progress", "--", PYTHON,
                        TRAIN, "--steps", "2", env={"TMPDIR": str(progress_tmp)})
    assert "\x1b[" not in quiet and "upguard record: wrote " in quiet
    piped = subprocess.run([str(UPGUARD), "record", "-o", runs / "progress-piped", "--", PYTHON,
                            TRAIN, "--steps", "2"], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "TMPDIR": str(progress_tmp)})
    assert piped.returncode == 0 and "\x1b" not in piped.stderr + piped.stdout
    assert list(progress_tmp.glob("upguard-progress-*")) == []

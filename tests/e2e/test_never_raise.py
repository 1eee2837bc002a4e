"""Never raise into the training: a full disk, a file size limit, the --max-bytes budget or a
resume snapshot that cannot be written stop (a part of) upguard with one warning, the code
after `with upguard.record(...)` runs, the weights are those of the training without upguard,
and the trace is readable and says up to which step it got (docs/formats/trace.md §5.7)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

from conftest import BUILD, PYTHON, show_json, upguard

SCRIPT = Path(__file__).parent / "checkpoint_train.py"
ENV = dict(os.environ, PYTHONPATH=str(BUILD / "python"))


def train(tmp_path: Path, *args: str, preexec_fn=None) -> subprocess.CompletedProcess:
    """checkpoint_train.py with its marker in tmp_path (never on the full disk)."""
    return subprocess.run([PYTHON, SCRIPT, "--marker", tmp_path / "checkpoint", *args],
                          env=ENV, capture_output=True, text=True, timeout=300,
                          preexec_fn=preexec_fn)


@pytest.fixture(scope="module")
def plain_weights(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The weights' checksum of the training without upguard."""
    result = train(tmp_path_factory.mktemp("plain"))
    assert result.returncode == 0, result.stderr
    return weights(result)


def weights(result: subprocess.CompletedProcess) -> str:
    lines = [line for line in result.stdout.splitlines() if line.startswith("weights ")]
    assert len(lines) == 1, result.stdout
    return lines[0]


def upguard_lines(stderr: str) -> List[str]:
    return [line for line in stderr.splitlines() if line.startswith("upguard")]


def assert_training_unharmed(result: subprocess.CompletedProcess, tmp_path: Path,
                             plain_weights: str, warning: str) -> None:
    """Exit 0, the code after the block ran, one warning and nothing else on stderr."""
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "checkpoint").read_text() == "checkpoint\n"
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, \
        result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("upguard: recording stopped, training "
                                                   "continues:"), result.stderr
    assert warning in lines[0], lines[0]
    assert weights(result) == plain_weights


def assert_stopped(run: Path, reason: str, phrase: str) -> int:
    """The trace reads to its end without damage and ends with a Stopped record; its step."""
    shown = show_json(run)  # no --allow-damaged: the tail is a whole record
    assert shown["complete"] is False
    stopped: Optional[Dict] = shown["stopped"]
    assert stopped is not None and stopped["reason"] == reason, shown.get("stopped")
    assert stopped["step"] > 0 and shown["steps"][0]["step"] == 0
    assert shown["steps"][-1]["step"] <= stopped["step"]
    diff = upguard("diff", run, run)
    assert diff.returncode == 0, diff.stderr
    note = f"incomplete: recording stopped at step {stopped['step']} ({phrase})"
    assert note in diff.stdout, diff.stdout
    return int(stopped["step"])


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 300 KiB tmpfs (root only), unmounted whatever the test did."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_reaches_no_code_after_the_with_block(tmp_path: Path, full_disk: Path,
                                                          plain_weights: str) -> None:
    result = train(tmp_path, "--run", str(full_disk / "run"))
    assert_training_unharmed(result, tmp_path, plain_weights, "No space left on device")
    assert_stopped(full_disk / "run", "disk_full", "disk full")


def test_a_file_size_limit_reaches_no_code_after_the_with_block(tmp_path: Path,
                                                                plain_weights: str) -> None:
    def limit_file_size() -> None:  # as `ulimit -f`; ignored SIGXFSZ: write() says EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    result = train(tmp_path, "--run", str(tmp_path / "run"), preexec_fn=limit_file_size)
    assert_training_unharmed(result, tmp_path, plain_weights, "File too large")
    assert_stopped(tmp_path / "run", "file_too_large", "file too large")


def test_record_on_a_full_disk_says_the_run_is_incomplete(tmp_path: Path, full_disk: Path,
                                                          plain_weights: str) -> None:
    result = upguard("record", "-o", full_disk / "run", "--", PYTHON, SCRIPT,
                     "--marker", tmp_path / "checkpoint")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, \
        result.stderr
    assert weights(result) == plain_weights
    step = assert_stopped(full_disk / "run", "disk_full", "disk full")
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("upguard record: wrote "), result.stderr
    assert f"incomplete: rank 0 stopped recording at step {step} (disk full)" in last, last
    assert len(upguard_lines(result.stderr)) == 2, result.stderr  # the warning, the summary


@pytest.mark.parametrize("route", ["python", "cli"])
def test_max_bytes_stops_recording_within_the_budget(tmp_path: Path, plain_weights: str,
                                                     route: str) -> None:
    run = tmp_path / "run"
    if route == "python":
        result = train(tmp_path, "--run", str(run), "--max-bytes", "100K")
        assert_training_unharmed(result, tmp_path, plain_weights, "byte budget of 100.0 KiB")
    else:
        result = upguard("record", "--max-bytes", "100K", "-o", run, "--", PYTHON, SCRIPT,
                         "--marker", tmp_path / "checkpoint")
        assert result.returncode == 0, result.stderr
        assert weights(result) == plain_weights
        assert "Traceback" not in result.stderr, result.stderr
    assert (run / "rank0.ugt").stat().st_size <= 100 * 1024
    step = assert_stopped(run, "max_bytes", "--max-bytes reached")
    if route == "cli":
        last = result.stderr.strip().splitlines()[-1]
        assert f"rank 0 stopped recording at step {step} (--max-bytes reached)" in last, last


def test_max_bytes_rejects_what_is_not_a_size(tmp_path: Path) -> None:
    result = upguard("record", "--max-bytes", "10MB", "-o", tmp_path / "run", "--", PYTHON,
                     SCRIPT, "--marker", tmp_path / "checkpoint")
    assert result.returncode == 2
    assert "--max-bytes '10MB': expected a byte count" in result.stderr
    assert not (tmp_path / "checkpoint").exists()


def test_a_resume_snapshot_that_cannot_be_saved_warns_once(tmp_path: Path,
                                                           plain_weights: str) -> None:
    # State a snapshot cannot hold (a lock): the save fails at step 2. (Snapshots go into the
    # recording's own staging directory, so a file in RUN no longer blocks them.)
    run = tmp_path / "run"
    result = train(tmp_path, "--run", str(run), "--resume-every", "2", "--steps", "60",
                   "--unsavable")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "checkpoint").exists()
    assert "Traceback" not in result.stderr, result.stderr
    lines = upguard_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("upguard: upguard.resume_point: saving the snapshot of step 2 to ")
    assert lines[0].endswith("training continues, without more snapshots"), lines[0]
    assert weights(result) == plain_weights
    assert show_json(run)["complete"] is True  # the recording itself went on to the end


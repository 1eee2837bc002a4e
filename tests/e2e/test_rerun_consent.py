"""Issue 37, part 3: a recorded command runs again only with consent.

`diff --explain`, `diff --zoom` and `record --against` re-run the argv, cwd and environment a
run directory's meta.json holds. A crafted run directory (text traces made binary by
upguard_ugt_text, a meta.json written here) says it was recorded by another user on another
host and names a command that writes a marker file with its environment: upguard must print
that command and refuse (exit 4) unless told `--trust-run DIR` or answered yes on a terminal,
and a re-run must never set the loader and path variables a meta.json lists.
"""

from __future__ import annotations

import ast
import json
import os
import pty
import select
import socket
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import BUILD, ONE_TORCH, PYTHON, REPO, upguard

# The consent is the CLI's, the same whatever torch the recorded program would import.
pytestmark = ONE_TORCH

UGT_TEXT = BUILD / "tools" / "upguard_ugt_text"
EXIT_UNTRUSTED = 4

# The command a run names: writes its environment to the marker file given.
MARKER_SCRIPT = """
import json, os, sys
with open(sys.argv[1], "w") as f:
    json.dump(dict(os.environ), f)
"""

# What a crafted env may try: the dynamic loader and the interpreter's search paths.
HOSTILE_ENV = {"LD_PRELOAD": "/nonexistent/upguard-test-evil.so",
               "LD_LIBRARY_PATH": "/nonexistent/upguard-test-lib",
               "PYTHONPATH": "/nonexistent/upguard-test-python",
               "PATH": "/nonexistent/upguard-test-bin"}

# A valid value for each numerics variable (PYTHONHASHSEED must be a number for Python to start).
NUMERICS_VALUES = {"PYTHONHASHSEED": "7", "OMP_NUM_THREADS": "3", "CUDA_VISIBLE_DEVICES": ""}


def numerics_env() -> List[str]:
    """NUMERICS_ENV of python/upguard/_meta.py, read without importing torch."""
    tree = ast.parse((REPO / "python" / "upguard" / "_meta.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "NUMERICS_ENV":
            return list(ast.literal_eval(node.value))
    raise AssertionError("NUMERICS_ENV not found in _meta.py")


def op_text(gelu_digest: str) -> str:
    """One step whose aten::gelu output differs between the runs: a culprit at step 0 #1."""
    return f"""op step=0 phase=forward name=aten::addmm module=fc site=model.py:1
  in self tensor float32[4] digest=@bias
  in mat1 tensor float32[2,3] digest=@x
  in mat2 tensor float32[3,4] digest=@w
  out tensor float32[2,4] digest=@h
op step=0 phase=forward name=aten::gelu module=act site=model.py:2
  in self tensor float32[2,4] digest=@h
  in approximate scalar 'none'
  out tensor float32[2,4] digest=@{gelu_digest} stats=min:0,max:1,mean:0.5,l2:1,finite:8
stepend 0
end
"""


def fingerprint_text(state_digest: str) -> str:
    """A fingerprint step whose model state differs: `diff --zoom` re-runs both commands."""
    return f"""op step=0 phase=other name=upguard::state
  in weight tensor float32[4] digest=@{state_digest}
stepend 0 fingerprint
end
"""


def own_meta(cwd: Path) -> Dict:
    return {"uid": os.getuid(), "hostname": socket.gethostname(), "cwd": str(cwd),
            "cwd_real": os.path.realpath(cwd)}


def make_run(tmp: Path, name: str, trace: str, marker: Path, **meta: object) -> Path:
    run = tmp / name
    run.mkdir()
    (tmp / f"{name}.txt").write_text(trace)
    subprocess.run([str(UGT_TEXT), "to-binary", str(tmp / f"{name}.txt"), str(run / "rank0.ugt")],
                   check=True)
    env = {**HOSTILE_ENV, **{n: NUMERICS_VALUES.get(n, f"upguard-{n}") for n in numerics_env()}}
    content = {"argv": [PYTHON, str(tmp / "marker.py"), str(marker)], "cwd": str(tmp),
               "env": env, "world_size": 1, **meta}
    (run / "meta.json").write_text(json.dumps(content))
    return run


@pytest.fixture()
def crafted(tmp_path: Path) -> Path:
    """Runs a and b, recorded (they say) by uid+4242 on another host; markers a.out, b.out."""
    (tmp_path / "marker.py").write_text(MARKER_SCRIPT)
    foreign = {**own_meta(tmp_path), "uid": os.getuid() + 4242, "user": "mallory",
               "hostname": "somebody-elses-host"}
    make_run(tmp_path, "a", op_text("g"), tmp_path / "a.out", **foreign)
    make_run(tmp_path, "b", op_text("g-other"), tmp_path / "b.out", **foreign)
    return tmp_path


def test_explain_refuses_a_foreign_run_printing_its_command(crafted: Path) -> None:
    result = upguard("diff", "a", "b", "--explain", cwd=crafted)
    assert result.returncode == EXIT_UNTRUSTED, result.stderr
    err = result.stderr
    assert "run A (a) is not known to be yours" in err, err
    assert f"recorded by uid {os.getuid() + 4242} (mallory)" in err, err
    assert "recorded on host 'somebody-elses-host'" in err, err
    assert f"{PYTHON} {crafted}/marker.py {crafted}/a.out" in err, err
    assert f"would run, in {crafted}:" in err, err
    assert "\n  OMP_NUM_THREADS=3\n" in err and "LD_LIBRARY_PATH LD_PRELOAD PATH PYTHONPATH" in err
    assert "pass --trust-run a" in err, err
    assert not (crafted / "a.out").exists() and not (crafted / "b.out").exists()


def test_trust_run_for_one_side_only_runs_neither(crafted: Path) -> None:
    """Both sides are asked before either runs: B refused, A's command was not run."""
    result = upguard("diff", "a", "b", "--explain", "--trust-run", "a", cwd=crafted)
    assert result.returncode == EXIT_UNTRUSTED, result.stderr
    assert "run B (b) is not known to be yours" in result.stderr, result.stderr
    assert not (crafted / "a.out").exists() and not (crafted / "b.out").exists()


def test_trusted_rerun_sets_only_the_numerics_environment(crafted: Path) -> None:
    result = upguard("diff", "a", "b", "--explain", "--trust-run", "a", "--trust-run", "b",
                     cwd=crafted)
    # The marker script records nothing, so the explanation itself fails after A's re-run.
    assert result.returncode == 2 and "recorded nothing" in result.stderr, result.stderr
    seen = json.loads((crafted / "a.out").read_text())
    for name, value in HOSTILE_ENV.items():
        assert value not in seen.get(name, ""), (name, seen.get(name))
    for name in numerics_env():  # every name the recorder writes reaches the re-run
        assert seen.get(name) == NUMERICS_VALUES.get(name, f"upguard-{name}"), name


def test_run_without_who_and_where_is_refused(tmp_path: Path) -> None:
    """A run from an upguard that did not record uid, host name and real cwd: asked, say why."""
    (tmp_path / "marker.py").write_text(MARKER_SCRIPT)
    make_run(tmp_path, "a", op_text("g"), tmp_path / "a.out", cwd=str(tmp_path))
    make_run(tmp_path, "b", op_text("g-other"), tmp_path / "b.out", cwd=str(tmp_path))
    result = upguard("diff", "a", "b", "--explain", cwd=tmp_path)
    assert result.returncode == EXIT_UNTRUSTED, result.stderr
    assert "does not say who recorded it and where (no uid, hostname, cwd_real)" in result.stderr
    assert not (tmp_path / "a.out").exists()


def test_own_run_reruns_without_asking(tmp_path: Path) -> None:
    (tmp_path / "marker.py").write_text(MARKER_SCRIPT)
    make_run(tmp_path, "a", op_text("g"), tmp_path / "a.out", **own_meta(tmp_path))
    make_run(tmp_path, "b", op_text("g-other"), tmp_path / "b.out", **own_meta(tmp_path))
    result = upguard("diff", "a", "b", "--explain", cwd=tmp_path)
    assert result.returncode == 2 and "recorded nothing" in result.stderr, result.stderr
    assert (tmp_path / "a.out").exists()


def run_on_terminal(args: List[str], cwd: Path, answer: bytes) -> Tuple[int, str]:
    """`upguard ARGS` with stdin and stderr on a pseudo-terminal that answers each question."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(BUILD / "upguard"), *args], cwd=cwd, stdin=slave, stderr=slave,
                            stdout=subprocess.PIPE)
    os.close(slave)
    shown, answered = b"", 0
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("upguard asked nothing within 60 s: " + shown.decode())
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal: it ended
            break
        if not chunk:
            break
        shown += chunk
        while answered < shown.count(b"[y/N]"):
            os.write(master, answer)
            answered += 1
    os.close(master)
    proc.wait(timeout=120)
    proc.stdout.close()
    return proc.returncode, shown.decode(errors="replace")


def test_terminal_asks_and_runs_only_on_yes(crafted: Path) -> None:
    code, shown = run_on_terminal(["diff", "a", "b", "--explain"], crafted, b"n\n")
    assert code == EXIT_UNTRUSTED and "Run it? [y/N]" in shown, shown
    assert "not confirmed" in shown and not (crafted / "a.out").exists(), shown
    code, shown = run_on_terminal(["diff", "a", "b", "--explain"], crafted, b"y\n")
    # Asked about A, then B, before either runs, and not again when each re-run starts; A's
    # then ran (and captured nothing: exit 2).
    assert shown.count("Run it? [y/N]") == 2 and "run B (b)" in shown, shown
    assert code == 2 and (crafted / "a.out").exists(), shown


def test_zoom_refuses_a_foreign_run(tmp_path: Path) -> None:
    (tmp_path / "marker.py").write_text(MARKER_SCRIPT)
    foreign = {**own_meta(tmp_path), "hostname": "somebody-elses-host"}
    make_run(tmp_path, "a", fingerprint_text("s"), tmp_path / "a.out", **foreign)
    make_run(tmp_path, "b", fingerprint_text("s-other"), tmp_path / "b.out", **foreign)
    result = upguard("diff", "a", "b", "--zoom", cwd=tmp_path)
    assert result.returncode == EXIT_UNTRUSTED, result.stderr
    assert "re-running it to record its divergent step would run" in result.stderr.lower()
    assert not (tmp_path / "a.out").exists() and not (tmp_path / "b.out").exists()


def test_record_against_a_foreign_reference_refuses_before_running(crafted: Path) -> None:
    candidate_marker = crafted / "candidate.out"
    result = upguard("record", "-o", "c", "--against", "a", "--", PYTHON, "marker.py",
                     str(candidate_marker), cwd=crafted)
    assert result.returncode == EXIT_UNTRUSTED, result.stderr
    assert "run the reference (a) is not known to be yours" in result.stderr, result.stderr
    assert not candidate_marker.exists() and not (crafted / "a.out").exists()
    assert not (crafted / "c").exists()

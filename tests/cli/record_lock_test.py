#!/usr/bin/env python3
"""One writer per run directory, and no run hidden: two `upguard record -o D` at once (the
second is refused, naming the first's pid and host), the recorders of one job on several hosts
(all ranks kept), and `upguard record` killed with its training (`kill -9`: `diff` and `show`
name the hidden run, `record` does not bury it, `upguard recover` moves it into place). Needs
no torch: the recorded "command" is a shell line that copies a prebuilt trace into
$UPGUARD_RECORD_DIR, as the recorder would. Run by ctest.

usage: record_lock_test.py UPGUARD UGT_TEXT
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from cli_checks import Checks, run_upguard, write_trace as write_text_trace

UPGUARD, UGT_TEXT = (os.path.abspath(p) for p in sys.argv[1:3])
checks = Checks()
expect = checks.expect

TRACE = """meta {"rank":RANK,"world_size":WORLD,"upguard_version":"0.1.0","argv":["/usr/bin/python3","train.py"]}
op step=0 phase=forward name=aten::mm module=fc site=model.py:10
  in self tensor float32[2,3] digest=@x
  in mat2 tensor float32[3,4] digest=@w
  out tensor float32[2,4] digest=@y
stepend 0
end
"""


def upguard(args, cwd, env=None):
    return run_upguard(UPGUARD, args, cwd, env)


def start(args, cwd, env=None):
    """`upguard ARGS` in the background, in a session of its own (killed as a group)."""
    return subprocess.Popen([UPGUARD] + args, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)


def write_trace(path, rank=0, world=1, output="@y"):
    write_text_trace(UGT_TEXT, path, TRACE.replace("RANK", str(rank)).replace("WORLD", str(world))
                     .replace("digest=@y", f"digest={output}"))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def recorder(trace, rank=0, world=1, started=None, wait_for=None):
    """A command that records like upguard's recorder (rank<R>.ugt, and meta.json for rank 0),
    then says so (touches `started`) and stays until `wait_for` exists."""
    meta = {"upguard_version": "0.1.0", "world_size": world, "argv": ["train.py"]}
    lines = [f'cp "{trace}" "$UPGUARD_RECORD_DIR/rank{rank}.ugt"']
    if rank == 0:
        lines.append(f"printf '%s' '{json.dumps(meta)}' > \"$UPGUARD_RECORD_DIR/meta.json\"")
    if started:
        lines.append(f'touch "{started}"')
    if wait_for:
        lines.append(f'while [ ! -e "{wait_for}" ]; do sleep 0.02; done')
    return ["/bin/sh", "-c", "; ".join(lines)]


def wait_for_file(path, process, seconds=20):
    deadline = time.time() + seconds
    while not os.path.exists(path):
        if process.poll() is not None or time.time() > deadline:
            return False
        time.sleep(0.02)
    return True


def hidden(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith(".upguard-"))


def two_recorders_at_once(tmp, trace, other):
    """The second `record -o D` (with or without --overwrite) is refused while the first runs;
    the first's run is the one D holds."""
    go = os.path.join(tmp, "go")
    started = os.path.join(tmp, "started")
    first = start(["record", "-o", "busy", "--"] + recorder(trace, started=started, wait_for=go),
                  tmp)
    try:
        expect("concurrent: the first recorder started", wait_for_file(started, first))
        ran = os.path.join(tmp, "second_ran")
        for extra in ([], ["--overwrite"]):
            rc, text = upguard(["record", "-o", "busy"] + extra + ["--"] +
                               recorder(other, started=ran), tmp)
            name = "concurrent" + (" --overwrite" if extra else "")
            expect(f"{name}: the second is refused (exit 2)", rc == 2, f"{rc}: {text}")
            expect(f"{name}: the refusal names the first's pid and host",
                   f"pid {first.pid} on host {socket.gethostname()}" in text, text)
            expect(f"{name}: the second command never ran", not os.path.exists(ran))
    finally:
        open(go, "w").close()
        out, _ = first.communicate(timeout=60)
    expect("concurrent: the first recorder succeeds", first.returncode == 0, out)
    held = os.path.join(tmp, "busy", "rank0.ugt")
    expect("concurrent: D holds the first's run", os.path.isfile(held) and read(held) == read(trace))
    expect("concurrent: nothing hidden is left", hidden(os.path.join(tmp, "busy")) == [],
           str(hidden(os.path.join(tmp, "busy"))))


def one_job_on_two_hosts(tmp, rank0, rank1, job_args, env, label):
    """Two recorders of one job (as two hosts' would be: here two processes) write into one D;
    the one that ends first does not take the other's ranks away, nor does the last."""
    go = os.path.join(tmp, f"go_{label}")
    started = os.path.join(tmp, f"started_{label}")
    run = f"job_{label}"
    second = start(["record", "-o", run] + job_args + ["--"] +
                   recorder(rank1, rank=1, world=2, started=started, wait_for=go), tmp, env)
    try:
        expect(f"{label}: the second host's recorder started", wait_for_file(started, second))
        rc, text = upguard(["record", "-o", run] + job_args + ["--"] +
                           recorder(rank0, rank=0, world=2), tmp, env)
        expect(f"{label}: the first host's recorder ends (exit 0)", rc == 0, f"{rc}: {text}")
        expect(f"{label}: it says the run moves in when the others end",
               "when the job's other recorders end" in text, text)
    finally:
        open(go, "w").close()
        out, _ = second.communicate(timeout=60)
    expect(f"{label}: the last host's recorder ends (exit 0)", second.returncode == 0, out)
    directory = os.path.join(tmp, run)
    names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    expect(f"{label}: both hosts' ranks and meta.json are in D",
           names == ["meta.json", "rank0.ugt", "rank1.ugt"], str(names))
    rc, text = upguard(["show", run, "--rank", "1"], tmp)
    expect(f"{label}: the run loads", rc == 0, text)


def killed_recorder(tmp, trace, reference):
    """`upguard record` killed (kill -9) with its training: the run is found, not buried, and
    recovered."""
    started = os.path.join(tmp, "started_killed")
    never = os.path.join(tmp, "never")
    killed = start(["record", "-o", "killed", "--"] +
                   recorder(trace, started=started, wait_for=never), tmp)
    expect("killed: the recorder started", wait_for_file(started, killed))
    os.killpg(killed.pid, signal.SIGKILL)  # the recorder and its training, as the OOM killer
    killed.wait(timeout=30)
    staging = os.path.join(tmp, "killed", f".upguard-record-{killed.pid}")
    expect("killed: the run stays in the staging directory",
           os.path.isfile(os.path.join(staging, "rank0.ugt")), str(hidden(os.path.join(tmp, "killed"))))
    for command in (["diff", "reference", "killed"], ["show", "killed"]):
        rc, text = upguard(command, tmp)
        expect(f"killed: `{command[0]}` exits 2", rc == 2, f"{rc}: {text}")
        expect(f"killed: `{command[0]}` names the interrupted recording and `upguard recover`",
               "holds an interrupted recording in" in text and
               f".upguard-record-{killed.pid}" in text and "upguard recover killed" in text,
               text)
    # A new recording does not bury it (its dead recorder's lock is taken over, not obeyed).
    rc, text = upguard(["record", "-o", "killed", "--"] + recorder(reference), tmp)
    expect("killed: a new record is refused", rc == 2 and "interrupted recording" in text,
           f"{rc}: {text}")
    kept = os.path.join(staging, "rank0.ugt")
    expect("killed: the hidden run is intact",
           os.path.isfile(kept) and read(kept) == read(trace))
    rc, text = upguard(["recover", "killed"], tmp)
    expect("killed: `upguard recover` succeeds", rc == 0, f"{rc}: {text}")
    directory = os.path.join(tmp, "killed")
    expect("killed: the run is in place",
           os.path.isfile(os.path.join(directory, "rank0.ugt")) and
           read(os.path.join(directory, "rank0.ugt")) == read(trace), str(os.listdir(directory)))
    meta_path = os.path.join(directory, "meta.json")
    meta = json.load(open(meta_path)) if os.path.isfile(meta_path) else {}
    expect("killed: meta.json says interrupted",
           meta.get("interrupted") is True and meta.get("complete") is False, str(meta))
    expect("killed: nothing hidden is left", hidden(directory) == [], str(hidden(directory)))
    rc, text = upguard(["diff", "reference", "killed"], tmp)
    expect("killed: the diff then compares it", rc == 0, f"{rc}: {text}")
    rc, text = upguard(["recover", "killed"], tmp)
    expect("killed: nothing more to recover", rc == 2 and "no interrupted recording" in text,
           f"{rc}: {text}")


def main():
    tmp = tempfile.mkdtemp(prefix="upguard_record_lock_")
    try:
        trace = os.path.join(tmp, "rank0.ugt")
        write_trace(trace)
        other = os.path.join(tmp, "other.ugt")
        write_trace(other, output="@y_other")  # which run D holds is told by the bytes
        job0 = os.path.join(tmp, "job0.ugt")
        write_trace(job0, rank=0, world=2)
        job1 = os.path.join(tmp, "job1.ugt")
        write_trace(job1, rank=1, world=2)
        reference = os.path.join(tmp, "reference")
        os.makedirs(reference)
        shutil.copy(trace, os.path.join(reference, "rank0.ugt"))

        two_recorders_at_once(tmp, trace, other)
        slurm = dict(os.environ, SLURM_JOB_ID="4242", SLURM_STEP_ID="0")
        one_job_on_two_hosts(tmp, job0, job1, [], slurm, "slurm")
        one_job_on_two_hosts(tmp, job0, job1, ["--job", "train-7"], None, "--job")
        killed_recorder(tmp, trace, os.path.join(reference, "rank0.ugt"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    return checks.report()


if __name__ == "__main__":
    sys.exit(main())

"""`upguard.record(dir)` stages like `upguard record -o`: a directory that holds a run, or a
file upguard did not write, is refused (its bytes untouched) unless overwrite=True; with it the
earlier run stays until the new one is complete; the ranks of one job still record into one
directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import BUILD, PYTHON, show_json

ENV = dict(os.environ, PYTHONPATH=str(BUILD / "python"))

# argv: run_dir, mode ("plain" | "refused" | "overwrite"), and for "refused" whether to pass
# overwrite=True, for "overwrite" a file to compare run_dir/rank0.ugt with while recording.
# Prints what the test asserts.
SCRIPT = textwrap.dedent("""
    import os, sys, torch, upguard
    run, mode = sys.argv[1], sys.argv[2]

    def train(value):
        x = torch.full((3, 3), float(value))
        return (x @ x).sum()

    if mode == "plain":
        with upguard.record(run):
            train(1)
    elif mode == "refused":
        options = {"overwrite": True} if sys.argv[3] == "1" else {}
        try:
            with upguard.record(run, **options):
                train(2)
            print("RECORDED", options)
        except RuntimeError as error:
            print("REFUSED", options, error)
        except TypeError as error:  # an upguard without the keyword
            print("NO KEYWORD", error)
    elif mode == "overwrite":
        with upguard.record(run, overwrite=True) as rec:
            train(3)
            with open(os.path.join(run, "rank0.ugt"), "rb") as now, open(sys.argv[3], "rb") as old:
                print("OLD RUN KEPT WHILE RECORDING", now.read() == old.read())
            print("WRITING INTO", os.path.dirname(rec.trace_path))
    """)

# Two ranks of one job (RANK, WORLD_SIZE, MASTER_ADDR/PORT as a launcher sets them) start
# recording, wait for each other (a file barrier) and stop.
RANK_SCRIPT = textwrap.dedent("""
    import os, sys, time, torch, upguard
    run, barrier = sys.argv[1], sys.argv[2]
    rank = int(os.environ["RANK"])
    with upguard.record(run):
        torch.ones(2, 2).add(rank)
        open(os.path.join(barrier, "ready%d" % rank), "w").close()
        deadline = time.time() + 60
        while len(os.listdir(barrier)) < 2 and time.time() < deadline:
            time.sleep(0.02)
    print("RANK", rank, "DONE")
    """)


def python(tmp_path: Path, script: str, *args: str, env=None) -> subprocess.CompletedProcess:
    path = tmp_path / "script.py"
    path.write_text(script)
    return subprocess.run([PYTHON, str(path), *map(str, args)], cwd=tmp_path, env=env or ENV,
                          capture_output=True, text=True, timeout=300)


def staging_left(run: Path) -> list:
    return sorted(p.name for p in run.iterdir() if p.name.startswith(".upguard-"))


def test_a_run_is_refused_unless_overwrite_and_replaced_only_once_complete(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = python(tmp_path, SCRIPT, run, "plain")
    assert first.returncode == 0, first.stderr
    old_trace, old_meta = (run / "rank0.ugt").read_bytes(), (run / "meta.json").read_bytes()
    assert staging_left(run) == []

    refused = python(tmp_path, SCRIPT, run, "refused", "0")
    assert refused.returncode == 0, refused.stderr
    # The refused block never wrote: the earlier run's bytes are as they were.
    assert (run / "rank0.ugt").read_bytes() == old_trace, refused.stdout + refused.stderr
    assert (run / "meta.json").read_bytes() == old_meta
    assert "REFUSED {}" in refused.stdout, refused.stdout + refused.stderr
    assert f"{run} already holds a run" in refused.stdout and "overwrite=True" in refused.stdout
    assert staging_left(run) == []

    copy = tmp_path / "before.ugt"
    copy.write_bytes(old_trace)
    again = python(tmp_path, SCRIPT, run, "overwrite", copy)
    assert again.returncode == 0, again.stderr
    assert "OLD RUN KEPT WHILE RECORDING True" in again.stdout, again.stdout + again.stderr
    assert f"WRITING INTO {run}/.upguard-record-" in again.stdout
    assert (run / "rank0.ugt").read_bytes() != old_trace
    assert staging_left(run) == []
    assert [step["step"] for step in show_json(run)["steps"]] == [0]


def test_files_upguard_did_not_write_are_refused_even_with_overwrite(tmp_path: Path) -> None:
    for name, contents in (("meta.json", b'{"dataset": "mine"}'),
                           ("rank0.ugt", b"someone else's file")):
        directory = tmp_path / name.replace(".", "_")
        directory.mkdir()
        (directory / name).write_bytes(contents)
        for overwrite in ("0", "1"):
            result = python(tmp_path, SCRIPT, directory, "refused", overwrite)
            assert (directory / name).read_bytes() == contents, result.stdout + result.stderr
            assert "REFUSED" in result.stdout, result.stdout + result.stderr
            assert "not written by upguard" in result.stdout or overwrite == "0", result.stdout
            assert sorted(p.name for p in directory.iterdir()) == [name]


def test_the_ranks_of_one_job_record_into_one_directory(tmp_path: Path) -> None:
    run, barrier = tmp_path / "ddp", tmp_path / "barrier"
    barrier.mkdir()
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    ranks = []
    for rank in range(2):
        env = dict(ENV, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT="29577")
        ranks.append(subprocess.Popen([PYTHON, str(script), str(run), str(barrier)],
                                      cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    for rank, process in enumerate(ranks):
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0 and f"RANK {rank} DONE" in out, out + err
    assert sorted(p.name for p in run.iterdir()) == ["meta.json", "rank0.ugt", "rank1.ugt"]
    assert json.loads((run / "meta.json").read_text())["world_size"] == 2
    assert show_json(run, "--rank", "1")["steps"], "rank 1 loads"


if __name__ == "__main__":
    sys.exit("run with pytest")

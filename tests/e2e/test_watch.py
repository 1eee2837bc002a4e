"""`upguard watch` on one host, without namespaces (any user): the command's own launch mode,
the report and its JSON, post mortem analysis, the run directory's protection, and the ring's
format read by a second, independent reader (tests/faults/ring.py, from the spec alone).

The fault kinds themselves, each rank a host of its own, are test_watch_faults.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import PYTHON, REPO, TORCH2, line_of, upguard

sys.path.insert(0, str(REPO / "tests" / "faults"))
import ring  # noqa: E402

DDP = REPO / "examples" / "gpt_ddp.py"


def torchrun(*args: str) -> list:
    return [PYTHON, "-m", "torch.distributed.run", "--nproc_per_node=2", DDP, "--quiet", *args]


def test_hang_named_and_stopped_with_its_python_line(tmp_path):
    run = tmp_path / "hang"
    page = run / "report.html"
    result = upguard("watch", "-o", run, "--stop-on-alert", "--html", page, "--",
                     *torchrun("--steps", "30", "--plant", "hang", "--plant-step", "3"),
                     timeout=180)
    # The command was stopped by the watch: its exit code is torchrun's after SIGTERM.
    assert result.returncode != 0
    assert "stopping the command (--stop-on-alert)" in result.stderr
    alerts = [json.loads(line) for line in (run / "alerts.jsonl").read_text().splitlines()]
    assert [(a["trigger"], a["ranks"], a["cause"]) for a in alerts] == [("stall", [1], "python")]
    sleep_line = f"gpt_ddp.py:{line_of(DDP, 'time.sleep(60)')} in main"
    assert alerts[0]["stack"][-1].endswith(sleep_line)
    assert alerts[0]["collective"].startswith("allreduce float32[")
    assert f"gpt_ddp.py:{line_of(DDP, 'loss.backward()')}" in alerts[0]["collective"]
    # The same finding on stderr as it happened, and in the report on stdout.
    assert "upguard watch: STALL rank 1 (python): rank 0 waits" in result.stderr
    assert "upguard watch: 2 ranks, 1 finding" in result.stdout
    assert "  STALL rank 1 (python)" in result.stdout
    # The page: the finding, rank 0's stalled collective in red, rank 1 named as never issuing it.
    html = page.read_text()
    assert 'data-trigger="stall"' in html and sleep_line in html
    assert html.count('<rect class="collective in-flight stalled"') == 1
    seq = alerts[0]["collective"].split(", seq ")[1].split(" ")[0]
    assert f"rank 1</span> never issued collective {seq} of group" in html


def test_healthy_run_reports_nothing_and_analyze_agrees(tmp_path):
    run = tmp_path / "healthy"
    result = upguard("watch", "-o", run, "--json", "--", *torchrun("--steps", "5"), timeout=180)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["schema"] == "upguard.watch/1" and report["findings"] == []
    assert [(r["rank"], r["process"], r["step"]) for r in report["ranks"]] == \
        [(0, "ended", 5), (1, "ended", 5)]
    assert not (run / "alerts.jsonl").exists()
    post = upguard("watch", "--analyze", run, "--json")
    assert post.returncode == 0, post.stderr

    def seen(ranks):  # recent[]'s ages count from each look's moment: the collectives agree
        return [{**r, "recent": [(c["op"], c["group"], c["seq"], c["completed"] is None)
                                 for c in r["recent"]]} for r in ranks]

    assert seen(json.loads(post.stdout)["ranks"]) == seen(report["ranks"])
    assert [len(r["recent"]) for r in report["ranks"]] == [min(r["collectives"], 24)
                                                           for r in report["ranks"]]
    # The second reader of the format agrees with the first.
    for rank in (0, 1):
        mine = ring.read(str(run / "watch" / f"rank{rank}.ring"))
        theirs = report["ranks"][rank]
        assert (mine.rank, mine.pid, mine.step, mine.closed) == (rank, theirs["pid"], 5, True)
        assert len(mine.slots) == theirs["collectives"]
        assert [s.seq for s in mine.slots] == list(range(1, len(mine.slots) + 1))
        assert all(s.state == 3 for s in mine.slots)  # completed
        # One gradient all-reduce per step (DDP's one bucket), the same size on both ranks.
        allreduces = [s for s in mine.slots if s.op == "allreduce"]
        assert len(allreduces) == 5 and len({s.count for s in allreduces}) == 1


def test_mismatch_post_mortem(tmp_path):
    run = tmp_path / "mismatch"
    upguard("watch", "-o", run, "--", *torchrun("--steps", "6", "--plant", "mismatch",
                                                "--plant-step", "2"), timeout=180)
    post = upguard("watch", "--analyze", run, "--json")
    assert post.returncode == 1, post.stderr
    findings = json.loads(post.stdout)["findings"]
    mismatch = [f for f in findings if f["trigger"] == "mismatch"]
    assert [(f["ranks"], f["cause"]) for f in mismatch] == [([1], "mismatch")]
    assert "rank 0 issued allreduce float32[1024], rank 1 issued allreduce float32[1025]" in \
        mismatch[0]["detail"]


def test_run_directory_of_an_earlier_watch_is_kept(tmp_path):
    run = tmp_path / "kept"
    (run / "watch").mkdir(parents=True)
    (run / "watch" / "rank0.ring").write_bytes(b"earlier")
    (run / "notes.txt").write_text("mine")
    result = upguard("watch", "-o", run, "--", PYTHON, "-c", "pass")
    assert result.returncode == 2
    assert "holds the watch of an earlier run" in result.stderr and "--overwrite" in result.stderr
    assert (run / "watch" / "rank0.ring").read_bytes() == b"earlier"
    result = upguard("watch", "-o", run, "--overwrite", "--", PYTHON, "-c", "pass")
    assert result.returncode == 0, result.stderr
    assert not (run / "watch" / "rank0.ring").exists()
    assert (run / "notes.txt").read_text() == "mine"  # not upguard's: untouched


def test_bad_ring_named_with_the_reason(tmp_path):
    (tmp_path / "watch").mkdir()
    (tmp_path / "watch" / "rank0.ring").write_bytes(b"x" * 300)
    result = upguard("watch", "--analyze", tmp_path)
    assert result.returncode == 2
    assert f"{tmp_path}/watch/rank0.ring" in result.stderr and "bad magic" in result.stderr


def test_record_watch_keeps_the_recording_and_adds_the_rings(tmp_path):
    watched, plain = tmp_path / "watched", tmp_path / "plain"
    result = upguard("record", "-o", watched, "--watch", "--", *torchrun("--steps", "3"),
                     timeout=300)
    assert result.returncode == 0, result.stderr
    assert upguard("record", "-o", plain, "--", *torchrun("--steps", "3"),
                   timeout=300).returncode == 0
    # The watch does not change what is recorded: the two runs are identical.
    diff = upguard("diff", plain, watched, "--json")
    assert diff.returncode == 0, diff.stdout + diff.stderr
    assert json.loads(diff.stdout)["verdict"] == "identical"
    # The rings moved into the run with the traces; healthy: no alert.
    assert sorted(p.name for p in (watched / "watch").iterdir()) == ["rank0.ring", "rank1.ring"]
    assert not (watched / "alerts.jsonl").exists()
    post = upguard("watch", "--analyze", watched, "--json")
    assert post.returncode == 0, post.stderr
    assert [r["process"] for r in json.loads(post.stdout)["ranks"]] == ["ended", "ended"]
    # --overwrite replaces them with the rest of upguard's files.
    again = upguard("record", "-o", watched, "--overwrite", "--", *torchrun("--steps", "2"),
                    timeout=300)
    assert again.returncode == 0, again.stderr
    assert not (watched / "watch").exists()


def test_every_route_to_a_collective_is_in_the_ring(tmp_path):
    """The plain API, inference mode (tensors without autograd keys), a subgroup and, on torch
    2.x, a functional collective and all_gather_into_tensor: each one slot, in order, with its
    group, op, dtype and size."""
    run = tmp_path / "paths"
    script = REPO / "tests" / "e2e" / "watch_paths.py"
    result = upguard("watch", "-o", run, "--", PYTHON, "-m", "torch.distributed.run",
                     "--nproc_per_node=2", script, timeout=180)
    assert result.returncode == 0, result.stderr
    for rank in (0, 1):
        mine = ring.read(str(run / "watch" / f"rank{rank}.ring"))
        calls = [(mine.groups[s.group].members, s.op, s.dtype, s.count) for s in mine.slots
                 if s.op != "barrier"]
        expected = [([0, 1], "allreduce", "float32", 8), ([0, 1], "allreduce", "float32", 16),
                    ([0, 1], "broadcast", "int64", 4)]
        if TORCH2:
            expected += [([0, 1], "allreduce", "float32", 32),
                         ([0, 1], "allgatherbase", "float32", 6)]
        assert calls == expected
        assert mine.groups[mine.slots[2].group].name != mine.groups[mine.slots[0].group].name
        assert all(s.state == 3 for s in mine.slots)  # every one completed


def test_stack_asked_before_the_stack_thread_ran_is_answered(tmp_path):
    # The monitor asks a new ring for its stacks at once; on a loaded machine the rank's stack
    # thread may start after that. It once took the request as "not ours" and never answered:
    # a hang's alert then came without its Python line (CI, torch 2, 2026-12-05).
    script = REPO / "tests" / "e2e" / "late_stack_thread.py"
    result = upguard("watch", "-o", tmp_path / "w", "--", PYTHON, script, timeout=60)
    assert result.returncode == 0, result.stderr
    rank = ring.read(str(tmp_path / "w" / "watch" / "rank0.ring"))
    assert rank.stack_answered >= 1  # the first request, made before the thread ran, too
    sleep_line = f"late_stack_thread.py:{line_of(script, 'time.sleep(3.0)')} in <module>"
    assert rank.stack.splitlines()[0] == "thread MainThread:"
    assert rank.stack.splitlines()[1].endswith(sleep_line)

#!/usr/bin/env python3
"""`upguard record -o DIR` never loses data: a run DIR holds is refused without --overwrite, a
command that records nothing leaves DIR as it was, and --overwrite removes only upguard's own
files. Needs no torch: the recorded "command" is a shell line that copies a prebuilt trace into
$UPGUARD_RECORD_DIR, as the recorder would. Run by ctest.

usage: record_dir_test.py UPGUARD UGT_TEXT
"""

import json
import os
import shutil
import sys
import tempfile

from cli_checks import Checks, run_upguard, write_trace as write_text_trace

UPGUARD, UGT_TEXT = (os.path.abspath(p) for p in sys.argv[1:3])
checks = Checks()
expect = checks.expect

TRACE = """meta {"rank":0,"world_size":1,"upguard_version":"0.1.0","argv":["/usr/bin/python3","train.py"]}
op step=0 phase=forward name=aten::mm module=fc site=model.py:10
  in self tensor float32[2,3] digest=@x
  in mat2 tensor float32[3,4] digest=@w
  out tensor float32[2,4] digest=@y
op step=0 phase=forward name=aten::relu module=act site=model.py:11
  in self tensor float32[2,4] digest=@y
  out tensor float32[2,4] digest=@z
stepend 0
end
"""
META = {"upguard_version": "0.1.0", "world_size": 1, "argv": ["/usr/bin/python3", "train.py"]}


def upguard(args, cwd):
    return run_upguard(UPGUARD, args, cwd)


def write_trace(path, text):
    write_text_trace(UGT_TEXT, path, text)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def snapshot(directory):
    """Every file under `directory` with its bytes, and every folder."""
    found = {}
    for root, dirs, files in os.walk(directory):
        for name in dirs:
            found[os.path.relpath(os.path.join(root, name), directory) + "/"] = None
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, directory)] = f.read()
    return found


def recorder(trace, *, online=None, marker=None):
    """A command that records like upguard's recorder: the trace and meta.json into
    $UPGUARD_RECORD_DIR (and online.json, when given)."""
    lines = [f'cp "{trace}" "$UPGUARD_RECORD_DIR/rank0.ugt"',
             f"printf '%s' '{json.dumps(META)}' > \"$UPGUARD_RECORD_DIR/meta.json\""]
    if online is not None:
        lines.append(f"printf '%s' '{json.dumps(online)}' > \"$UPGUARD_RECORD_DIR/online.json\"")
    if marker is not None:
        lines.append(f'touch "{marker}"')
    return ["/bin/sh", "-c", "; ".join(lines)]


def old_run(directory, trace):
    """DIR with a recorded run of two ranks, its online result and captures, and user files."""
    shutil.copy(trace, os.path.join(directory, "rank0.ugt"))
    shutil.copy(trace, os.path.join(directory, "rank1.ugt"))
    write(os.path.join(directory, "meta.json"), json.dumps(dict(META, world_size=2)))
    write(os.path.join(directory, "online.json"), "{}")
    write(os.path.join(directory, "captures", "rank0.step0.op1.safetensors"), "old capture")
    add_user_files(directory)


def add_user_files(directory):
    write(os.path.join(directory, "notes.txt"), "mine")
    write(os.path.join(directory, "captures_mine", "a.txt"), "mine")
    write(os.path.join(directory, "online_notes", "b.txt"), "mine")
    write(os.path.join(directory, "rank0.ugt.bak"), "mine")


def user_files_kept(name, directory):
    for path in ("notes.txt", "captures_mine/a.txt", "online_notes/b.txt", "rank0.ugt.bak"):
        full = os.path.join(directory, path)
        expect(f"{name}: {path} kept", os.path.isfile(full) and open(full).read() == "mine")


def no_staging_left(name, directory):
    left = [n for n in os.listdir(directory) if n.startswith(".upguard-record-")]
    expect(f"{name}: no staging directory left", not left, str(left))


def main():
    tmp = tempfile.mkdtemp(prefix="upguard_record_dir_")
    try:
        new_trace = os.path.join(tmp, "new.ugt")
        write_trace(new_trace, TRACE)
        old_trace = os.path.join(tmp, "old.ugt")
        write_trace(old_trace, TRACE.replace("digest=@z", "digest=@z_old"))
        with open(new_trace, "rb") as f:
            new_bytes = f.read()

        # A command that records nothing (never imports torch) leaves DIR as it was: a
        # directory holding a run, with --overwrite, and a directory that did not exist.
        for command, code in ((["/usr/bin/python3", "-c", "pass"], 2), (["/bin/false"], 1)):
            run = os.path.join(tmp, "kept")
            shutil.rmtree(run, ignore_errors=True)
            os.makedirs(run)
            old_run(run, old_trace)
            before = snapshot(run)
            rc, text = upguard(["record", "-o", "kept", "--overwrite", "--"] + command, tmp)
            name = f"nothing recorded by {command[0]}"
            expect(f"{name}: exit code {code}", rc == code, f"{rc}: {text}")
            expect(f"{name}: says so", "recorded nothing" in text and "kept" in text and
                   "left as it was" in text, text)
            expect(f"{name}: the old run is intact", snapshot(run) == before,
                   f"{sorted(before)} -> {sorted(snapshot(run))}")
        rc, text = upguard(["record", "-o", "new/deeper", "--", "/bin/true"], tmp)
        expect("nothing recorded into a new directory: exit code 2", rc == 2, text)
        expect("nothing recorded into a new directory: not created",
               not os.path.exists(os.path.join(tmp, "new")), str(os.listdir(tmp)))

        # A directory holding a run is refused without --overwrite, before anything runs.
        run = os.path.join(tmp, "refused")
        os.makedirs(run)
        old_run(run, old_trace)
        before = snapshot(run)
        marker = os.path.join(tmp, "ran")
        rc, text = upguard(["record", "-o", "refused", "--"] + recorder(new_trace, marker=marker),
                           tmp)
        expect("refusal: exit code 2", rc == 2, f"{rc}: {text}")
        expect("refusal: names DIR and --overwrite",
               "refused already holds a run" in text and "--overwrite" in text, text)
        expect("refusal: the command did not run", not os.path.exists(marker))
        expect("refusal: the old run is intact", snapshot(run) == before)
        # Only rank0.ugt, or only an upguard meta.json, is a run too.
        for only in ("rank0.ugt", "meta.json"):
            run = os.path.join(tmp, f"only_{only}")
            os.makedirs(run)
            shutil.copy(os.path.join(tmp, "refused", only), run)
            rc, text = upguard(["record", "-o", run, "--", "/bin/true"], tmp)
            expect(f"refusal of a directory with only {only}", rc == 2 and
                   "already holds a run" in text, text)
        # A meta.json that upguard did not write is never replaced.
        run = os.path.join(tmp, "foreign")
        write(os.path.join(run, "meta.json"), '{"dataset": "mine"}')
        rc, text = upguard(["record", "-o", "foreign", "--overwrite", "--"] +
                           recorder(new_trace), tmp)
        expect("foreign meta.json: refused", rc == 2 and "not written by upguard" in text, text)
        expect("foreign meta.json: kept",
               open(os.path.join(run, "meta.json")).read() == '{"dataset": "mine"}')

        # --overwrite replaces the run: only upguard's files go, the user's stay.
        run = os.path.join(tmp, "replaced")
        os.makedirs(run)
        old_run(run, old_trace)
        rc, text = upguard(["record", "-o", "replaced", "--overwrite", "--"] +
                           recorder(new_trace), tmp)
        expect("--overwrite: exit code 0", rc == 0, text)
        expect("--overwrite: says what it wrote", "wrote replaced: rank0.ugt" in text, text)
        with open(os.path.join(run, "rank0.ugt"), "rb") as f:
            expect("--overwrite: the new trace is in place", f.read() == new_bytes)
        for gone in ("rank1.ugt", "online.json", "captures"):
            expect(f"--overwrite: the old run's {gone} removed",
                   not os.path.exists(os.path.join(run, gone)))
        expect("--overwrite: meta.json is the new run's",
               json.load(open(os.path.join(run, "meta.json"))) == META)
        user_files_kept("--overwrite", run)
        no_staging_left("--overwrite", run)
        rc, text = upguard(["diff", "replaced", "replaced"], tmp)
        expect("--overwrite: the new run loads", rc == 0, text)

        # `record -o .` in a directory of the user's own files: recorded beside them; again,
        # refused; with --overwrite, replaced, the user's files untouched.
        cwd = os.path.join(tmp, "cwd")
        os.makedirs(cwd)
        add_user_files(cwd)
        rc, text = upguard(["record", "-o", ".", "--"] + recorder(new_trace), cwd)
        expect("-o . beside user files: exit code 0", rc == 0, text)
        expect("-o . beside user files: recorded",
               os.path.isfile(os.path.join(cwd, "rank0.ugt")), str(os.listdir(cwd)))
        user_files_kept("-o . beside user files", cwd)
        no_staging_left("-o . beside user files", cwd)
        rc, text = upguard(["record", "-o", ".", "--"] + recorder(new_trace), cwd)
        expect("-o . again: refused", rc == 2 and "--overwrite" in text, text)
        rc, text = upguard(["record", "-o", ".", "--overwrite", "--"] + recorder(new_trace), cwd)
        expect("-o . --overwrite: exit code 0", rc == 0, text)
        user_files_kept("-o . --overwrite", cwd)
        no_staging_left("-o . --overwrite", cwd)

        # --against: an online.json of the old run is not taken for the new run's.
        reference = os.path.join(tmp, "reference")
        os.makedirs(reference)
        shutil.copy(new_trace, os.path.join(reference, "rank0.ugt"))
        run = os.path.join(tmp, "online_old")
        os.makedirs(run)
        old_run(run, old_trace)
        write(os.path.join(run, "online.json"), json.dumps({"kind": "culprit", "step": 0}))
        # The reference is crafted here, without who/where: compared with consent (--trust-run).
        rc, text = upguard(["record", "-o", "online_old", "--overwrite", "--against",
                            "reference", "--trust-run", "reference", "--"] + recorder(new_trace),
                           tmp)
        expect("--against: no divergence", rc == 0 and "no divergence from reference" in text,
               text)
        rc, text = upguard(["record", "-o", "online_none", "--against", "reference",
                            "--trust-run", "reference", "--", "/bin/false"], tmp)
        expect("--against, nothing recorded: the command's exit code", rc == 1, text)
        # The recorder writes online.json itself: a wrongly typed field there is upguard's own
        # bug, reported as an internal error (exit 2), never an abort.
        rc, text = upguard(["record", "-o", "online_bad", "--against", "reference",
                            "--trust-run", "reference", "--"] +
                           recorder(new_trace, online={"kind": "culprit", "step": "two"}), tmp)
        expect("internal error: exit code 2", rc == 2, f"{rc}: {text}")
        expect("internal error: said so", "upguard record: internal error:" in text and
               "please report" in text, text)

        # `diff --explain` re-runs into RUN/explain again and again (it is upguard's own).
        explained = os.path.join(tmp, "explained")
        os.makedirs(explained)
        rerun = {"rank": 0, "world_size": 1, "argv": recorder(new_trace)}
        write_trace(os.path.join(explained, "rank0.ugt"),
                    "meta " + json.dumps(rerun) + "\n" + TRACE.split("\n", 1)[1])
        changed = os.path.join(tmp, "changed")
        os.makedirs(changed)
        write_trace(os.path.join(changed, "rank0.ugt"), TRACE.replace("digest=@z", "digest=@z2"))
        for attempt in (1, 2):
            # Crafted here, with no who/where: re-run only with consent (docs/cli.md).
            rc, text = upguard(["diff", "explained", "changed", "--explain", "--trust-run",
                                "explained", "--trust-run", "changed"], tmp)
            expect(f"explain re-run {attempt}: reaches the re-run",
                   rc == 2 and "did not reach step 0 #1" in text and
                   "already holds a run" not in text, text)
            expect(f"explain re-run {attempt}: recorded into RUN/explain",
                   os.path.isfile(os.path.join(explained, "explain", "rank0.ugt")) and
                   os.path.isfile(os.path.join(explained, "explain", "stderr.txt")))
            no_staging_left(f"explain re-run {attempt}", os.path.join(explained, "explain"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    return checks.report()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Bad input never crashes upguard: a clear message naming the file, byte offset or option,
and exit code 2. Run by ctest in the release and the ASan/UBSan debug presets.

usage: bad_input_test.py UPGUARD UGT_TEXT
"""

import os
import shutil
import subprocess
import sys
import tempfile

UPGUARD, UGT_TEXT = (os.path.abspath(p) for p in sys.argv[1:3])
failures = []
checks = 0

TRACE = """meta {"rank":0,"world_size":1,"argv":["/usr/bin/python3","train.py"]}
op step=0 phase=forward name=aten::mm module=fc site=model.py:10
  in self tensor float32[2,3] digest=@x
  in mat2 tensor float32[3,4] digest=@w
  out tensor float32[2,4] digest=@y
op step=0 phase=forward name=aten::relu module=act site=model.py:11
  in self tensor float32[2,4] digest=@y
  out tensor float32[2,4] digest=@z
stepend 0
op step=1 phase=forward name=aten::mm module=fc site=model.py:10
  in self tensor float32[2,3] digest=@x1
  in mat2 tensor float32[3,4] digest=@w
  out tensor float32[2,4] digest=@y1
stepend 1
end
"""

OTHER_PROGRAM = """meta {"rank":0,"world_size":1,"argv":["/usr/bin/python3","other.py"]}
op step=0 phase=forward name=aten::conv2d
  in input tensor float32[1,3,8,8] digest=@img
  out tensor float32[1,4,8,8] digest=@f
op step=0 phase=forward name=aten::max_pool2d
  in self tensor float32[1,4,8,8] digest=@f
  out tensor float32[1,4,4,4] digest=@p
stepend 0
end
"""

# A collective whose record (trace.md §5.6) completes after the next op, and one that did not.
COLLECTIVES = """meta {"rank":0,"world_size":2}
op step=0 phase=backward name=c10d::allreduce_
  in tensors tensor float32[4] digest=@g
  out alias float32[4]
op step=0 phase=backward name=aten::mul
  in self tensor float32[4] digest=@x
  out tensor float32[4] digest=@y
collective op=0 group=0 ranks=[0,1] group_rank=0 group_size=2 seq=0 ops_before_completion=1
  out tensor float32[4] digest=@sum stats=min:1,max:2,finite:4
op step=0 phase=backward name=c10d::broadcast_
  out alias float32[2]
collective group=0 seq=1 completed=0
stepend 0
end
"""


def run(args, cwd):
    result = subprocess.run([UPGUARD] + args, cwd=cwd, capture_output=True, text=True,
                            timeout=60)
    return result.returncode, result.stdout, result.stderr


def check(name, args, cwd, *, code=2, must_say=()):
    global checks
    checks += 1
    rc, out, err = run(args, cwd)
    problems = []
    if rc < 0 or rc > 2:
        problems.append(f"crashed or odd exit code {rc}")
    elif code is not None and rc != code:
        problems.append(f"exit code {rc}, expected {code}")
    text = out + err
    for needle in must_say:
        if needle not in text:
            problems.append(f"message lacks {needle!r}")
    if "Sanitizer" in err or "runtime error" in err:
        problems.append("sanitizer report")
    if problems:
        failures.append(f"{name}: {'; '.join(problems)}\n  args: {args}\n  stdout: {out}\n"
                        f"  stderr: {err}")


def write_run(directory, text, rank=0):
    os.makedirs(directory, exist_ok=True)
    src = os.path.join(directory, f"rank{rank}.txt")
    with open(src, "w") as f:
        f.write(text)
    subprocess.run([UGT_TEXT, "to-binary", src, os.path.join(directory, f"rank{rank}.ugt")],
                   check=True)
    os.remove(src)
    return os.path.join(directory, f"rank{rank}.ugt")


def main():
    tmp = tempfile.mkdtemp(prefix="upguard_bad_input_")
    try:
        good = write_run(os.path.join(tmp, "good"), TRACE)
        data = open(good, "rb").read()
        write_run(os.path.join(tmp, "changed"), TRACE.replace("digest=@z", "digest=@z2"))

        check("missing directory", ["diff", "nope", "good"], tmp,
              must_say=("nope", "no such run directory", "upguard record"))
        os.makedirs(os.path.join(tmp, "empty"))
        check("directory without traces", ["diff", "empty", "good"], tmp,
              must_say=("empty", "rank<N>.ugt"))
        check("a file instead of a directory", ["show", "good/rank0.ugt"], tmp,
              must_say=("good/rank0.ugt", "is a file"))

        os.makedirs(os.path.join(tmp, "notatrace"))
        with open(os.path.join(tmp, "notatrace", "rank0.ugt"), "wb") as f:
            f.write(b"PK\x03\x04 this is a zip file, not a trace" * 4)
        check("not a trace", ["diff", "notatrace", "good"], tmp,
              must_say=("notatrace/rank0.ugt", "not an upguard trace", "byte 0"))

        os.makedirs(os.path.join(tmp, "zero"))
        open(os.path.join(tmp, "zero", "rank0.ugt"), "wb").close()
        check("empty trace file", ["show", "zero"], tmp, must_say=("zero/rank0.ugt",))

        os.makedirs(os.path.join(tmp, "future"))
        with open(os.path.join(tmp, "future", "rank0.ugt"), "wb") as f:
            f.write(data[:8] + (99).to_bytes(2, "little") + data[10:])
        check("future version", ["show", "future"], tmp, must_say=("future/rank0.ugt", "99"))

        # A truncated trace: cut inside the last op record.
        os.makedirs(os.path.join(tmp, "truncated"))
        cut = len(data) - 40
        with open(os.path.join(tmp, "truncated", "rank0.ugt"), "wb") as f:
            f.write(data[:cut])
        check("truncated trace", ["diff", "good", "truncated"], tmp,
              must_say=("truncated/rank0.ugt", "truncated record at byte", "--allow-damaged"))
        check("truncated trace, readable part", ["diff", "good", "truncated", "--allow-damaged"],
              tmp, code=0, must_say=("compared only the readable part",))

        # A corrupted record: flip one byte inside the first op's payload.
        os.makedirs(os.path.join(tmp, "corrupt"))
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0x5A
        with open(os.path.join(tmp, "corrupt", "rank0.ugt"), "wb") as f:
            f.write(bytes(flipped))
        check("bad CRC", ["diff", "good", "corrupt"], tmp,
              must_say=("corrupt/rank0.ugt", "at byte"))

        # Two runs of different world sizes, and of different programs.
        write_run(os.path.join(tmp, "two_ranks"), TRACE, 0)
        write_run(os.path.join(tmp, "two_ranks"), TRACE.replace('"rank":0', '"rank":1'), 1)
        check("different world sizes", ["diff", "good", "two_ranks"], tmp,
              must_say=("different world sizes", "two_ranks"))
        write_run(os.path.join(tmp, "other"), OTHER_PROGRAM)
        check("different programs", ["diff", "good", "other"], tmp,
              must_say=("different programs", "train.py", "other.py"))

        # Bad options.
        check("one run only", ["diff", "good"], tmp, must_say=("two run directories",))
        check("unknown option", ["diff", "good", "good", "--jason"], tmp, must_say=("--jason",))
        # Tolerance options: the option (or the policy file's line) and the accepted forms.
        check("bad tolerance", ["diff", "good", "changed", "--tolerance", "rel:fast"], tmp,
              must_say=("--tolerance", '"rel:fast"', "ulp:N"))
        check("negative tolerance", ["diff", "good", "changed", "--tolerance", "rel:-1"], tmp,
              must_say=("--tolerance", "rel:X,abs:Y"))
        check("empty tolerance", ["diff", "good", "changed", "--tolerance="], tmp,
              must_say=("--tolerance needs a value",))
        check("missing policy file", ["diff", "good", "changed", "--tolerance-policy", "no.txt"],
              tmp, must_say=("--tolerance-policy", "no.txt"))
        with open(os.path.join(tmp, "tol.txt"), "w") as f:
            f.write("# ok so far\ndefault rel:1e-6\nop aten::mm fast\n")
        check("bad policy line", ["diff", "good", "changed", "--tolerance-policy", "tol.txt"],
              tmp, must_say=("tol.txt:3:", '"fast"'))
        with open(os.path.join(tmp, "tol2.txt"), "w") as f:
            f.write("nondeterministic\n")
        check("policy rule without glob", ["diff", "good", "changed", "--tolerance-policy",
                                           "tol2.txt"], tmp, must_say=("tol2.txt:1:", "a glob"))
        check("empty nondeterministic glob", ["diff", "good", "changed",
                                              "--allow-nondeterministic", "aten::a,,aten::b"],
              tmp, must_say=("--allow-nondeterministic", "bad glob"))
        check("bad jobs", ["diff", "good", "changed", "--jobs", "many"], tmp,
              must_say=("--jobs", "'many'"))
        check("negative jobs", ["diff", "good", "changed", "--jobs", "-2"], tmp,
              must_say=("--jobs -2", "1 to 4096"))
        check("bad step", ["show", "good", "--step", "two"], tmp, must_say=("--step", "'two'"))
        check("missing rank", ["show", "good", "--rank", "3"], tmp, must_say=("--rank 3",))
        check("record without -o", ["record", "--", "true"], tmp, must_say=("-o DIR",))
        check("record without a command", ["record", "-o", "r"], tmp, must_say=("--",))
        check("record a missing program", ["record", "-o", "r", "--", "/nonexistent/prog"], tmp,
              must_say=("cannot run", "/nonexistent/prog"))
        check("record bad steps", ["record", "-o", "r", "--steps", "5:2", "--", "true"], tmp,
              must_say=("'5:2'",))
        check("unknown command", ["frobnicate"], tmp, must_say=("frobnicate",))
        check("record bad capture selector", ["record", "-o", "r", "--capture", "step=x", "--",
                                              "true"], tmp,
              must_say=("--capture 'step=x'", "non-negative integer"))
        check("record against a missing run", ["record", "-o", "r", "--against", "nope", "--",
                                               "true"], tmp, must_say=("nope",))
        check("record --continue without --against", ["record", "-o", "r", "--continue", "--",
                                                     "true"], tmp, must_say=("--against",))
        # good's meta names a program that is not here: the re-run fails with what to do.
        check("explain a run that cannot be re-run", ["diff", "good", "changed", "--explain"],
              tmp, must_say=("did not reach step", "meta.json"))

        # Cut the trace at every byte and flip every 7th byte: never a crash.
        os.makedirs(os.path.join(tmp, "cut"))
        cut_path = os.path.join(tmp, "cut", "rank0.ugt")
        for size in range(0, len(data)):
            with open(cut_path, "wb") as f:
                f.write(data[:size])
            check(f"cut at {size}", ["show", "cut", "--allow-damaged"], tmp, code=None)
            check(f"diff cut at {size}", ["diff", "good", "cut"], tmp, code=None)
        for pos in range(0, len(data), 7):
            flipped = bytearray(data)
            flipped[pos] ^= 0xFF
            with open(cut_path, "wb") as f:
                f.write(bytes(flipped))
            check(f"flip at {pos}", ["diff", "good", "cut", "--allow-damaged"], tmp, code=None)

        # The same for a trace with Collective records.
        collectives = write_run(os.path.join(tmp, "collectives"), COLLECTIVES)
        with open(collectives, "rb") as f:
            data = f.read()
        for size in range(0, len(data)):
            with open(cut_path, "wb") as f:
                f.write(data[:size])
            check(f"collectives cut at {size}", ["show", "cut", "--allow-damaged", "--json"], tmp,
                  code=None)
            check(f"collectives diff cut at {size}",
                  ["diff", "collectives", "cut", "--allow-damaged"], tmp, code=None)
        for pos in range(0, len(data), 5):
            flipped = bytearray(data)
            flipped[pos] ^= 0xFF
            with open(cut_path, "wb") as f:
                f.write(bytes(flipped))
            check(f"collectives flip at {pos}", ["diff", "collectives", "cut", "--allow-damaged"],
                  tmp, code=None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for failure in failures:
        print("FAIL", failure)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

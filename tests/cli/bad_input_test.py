#!/usr/bin/env python3
"""Bad input never crashes upguard: a clear message naming the file, byte offset or option,
and exit code 2. Run by ctest in the release and the ASan/UBSan debug presets.

usage: bad_input_test.py UPGUARD UGT_TEXT [DAMAGE_STRIDE]

DAMAGE_STRIDE (default 1) takes every Nth cut and flip of the damage loops: the sanitized
preset passes 6, since each run there starts an instrumented binary (the in-process damage
tests, trace_damage_test.cc, still take every byte under ASan).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

UPGUARD, UGT_TEXT = (os.path.abspath(p) for p in sys.argv[1:3])
STRIDE = int(sys.argv[3]) if len(sys.argv) > 3 else 1
failures = []


def sampled(count, every=1):
    """Positions 0, every, 2 * every, ... below count; with STRIDE > 1 the k-th STRIDE of them
    gives its (k mod STRIDE)-th, so that the sample is not all multiples of STRIDE."""
    positions = range(0, count, every)
    if STRIDE == 1:
        return positions
    return sorted({positions[min(len(positions) - 1, k * STRIDE + k % STRIDE)]
                   for k in range((len(positions) + STRIDE - 1) // STRIDE)})


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


# Run metadata as upguard records it (recorder.cc + python/upguard/_meta.py), and for each
# field a value of the wrong type. Written into a run's meta.json and into a trace's metadata
# record, each must give exit code 2 and a message naming the field: never an exception.
RECORDED_META = {
    "argv": ["/usr/bin/python3", "train.py"], "executable": "/usr/bin/python3", "cwd": "/w",
    "local_rank": 0, "process_groups": [{"name": "0", "ranks": [0], "backend": "gloo"}],
    "torch_version": "1.13.1", "python_version": "3.11.2", "intra_op_threads": 4,
    "inter_op_threads": 4, "deterministic_algorithms": False, "cudnn_deterministic": False,
    "env": {"OMP_NUM_THREADS": "4"}, "launcher_argv": ["/usr/bin/python3", "-m", "torchrun"],
    "upguard_version": "0.1.0", "trace_version": 1, "rank": 0, "world_size": 1,
    "hostname": "h", "pid": 12, "start_time": 1700000000, "against": "/runs/ref",
    "record_options": {"steps": {"first": 0, "last": None}, "max_depth": -1, "ops": [],
                       "stats": True},
    "complete": True,
}
WRONG_TYPES = [  # (path of keys, wrong value, the field as the message names it)
    (("rank",), "0", "rank"), (("world_size",), "x", "world_size"),
    (("world_size",), 1.5, "world_size"), (("local_rank",), [0], "local_rank"),
    (("pid",), "12", "pid"), (("trace_version",), "1", "trace_version"),
    (("start_time",), {}, "start_time"), (("format",), 1, "format"),
    (("created",), 20240501, "created"), (("ranks",), "rank0.ugt", "ranks"), (("intra_op_threads",), "4", "intra_op_threads"),
    (("inter_op_threads",), True, "inter_op_threads"), (("argv",), "python3 train.py", "argv"),
    (("argv", 1), 7, "argv[1]"), (("launcher_argv",), {}, "launcher_argv"),
    (("executable",), 3, "executable"), (("cwd",), ["/w"], "cwd"),
    (("torch_version",), 1.13, "torch_version"), (("python_version",), None, "python_version"),
    (("upguard_version",), [], "upguard_version"), (("hostname",), 1, "hostname"),
    (("against",), {}, "against"), (("deterministic_algorithms",), "no", "deterministic_algorithms"),
    (("cudnn_deterministic",), 0, "cudnn_deterministic"), (("complete",), "yes", "complete"),
    (("env",), ["OMP_NUM_THREADS=4"], "env"), (("env", "OMP_NUM_THREADS"), 4, "env.OMP_NUM_THREADS"),
    (("record_options",), [], "record_options"),
    (("record_options", "max_depth"), "deep", "record_options.max_depth"),
    (("record_options", "ops"), "aten::*", "record_options.ops"),
    (("record_options", "stats"), "yes", "record_options.stats"),
    (("record_options", "steps"), "0:4", "record_options.steps"),
    (("record_options", "steps", "last"), "end", "record_options.steps.last"),
    (("process_groups",), {"0": [0]}, "process_groups"),
    (("process_groups", 0, "ranks"), "0", "process_groups[0].ranks"),
]


def with_wrong_type(keys, value):
    meta = json.loads(json.dumps(RECORDED_META))
    target = meta
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return meta


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


def as_rank(text, rank, world_size=2):
    """`text` (a rank 0 of world size 1) as rank `rank` of `world_size`."""
    return text.replace('"rank":0,"world_size":1', f'"rank":{rank},"world_size":{world_size}')


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
        write_run(os.path.join(tmp, "two_ranks"), as_rank(TRACE, 0), 0)
        write_run(os.path.join(tmp, "two_ranks"), as_rank(TRACE, 1), 1)
        check("different world sizes", ["diff", "good", "two_ranks"], tmp,
              must_say=("different world sizes", "two_ranks"))
        write_run(os.path.join(tmp, "other"), OTHER_PROGRAM)
        check("different programs", ["diff", "good", "other"], tmp,
              must_say=("different programs", "train.py", "other.py"))

        # A trace whose metadata claims another rank than its file name: with a real culprit
        # on rank 1, the diff must not pair it as rank 0 (or read a rank 5 out of bounds).
        changed_trace = TRACE.replace("digest=@z", "digest=@z2")
        for name, rank1_text in (("ranks_ok", TRACE), ("ranks_culprit", changed_trace)):
            write_run(os.path.join(tmp, name), as_rank(TRACE, 0), 0)
            write_run(os.path.join(tmp, name), as_rank(rank1_text, 1), 1)
        check("two ranks with a culprit on rank 1", ["diff", "ranks_ok", "ranks_culprit"], tmp,
              code=1, must_say=("rank 1",))
        for claimed in ("5", "0"):
            name = f"claims{claimed}"
            write_run(os.path.join(tmp, name), as_rank(TRACE, 0), 0)
            write_run(os.path.join(tmp, name), as_rank(changed_trace, claimed), 1)
            for args in (["diff", "ranks_ok", name], ["diff", name, "ranks_ok"], ["show", name],
                         ["show", name, "--rank", "1"], ["nan", name]):
                check(f"rank1.ugt claims rank {claimed}: {args[0]}", args, tmp,
                      must_say=(f"{name}/rank1.ugt", f"says rank {claimed}",
                                "file name says rank 1", "rank<R>.ugt"))
        # More rank files than meta.json's world size.
        write_run(os.path.join(tmp, "too_many"), as_rank(TRACE, 0), 0)
        write_run(os.path.join(tmp, "too_many"), as_rank(TRACE, 1), 1)
        with open(os.path.join(tmp, "too_many", "meta.json"), "w") as f:
            json.dump({"world_size": 1, "argv": ["/usr/bin/python3", "train.py"]}, f)
        check("a rank beyond meta.json's world size", ["diff", "ranks_ok", "too_many"], tmp,
              must_say=("too_many/rank1.ugt", "not below the run's world size 1"))

        # Wrongly typed metadata, in meta.json and in the trace's metadata record.
        for keys, value, field in WRONG_TYPES:
            meta = with_wrong_type(keys, value)
            in_json = os.path.join(tmp, "typed_json")
            shutil.rmtree(in_json, ignore_errors=True)
            write_run(in_json, TRACE)
            with open(os.path.join(in_json, "meta.json"), "w") as f:
                json.dump(meta, f)
            in_trace = os.path.join(tmp, "typed_trace")
            shutil.rmtree(in_trace, ignore_errors=True)
            meta["rank"], meta["world_size"] = (meta["rank"] if field == "rank" else 0,
                                                meta["world_size"] if field == "world_size" else 1)
            write_run(in_trace, "meta " + json.dumps(meta) + "\n" + TRACE.split("\n", 1)[1])
            for run_name, where in (("typed_json", "typed_json/meta.json"),
                                    ("typed_trace", "typed_trace/rank0.ugt")):
                for args in (["diff", "good", run_name], ["show", run_name], ["nan", run_name],
                             ["diff", run_name, "changed", "--json"]):
                    check(f"{field}={value!r} in {where}: {args[0]}", args, tmp,
                          must_say=(where, f'"{field}" should be', "found"))

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
        # Crafted here, without who/where: re-run only with consent (--trust-run).
        check("explain a run that cannot be re-run",
              ["diff", "good", "changed", "--explain", "--trust-run", "good", "--trust-run",
               "changed"], tmp, must_say=("did not reach step", "meta.json"))

        # Cut the trace at every byte and flip every 7th byte (a STRIDE-th of those): never a crash.
        os.makedirs(os.path.join(tmp, "cut"))
        cut_path = os.path.join(tmp, "cut", "rank0.ugt")
        for size in sampled(len(data)):
            with open(cut_path, "wb") as f:
                f.write(data[:size])
            check(f"cut at {size}", ["show", "cut", "--allow-damaged"], tmp, code=None)
            check(f"diff cut at {size}", ["diff", "good", "cut"], tmp, code=None)
        for pos in sampled(len(data), 7):
            flipped = bytearray(data)
            flipped[pos] ^= 0xFF
            with open(cut_path, "wb") as f:
                f.write(bytes(flipped))
            check(f"flip at {pos}", ["diff", "good", "cut", "--allow-damaged"], tmp, code=None)

        # The same for a trace with Collective records.
        collectives = write_run(os.path.join(tmp, "collectives"), COLLECTIVES)
        with open(collectives, "rb") as f:
            data = f.read()
        for size in sampled(len(data)):
            with open(cut_path, "wb") as f:
                f.write(data[:size])
            check(f"collectives cut at {size}", ["show", "cut", "--allow-damaged", "--json"], tmp,
                  code=None)
            check(f"collectives diff cut at {size}",
                  ["diff", "collectives", "cut", "--allow-damaged"], tmp, code=None)
        for pos in sampled(len(data), 5):
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

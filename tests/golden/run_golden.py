#!/usr/bin/env python3
"""Runs one declarative golden test: text traces in, exact CLI output expected.

A case file (tests/golden/*.test) has a header and sections:

    # what the case checks (comment lines)
    command: diff a b --json        # arguments after `upguard`; run in a temp dir
    exit: 1                         # expected exit code
    === a                           # text-form trace (docs/formats/trace.md, Appendix A)
    ...                             # written to <tmp>/a/rank0.ugt; `=== a/rank1` for rank 1
    === file tol.txt                # any other file the command reads, written verbatim
    ...
    === expect                      # the exact stdout
    ...

usage: run_golden.py UPGUARD UGT_TEXT CASE.test      (UPDATE_GOLDEN=1 rewrites `expect`)
"""

import os
import subprocess
import sys
import tempfile


def parse(path):
    header, sections, current = {}, {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("=== "):
                current = line[4:].strip()
                sections[current] = []
            elif current is not None:
                sections[current].append(line)
            elif ":" in line and not line.startswith("#"):
                key, value = line.split(":", 1)
                header[key.strip()] = value.strip()
    return header, {k: "".join(v) for k, v in sections.items()}


def main():
    upguard, ugt_text, case = (os.path.abspath(p) for p in sys.argv[1:4])
    header, sections = parse(case)
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in sections.items():
            if name == "expect":
                continue
            if name.startswith("file "):
                with open(os.path.join(tmp, name[5:]), "w", encoding="utf-8") as f:
                    f.write(text)
                continue
            run, _, rank = name.partition("/")
            os.makedirs(os.path.join(tmp, run), exist_ok=True)
            src = os.path.join(tmp, name.replace("/", "_") + ".txt")
            with open(src, "w", encoding="utf-8") as f:
                f.write(text)
            dst = os.path.join(tmp, run, (rank or "rank0") + ".ugt")
            subprocess.run([ugt_text, "to-binary", src, dst], check=True)
        result = subprocess.run([upguard] + header["command"].split(), cwd=tmp,
                                capture_output=True, text=True, timeout=60)
    expected_exit = int(header.get("exit", "0"))
    if os.environ.get("UPDATE_GOLDEN") == "1":
        with open(case, encoding="utf-8") as f:
            content = f.read()
        head = content[:content.index("=== expect\n") + len("=== expect\n")]
        with open(case, "w", encoding="utf-8") as f:
            f.write(head + result.stdout)
        print(f"updated {case}")
        return 0
    ok = True
    if result.returncode != expected_exit:
        print(f"exit code {result.returncode}, expected {expected_exit}\nstderr:\n{result.stderr}")
        ok = False
    if result.stdout != sections.get("expect", ""):
        print("stdout differs from `expect`:\n--- expected\n" + sections.get("expect", "") +
              "--- actual\n" + result.stdout + "--- stderr\n" + result.stderr)
        ok = False
    print(("PASS " if ok else "FAIL ") + os.path.basename(case))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""What the CLI test scripts share: named checks that collect failures, running `upguard`, and
binary traces made from their text form (docs/formats/trace.md, Appendix A).

    checks = Checks()
    checks.expect("refusal: exit code 2", rc == 2, text)
    sys.exit(checks.report())
"""

import os
import subprocess


class Checks:
    def __init__(self):
        self.failures = []
        self.count = 0

    def expect(self, name, condition, detail=""):
        self.count += 1
        if not condition:
            self.failures.append(f"{name}{': ' + detail if detail else ''}")

    def report(self):
        """Prints the failures and a summary line; the exit code (1 when any failed)."""
        for failure in self.failures:
            print("FAIL", failure)
        print(f"{self.count - len(self.failures)} passed, {len(self.failures)} failed")
        return 1 if self.failures else 0


def run_upguard(upguard, args, cwd, env=None):
    """(exit code, stdout + stderr) of `upguard ARGS` in `cwd`."""
    result = subprocess.run([upguard] + args, cwd=cwd, capture_output=True, text=True,
                            timeout=60, env=env)
    return result.returncode, result.stdout + result.stderr


def write_trace(ugt_text, path, text):
    """The binary trace of `text` at `path`."""
    src = path + ".txt"
    with open(src, "w") as f:
        f.write(text)
    subprocess.run([ugt_text, "to-binary", src, path], check=True)
    os.remove(src)

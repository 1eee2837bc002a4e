"""examples/cpp_engine/tiny_engine records two identical runs and one with a leaky ReLU from
step 1 on: `upguard diff` calls the identical ones identical and names the planted op."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    upguard, engine = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        for name, args in (("a", []), ("b", []), ("planted", ["--plant"])):
            subprocess.run([engine, str(runs / name), *args], check=True, capture_output=True)
        same = subprocess.run([upguard, "diff", runs / "a", runs / "b", "--json"],
                              capture_output=True, text=True)
        assert same.returncode == 0, same.stdout + same.stderr
        assert json.loads(same.stdout)["verdict"] == "identical"
        planted = subprocess.run([upguard, "diff", runs / "a", runs / "planted", "--json"],
                                 capture_output=True, text=True)
        assert planted.returncode == 1, planted.stdout + planted.stderr
        report = json.loads(planted.stdout)
        div = report["ranks"][0]["divergence"]
        assert report["verdict"] == "culprit", report["verdict"]
        assert (div["op"], div["module"], div["step"], div["phase"]) == (
            "tiny::relu", "layer1.act", 1, "forward"), div
        slots = {slot["name"]: slot for slot in div["inputs"]}
        assert not slots["negative_slope"]["equal"] and slots["self"]["equal"], slots
    print("cpp_engine: identical runs identical; the planted relu is the culprit at step 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())

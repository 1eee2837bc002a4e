"""Run a training script with PyTorch's Flight Recorder dumped the way its users dump it: each
rank writes <TORCH_FR_DUMP_TEMP_FILE><rank> through torch's own `_dump_fr_trace_file` (the
pickled dump, with Python frames), `--after` seconds after it started, or when the script ends
or raises, whichever comes first. The dump of a rank that hangs is then the state of its hang.

    TORCH_FR_DUMP_TEMP_FILE=/tmp/fr/rank python -m torch.distributed.run --nproc_per_node=2 \\
        tests/e2e/fr_dump.py --after 8 --done /tmp/fr-done -- examples/gpt_ddp.py --plant hang

ProcessGroupGloo records into the Flight Recorder by itself (torch >= 2.6); it has no
dump-on-timeout of its own, so a dump is asked for. `--json` also writes the JSON dump
(`_dump_fr_trace_json`) to <prefix><rank>.json. After a rank's dump, `--done DIR` gets a file
rank<R> holding the rank's pid: the test waits for those, then stops the job and its ranks
(torchrun starts each rank in a session of its own)."""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import threading

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--after", type=float, default=0, help="seconds; 0: at the end only")
    parser.add_argument("--done", required=True)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    rank = int(os.environ["RANK"])
    lock = threading.Lock()
    dumped = []

    def dump() -> None:
        with lock:
            if dumped:
                return
            dumped.append(True)
            c10d = torch._C._distributed_c10d
            c10d._dump_fr_trace_file(rank, True, True, False)  # collectives, stacks, all
            if args.json:
                prefix = os.environ["TORCH_FR_DUMP_TEMP_FILE"]
                with open(f"{prefix}{rank}.json", "wb") as out:
                    out.write(c10d._dump_fr_trace_json())
            os.makedirs(args.done, exist_ok=True)
            marker = os.path.join(args.done, f"rank{rank}")
            with open(marker + ".tmp", "w") as out:
                out.write(str(os.getpid()))
            os.replace(marker + ".tmp", marker)  # whole, once it is seen

    if args.after > 0:
        timer = threading.Timer(args.after, dump)
        timer.daemon = True
        timer.start()
    sys.argv = [args.script, *args.args]
    try:
        runpy.run_path(args.script, run_name="__main__")
    finally:
        dump()


if __name__ == "__main__":
    main()

"""A small training, recorded inside `with upguard.record(RUN)`, then the code after the block:
a checkpoint written (a marker file) and the final weights' checksum printed. The workload of
test_never_raise.py: whatever happens to upguard, the code after the block runs and the weights
are those of the same training without upguard.

    --run RUN            record into RUN (without it, upguard is never imported)
    --marker PATH        the "checkpoint" written after the block
    --max-bytes N        upguard.record(RUN, max_bytes=N)
    --resume-every K     call upguard.resume_point(step, ...) at the top of each step, every=K
    (under `upguard record`, leave --run out: the recording is the CLI's)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import threading

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run")
    parser.add_argument("--marker", required=True)
    parser.add_argument("--max-bytes")
    parser.add_argument("--resume-every", type=int, default=0)
    parser.add_argument("--unsavable", action="store_true",
                        help="hand resume_point an object a snapshot cannot hold (a lock)")
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data, target = torch.randn(32, 64), torch.randn(32, 8)

    recording: contextlib.AbstractContextManager = contextlib.nullcontext()
    if args.run:
        import upguard

        budget = {"max_bytes": args.max_bytes} if args.max_bytes else {}
        recording = upguard.record(args.run, **budget)
    with recording:
        for step in range(args.steps):
            if args.resume_every:
                import upguard

                state = {"model": model, "optimizer": optimizer}
                if args.unsavable:
                    state["lock"] = threading.Lock()
                upguard.resume_point(step, state, every=args.resume_every)
            optimizer.zero_grad()
            nn.functional.mse_loss(model(data), target).backward()
            optimizer.step()

    with open(args.marker, "w") as marker:  # the checkpoint after the block
        marker.write("checkpoint\n")
    digest = hashlib.sha256()
    for parameter in model.parameters():
        digest.update(parameter.detach().numpy().tobytes())
    print("weights", digest.hexdigest())


if __name__ == "__main__":
    main()

"""A small classifier fed by a DataLoader over a list of samples; how many workers load it comes
from the environment (LOADER_WORKERS, 2 unless set), which `upguard diff --explain` does not
replay. The same training with 2 workers and with none records different input-pipeline ops in
the training process (a worker's batch arrives as other ops than an in-process collate), and the
same values. The dropout probability comes from --dropout, or from DROPOUT_P when set (which a
re-run does not replay either); LABEL_SHIFT shifts the labels."""

import argparse
import os

import torch
from torch.utils.data import DataLoader


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dropout", type=float, default=0.1)
    args = parser.parse_args()
    p = float(os.environ.get("DROPOUT_P", args.dropout))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(p),
                                torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    points = torch.randn(64, 16, generator=torch.Generator().manual_seed(2))
    shift = int(os.environ.get("LABEL_SHIFT", "0"))  # applied in Python: no op records it
    # A list of (tensor, int) pairs: default_collate stacks the points and makes the labels
    # with torch.tensor(list), in the training process when there are no workers.
    samples = [(points[item], (item + shift) % 4) for item in range(64)]
    loader = DataLoader(samples, batch_size=8, shuffle=True,
                        generator=torch.Generator().manual_seed(1),
                        num_workers=int(os.environ.get("LOADER_WORKERS", "2")))
    for step, (x, y) in enumerate(loader):
        if step == 3:
            break
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()

"""A small DDP training fed by a DataLoader, for test_ddp_loader.py: gloo, a DistributedSampler,
dropout, SGD with momentum. `--workers N` sets the DataLoader's worker processes: the batches are
the same with any N, only when and how they reach the training process differ. `--plant` gives
rank 1 alone another dropout probability."""

import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--plant", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    p = 0.2 if args.plant and dist.get_rank() == 1 else 0.1
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Dropout(p), nn.Linear(64, 8)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(3)
    dataset = torch.utils.data.TensorDataset(torch.randn(256, 32, generator=data),
                                             torch.randint(0, 8, (256,), generator=data))
    sampler = torch.utils.data.distributed.DistributedSampler(dataset, shuffle=True, seed=4)
    loader = torch.utils.data.DataLoader(dataset, batch_size=16, sampler=sampler,
                                         num_workers=args.workers)
    torch.manual_seed(10 + dist.get_rank())  # each rank's own dropout masks
    for step, (x, y) in enumerate(loader):
        if step == args.steps:
            break
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

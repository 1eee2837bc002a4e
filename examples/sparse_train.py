"""A sparse-embedding model trained with SparseAdam: nn.Embedding(sparse=True) gives sparse
gradients, whose coalescing kernels fill fresh int64 buffers through as_strided_.

    upguard record -o runs/a -- /usr/bin/python3 examples/sparse_train.py
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    emb = nn.Embedding(50, 8, sparse=True)
    head = nn.Linear(8, 1)
    sparse = torch.optim.SparseAdam(list(emb.parameters()), lr=1e-2)
    dense = torch.optim.Adam(head.parameters(), lr=1e-2)
    for step in range(args.steps):
        ids = torch.randint(0, 50, (16, 4))
        loss = head(emb(ids).mean(1)).pow(2).mean()
        sparse.zero_grad()
        dense.zero_grad()
        loss.backward()
        sparse.step()
        dense.step()
        if not args.quiet:
            print(f"step {step}: loss {loss.item():.8f}")


if __name__ == "__main__":
    main()

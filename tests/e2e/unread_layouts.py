"""Layouts upguard reads another way, and one it does not: a small training step with a sparse
COO embedding-like product, a CSR matrix, a conjugated complex view, and optionally a BSR
matrix (not read). `--value V` changes one stored value of the COO and CSR matrices."""

import argparse

import torch

import upguard


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--value", type=float, default=1.0)
    parser.add_argument("--bsr", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(3, 2))
    opt = torch.optim.SGD([weight], lr=0.1)
    for _ in range(2):  # recorded by `upguard record`
        indices = torch.tensor([[0, 1, 2], [2, 0, 1]])
        coo = torch.sparse_coo_tensor(indices, torch.tensor([args.value, 2.0, 3.0]),
                                      (3, 3)).coalesce()
        csr = coo.to_sparse_csr()
        z = torch.complex(weight.detach(), weight.detach() * 2).conj()
        loss = torch.sparse.mm(coo, weight).sum() + (csr.to_dense() @ weight).sum()
        loss = loss + (z * 1).abs().sum()
        if args.bsr:
            loss = loss + torch.eye(4).to_sparse_bsr((2, 2)).to_dense().sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        upguard.step()


if __name__ == "__main__":
    main()

"""A tiny regression trained by Lightning's Trainer (automatic optimization, CPU): the
LightningModule's own forward never runs, its training_step calls `self.net`, an nn.Sequential
with a Dropout at index 2. The Trainer calls optimizer.step(closure), and the closure runs the
forward and the backward. test_phases.py records it twice, with another --p.

    upguard record -o runs/a -- python tests/e2e/lightning_train.py --p 0.1
"""

from __future__ import annotations

import argparse
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning.pytorch as pl

parser = argparse.ArgumentParser()
parser.add_argument("--p", type=float, default=0.1, help="the dropout probability of net.2")
parser.add_argument("--steps", type=int, default=2)
args = parser.parse_args()

warnings.filterwarnings("ignore", message=".*does not have many workers.*")


class Regressor(pl.LightningModule):
    def __init__(self, p: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(p), nn.Linear(8, 1))

    def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        return F.mse_loss(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


torch.set_num_threads(1)
torch.manual_seed(0)
data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
trainer = pl.Trainer(accelerator="cpu", devices=1, max_steps=args.steps, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, num_sanity_val_steps=0)
trainer.fit(Regressor(args.p), DataLoader(data, batch_size=8))

"""One SGD step of torchvision's MobileNetV2, then an evaluation loop over a DataLoader whose
batch size comes from EVAL_BATCH (16 unless set): 64 samples in 4 batches of 16, or 6 of 12
and 4. Each model call in eval is more than a thousand recorded ops."""

import os

import torch
import torchvision
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = torchvision.models.mobilenet_v2(num_classes=10)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(64, 3, 32, 32)
y = torch.randint(0, 10, (64,))
torch.nn.functional.cross_entropy(model(x[:8]), y[:8]).backward()
opt.step()
model.eval()
with torch.no_grad():
    for xb, _ in DataLoader(TensorDataset(x, y), batch_size=int(os.environ.get("EVAL_BATCH",
                                                                               "16"))):
        model(xb)

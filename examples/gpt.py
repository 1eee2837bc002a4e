"""A small character-level GPT (decoder-only transformer), the model of upguard's demo.

Plain PyTorch, nothing upguard-specific: pre-norm blocks of causal self-attention and an MLP
with GELU, learned position embeddings, a tied-free output head.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from typing import Optional

import torch
import torch.nn as nn
import torch.utils.checkpoint
import torch.nn.functional as F


@dataclass
class GPTConfig:
    vocab_size: int = 64
    block_size: int = 32
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.1
    # torch 2.x idioms (gpt_train.py --sdpa, --checkpoint): attention by
    # F.scaled_dot_product_attention; each block's forward under torch.utils.checkpoint
    # ("reentrant" or "non-reentrant"), recomputed in backward.
    sdpa: bool = False
    checkpoint: str = "none"


class ScaleGrad(torch.autograd.Function):
    """Identity forward; multiplies the gradient by `scale` in backward (a gradient-scaling
    hook of the kind mixed-precision and pipeline schedules use)."""

    @staticmethod
    def forward(ctx, x, scale):  # type: ignore[no-untyped-def]
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[no-untyped-def]
        return grad * ctx.scale, None


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.sdpa = config.sdpa
        self.dropout = config.dropout
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.attn_drop = nn.Dropout(config.dropout)
        mask = torch.tril(torch.ones(config.block_size, config.block_size, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, config.block_size, config.block_size))
        self.grad_scale = 1.0
        self.extra_contiguous = False  # the "extra-contiguous" plant
        self.log_zero = False  # the "log-zero" plant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.extra_contiguous:  # the same values, copied out of the transposed view
            q = q.contiguous()
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.sdpa:
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
            att = self.attn_drop(F.softmax(att, dim=-1))
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        if self.log_zero:  # log-probabilities of a softmax with exact zeros: -inf
            y = y + torch.log(att).mean(dim=(1, 3)).unsqueeze(-1)
        return ScaleGrad.apply(self.proj(y), self.grad_scale)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.act = nn.GELU()
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd)
        self.extra_op = False  # the demo's "extra op" change
        self.overflow = False  # the "overflow" plant
        self.noisy_sum = False  # gpt_train.py --noisy-sum: nondeterministic by design

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.fc(x))
        if self.extra_op:
            h = h * 1.0
        if self.overflow:  # exp of activations scaled far past what float32 holds: +inf
            h = torch.exp(h * 1e4)
        if self.noisy_sum:
            return self.noisy_projection(h)
        return self.proj(h)

    def noisy_projection(self, h: torch.Tensor) -> torch.Tensor:
        """proj(h) as eight partial products summed in an order drawn from the OS at each call:
        what GPU atomics (index_add_, scatter_add_) do to a sum, on the CPU. Runs of one
        program then differ in the last bits, and the difference spreads. (Eight, not four: a
        sum of four pairs its terms, and only 3 of the 24 orders round differently.)"""
        order = random.SystemRandom().sample(range(8), 8)
        weights = self.proj.weight.chunk(8, dim=1)
        parts = [F.linear(c, w) for c, w in zip(h.chunk(8, dim=-1), weights)]
        return torch.stack([parts[i] for i in order]).sum(0) + self.proj.bias


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.reseed: Optional[int] = None  # plant: reseed the generator inside forward

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        T = idx.size(1)
        pos = torch.arange(T, dtype=torch.long)
        if self.reseed is not None:
            torch.manual_seed(self.reseed)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            if self.config.checkpoint == "none":
                x = block(x)
            else:
                x = torch.utils.checkpoint.checkpoint(
                    block, x, use_reentrant=self.config.checkpoint == "reentrant")
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

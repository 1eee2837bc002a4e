"""A zoo of every `torch.nn` layer class, run in train and eval mode, for the hidden-write probe.

Some ATen kernels write an input tensor that their schema does not declare as written:
`aten::native_batch_norm` updates `running_mean`/`running_var` in train mode,
`aten::rrelu_with_noise` fills `noise`, an embedding with `max_norm` renormalizes its weight,
and so on. A probe (C++, outside this file) watches every op while this script runs; this file's
only job is to make every such kernel run. It therefore exercises:

* every public `torch.nn` layer class (`layer_cases()`), several configurations for some, each
  built with a fixed seed and run `steps` times in train mode (forward + backward) and in eval
  mode (forward with autograd on, then once under `torch.no_grad()` for the fast paths);
* every `torch.optim` optimizer, with `foreach=False` and `foreach=True` where accepted, and
  `torch.nn.utils.clip_grad_norm_`;
* a few functional paths and `no_grad()` / `inference_mode()` evaluation of a small CNN.

`coverage_problems()` names each `torch.nn` module class that is neither run here nor listed in
`excluded()`, so that a test fails when a torch upgrade adds a layer. Pure torch: works on
torch 1.13 (Debian) and 2.x; classes that only some versions have are looked up with getattr.

    /usr/bin/python3 tests/e2e/layer_zoo.py    # runs everything; exit 1 on coverage problems
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import time
import warnings
from typing import Any, Callable, Dict, List, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Case = Tuple[str, Callable[[], nn.Module], Callable[[], tuple]]


# --- input helpers (called inside make_inputs, after the case's seed is set) -------------------

def R(*shape: int) -> Tensor:
    """A float leaf that requires grad, so backward reaches the layer's input-grad kernels."""
    return torch.randn(*shape, requires_grad=True)


def Rn(*shape: int) -> Tensor:
    """A float non-leaf that requires grad: the input for `inplace=True` layers."""
    return torch.randn(*shape, requires_grad=True) * 1.0


def T(*shape: int) -> Tensor:
    """A float tensor without grad (targets, masks, hidden states)."""
    return torch.randn(*shape)


def U(*shape: int) -> Tensor:
    """Uniform in [0, 1), no grad (probability targets)."""
    return torch.rand(*shape)


def L(high: int, *shape: int) -> Tensor:
    """int64 indices in [0, high)."""
    return torch.randint(0, high, shape)


def S(*shape: int) -> Tensor:
    """Float signs, each -1 or +1 (targets of margin/hinge losses)."""
    return torch.randint(0, 2, shape).float() * 2 - 1


def logp(*shape: int, dim: int = 1) -> Tensor:
    """Log-probabilities that require grad (a non-leaf over a leaf)."""
    return F.log_softmax(R(*shape), dim=dim)


def causal(n: int) -> Tensor:
    """An additive causal attention mask, -inf above the diagonal."""
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


def causal_bool(n: int) -> Tensor:
    """A boolean causal attention mask, True (masked) above the diagonal."""
    return torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)


def unpool_inputs(dims: int, shape: Tuple[int, ...]) -> tuple:
    """(pooled, indices) of a 2-wide max pool, as MaxUnpool{dims}d takes them."""
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[dims]
    out, idx = pool(T(*shape), 2, return_indices=True)
    return out.requires_grad_(), idx


def packed(seq: int, batch: int, feat: int) -> tuple:
    """A PackedSequence of `batch` sequences of decreasing length, for RNN/LSTM/GRU."""
    lengths = torch.tensor([seq - i for i in range(batch)])
    return (nn.utils.rnn.pack_padded_sequence(R(seq, batch, feat), lengths),)


def has(name: str) -> bool:
    return hasattr(nn, name)


# --- the table ---------------------------------------------------------------------------------

def _activations() -> List[Case]:
    x = lambda: (R(2, 3, 4),)
    xi = lambda: (Rn(2, 3, 4),)
    c: List[Case] = [
        ("ELU", lambda: nn.ELU(), x),
        ("ELU/inplace", lambda: nn.ELU(alpha=0.5, inplace=True), xi),
        ("CELU", lambda: nn.CELU(alpha=0.7), x),
        ("CELU/inplace", lambda: nn.CELU(inplace=True), xi),
        ("SELU", lambda: nn.SELU(), x),
        ("SELU/inplace", lambda: nn.SELU(inplace=True), xi),
        ("GELU", lambda: nn.GELU(), x),
        ("GELU/tanh", lambda: nn.GELU(approximate="tanh"), x),
        ("GLU", lambda: nn.GLU(dim=-1), x),
        ("Hardshrink", lambda: nn.Hardshrink(0.3), x),
        ("Hardsigmoid", lambda: nn.Hardsigmoid(), x),
        ("Hardsigmoid/inplace", lambda: nn.Hardsigmoid(inplace=True), xi),
        ("Hardswish", lambda: nn.Hardswish(), x),
        ("Hardswish/inplace", lambda: nn.Hardswish(inplace=True), xi),
        ("Hardtanh", lambda: nn.Hardtanh(-0.5, 0.5), x),
        ("Hardtanh/inplace", lambda: nn.Hardtanh(inplace=True), xi),
        ("LeakyReLU", lambda: nn.LeakyReLU(0.1), x),
        ("LeakyReLU/inplace", lambda: nn.LeakyReLU(0.1, inplace=True), xi),
        ("LogSigmoid", lambda: nn.LogSigmoid(), x),
        ("LogSoftmax", lambda: nn.LogSoftmax(dim=1), x),
        ("Mish", lambda: nn.Mish(), x),
        ("Mish/inplace", lambda: nn.Mish(inplace=True), xi),
        ("PReLU", lambda: nn.PReLU(), x),
        ("PReLU/channels", lambda: nn.PReLU(num_parameters=3), x),
        ("ReLU", lambda: nn.ReLU(), x),
        ("ReLU/inplace", lambda: nn.ReLU(inplace=True), xi),
        ("ReLU6", lambda: nn.ReLU6(), x),
        ("ReLU6/inplace", lambda: nn.ReLU6(inplace=True), xi),
        ("RReLU", lambda: nn.RReLU(0.1, 0.3), x),  # train: rrelu_with_noise writes `noise`
        ("RReLU/inplace", lambda: nn.RReLU(inplace=True), xi),
        ("Sigmoid", lambda: nn.Sigmoid(), x),
        ("SiLU", lambda: nn.SiLU(), x),
        ("SiLU/inplace", lambda: nn.SiLU(inplace=True), xi),
        ("Softmax", lambda: nn.Softmax(dim=1), x),
        ("Softmax2d", lambda: nn.Softmax2d(), lambda: (R(2, 3, 4, 4),)),
        ("Softmin", lambda: nn.Softmin(dim=-1), x),
        ("Softplus", lambda: nn.Softplus(beta=2.0, threshold=5.0), x),
        ("Softshrink", lambda: nn.Softshrink(0.3), x),
        ("Softsign", lambda: nn.Softsign(), x),
        ("Tanh", lambda: nn.Tanh(), x),
        ("Tanhshrink", lambda: nn.Tanhshrink(), x),
        ("Threshold", lambda: nn.Threshold(0.1, 20.0), x),
        ("Threshold/inplace", lambda: nn.Threshold(0.1, 20.0, inplace=True), xi),
    ]
    return c


def _attention() -> List[Case]:
    seq = lambda: (R(5, 2, 8),)                    # (S, N, E)
    seq_bf = lambda: (R(2, 5, 8),)                 # (N, S, E)
    qkv = lambda: (R(4, 2, 8), R(5, 2, 8), R(5, 2, 8))

    def self_attn_bf() -> tuple:  # q is k is v, batch_first, no weights: the eval fast path
        x = R(2, 5, 8)
        return x, x, x, None, False

    def masked_attn() -> tuple:   # key padding mask + attention mask, per-head weights
        pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
        return R(5, 2, 8), R(5, 2, 8), R(5, 2, 8), pad, True, causal_bool(5)

    enc = lambda **kw: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1, **kw)
    dec = lambda **kw: nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.1, **kw)

    def padded_bf() -> tuple:     # batch_first + key padding mask: nested-tensor fast path in eval
        pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
        return R(2, 5, 8), None, pad

    return [
        ("MultiheadAttention", lambda: nn.MultiheadAttention(8, 2), qkv),
        ("MultiheadAttention/self_batch_first",
         lambda: nn.MultiheadAttention(8, 2, batch_first=True), self_attn_bf),
        ("MultiheadAttention/masks_dropout",
         lambda: nn.MultiheadAttention(8, 2, dropout=0.2), masked_attn),
        ("MultiheadAttention/kdim_vdim_bias_kv_zero_attn",
         lambda: nn.MultiheadAttention(8, 2, kdim=6, vdim=4, add_bias_kv=True, add_zero_attn=True),
         lambda: (R(4, 2, 8), R(5, 2, 6), R(5, 2, 4))),
        ("TransformerEncoderLayer", lambda: enc(), seq),
        ("TransformerEncoderLayer/batch_first_norm_first_gelu",
         lambda: enc(batch_first=True, norm_first=True, activation="gelu"), seq_bf),
        ("TransformerEncoderLayer/batch_first_padded", lambda: enc(batch_first=True), padded_bf),
        ("TransformerEncoder", lambda: nn.TransformerEncoder(enc(), 2),
         lambda: (R(5, 2, 8), causal(5))),
        ("TransformerEncoder/batch_first_padded",
         lambda: nn.TransformerEncoder(enc(batch_first=True), 2, norm=nn.LayerNorm(8)), padded_bf),
        ("TransformerDecoderLayer", lambda: dec(), lambda: (R(4, 2, 8), R(5, 2, 8), causal(4))),
        ("TransformerDecoderLayer/batch_first_norm_first",
         lambda: dec(batch_first=True, norm_first=True), lambda: (R(2, 4, 8), R(2, 5, 8))),
        ("TransformerDecoder", lambda: nn.TransformerDecoder(dec(), 2, norm=nn.LayerNorm(8)),
         lambda: (R(4, 2, 8), R(5, 2, 8), causal(4))),
        ("Transformer", lambda: nn.Transformer(8, 2, 1, 1, dim_feedforward=16, dropout=0.1),
         lambda: (R(5, 2, 8), R(4, 2, 8), None, causal(4))),
    ]


def _normalization() -> List[Case]:
    b1, b1s = (lambda: (R(3, 4),)), (lambda: (R(3, 4, 5),))
    b2, b3 = (lambda: (R(2, 4, 3, 3),)), (lambda: (R(2, 4, 2, 3, 3),))
    i1, i2, i3 = (lambda: (R(2, 4, 5),)), (lambda: (R(2, 4, 3, 3),)), (lambda: (R(2, 4, 2, 3, 3),))
    c: List[Case] = [
        ("BatchNorm1d", lambda: nn.BatchNorm1d(4), b1),
        ("BatchNorm1d/3d_input", lambda: nn.BatchNorm1d(4), b1s),
        ("BatchNorm1d/no_running_stats", lambda: nn.BatchNorm1d(4, track_running_stats=False), b1),
        ("BatchNorm1d/no_affine", lambda: nn.BatchNorm1d(4, affine=False), b1s),
        ("BatchNorm1d/momentum_none", lambda: nn.BatchNorm1d(4, momentum=None), b1),
        ("BatchNorm2d", lambda: nn.BatchNorm2d(4), b2),
        ("BatchNorm2d/no_running_stats", lambda: nn.BatchNorm2d(4, track_running_stats=False), b2),
        ("BatchNorm2d/no_affine", lambda: nn.BatchNorm2d(4, affine=False), b2),
        ("BatchNorm2d/momentum_none", lambda: nn.BatchNorm2d(4, momentum=None), b2),
        ("BatchNorm2d/no_affine_no_stats",
         lambda: nn.BatchNorm2d(4, affine=False, track_running_stats=False), b2),
        ("BatchNorm3d", lambda: nn.BatchNorm3d(4), b3),
        ("BatchNorm3d/no_running_stats", lambda: nn.BatchNorm3d(4, track_running_stats=False), b3),
        ("BatchNorm3d/no_affine", lambda: nn.BatchNorm3d(4, affine=False), b3),
        ("BatchNorm3d/momentum_none", lambda: nn.BatchNorm3d(4, momentum=None), b3),
        ("InstanceNorm1d", lambda: nn.InstanceNorm1d(4), i1),
        ("InstanceNorm1d/running_stats_affine",
         lambda: nn.InstanceNorm1d(4, affine=True, track_running_stats=True), i1),
        ("InstanceNorm2d", lambda: nn.InstanceNorm2d(4), i2),
        ("InstanceNorm2d/running_stats", lambda: nn.InstanceNorm2d(4, track_running_stats=True), i2),
        ("InstanceNorm2d/running_stats_affine_momentum",
         lambda: nn.InstanceNorm2d(4, affine=True, track_running_stats=True, momentum=0.3), i2),
        ("InstanceNorm3d", lambda: nn.InstanceNorm3d(4, affine=True), i3),
        ("InstanceNorm3d/running_stats", lambda: nn.InstanceNorm3d(4, track_running_stats=True), i3),
        ("LazyBatchNorm1d", lambda: nn.LazyBatchNorm1d(), b1),
        ("LazyBatchNorm2d", lambda: nn.LazyBatchNorm2d(), b2),
        ("LazyBatchNorm3d", lambda: nn.LazyBatchNorm3d(), b3),
        ("LazyInstanceNorm1d", lambda: nn.LazyInstanceNorm1d(track_running_stats=True), i1),
        ("LazyInstanceNorm2d", lambda: nn.LazyInstanceNorm2d(affine=True), i2),
        ("LazyInstanceNorm3d", lambda: nn.LazyInstanceNorm3d(track_running_stats=True), i3),
        ("LayerNorm", lambda: nn.LayerNorm(4), lambda: (R(2, 3, 4),)),
        ("LayerNorm/2d_no_affine", lambda: nn.LayerNorm([3, 4], elementwise_affine=False),
         lambda: (R(2, 3, 4),)),
        ("GroupNorm", lambda: nn.GroupNorm(2, 4), b2),
        ("GroupNorm/no_affine_3d", lambda: nn.GroupNorm(4, 4, affine=False), i1),
        ("LocalResponseNorm", lambda: nn.LocalResponseNorm(2), b2),
        ("LocalResponseNorm/3d_input", lambda: nn.LocalResponseNorm(3), i1),
        ("CrossMapLRN2d", lambda: nn.CrossMapLRN2d(3), lambda: (R(2, 4, 5, 5),)),
    ]
    if has("RMSNorm"):  # torch >= 2.4
        c += [("RMSNorm", lambda: nn.RMSNorm(4), lambda: (R(2, 3, 4),)),
              ("RMSNorm/no_affine_eps", lambda: nn.RMSNorm([3, 4], eps=1e-5,
                                                           elementwise_affine=False),
               lambda: (R(2, 3, 4),))]
    return c


def _convolution() -> List[Case]:
    x1, x2, x3 = (lambda: (R(2, 3, 8),)), (lambda: (R(2, 3, 6, 6),)), (lambda: (R(1, 2, 4, 4, 4),))

    def channels_last_cnn() -> nn.Module:
        return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()) \
            .to(memory_format=torch.channels_last)

    return [
        ("Conv1d", lambda: nn.Conv1d(3, 4, 3), x1),
        ("Conv1d/same_dilated", lambda: nn.Conv1d(3, 4, 3, padding="same", dilation=2), x1),
        ("Conv1d/groups_stride_no_bias",
         lambda: nn.Conv1d(3, 6, 3, stride=2, groups=3, bias=False), x1),
        ("Conv1d/circular", lambda: nn.Conv1d(3, 4, 3, padding=1, padding_mode="circular"), x1),
        ("Conv2d", lambda: nn.Conv2d(3, 4, 3), x2),
        ("Conv2d/reflect_stride", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1,
                                                    padding_mode="reflect"), x2),
        ("Conv2d/replicate_groups", lambda: nn.Conv2d(3, 3, 3, padding=1, groups=3,
                                                      padding_mode="replicate"), x2),
        ("Conv2d/dilated_same", lambda: nn.Conv2d(3, 4, 3, padding="same", dilation=2), x2),
        ("Conv2d/unbatched", lambda: nn.Conv2d(3, 4, 3), lambda: (R(3, 6, 6),)),
        ("Conv3d", lambda: nn.Conv3d(2, 3, 2), x3),
        ("Conv3d/padded_stride", lambda: nn.Conv3d(2, 3, 3, stride=2, padding=1), x3),
        ("ConvTranspose1d", lambda: nn.ConvTranspose1d(3, 4, 3), x1),
        ("ConvTranspose1d/stride_output_padding",
         lambda: nn.ConvTranspose1d(3, 4, 3, stride=2, output_padding=1, groups=1), x1),
        ("ConvTranspose2d", lambda: nn.ConvTranspose2d(3, 4, 3), x2),
        ("ConvTranspose2d/stride_groups_dilation",
         lambda: nn.ConvTranspose2d(3, 6, 3, stride=2, padding=1, output_padding=1, groups=3,
                                    dilation=1, bias=False), x2),
        ("ConvTranspose3d", lambda: nn.ConvTranspose3d(2, 3, 2), x3),
        ("ConvTranspose3d/stride", lambda: nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1,
                                                              output_padding=1), x3),
        ("LazyConv1d", lambda: nn.LazyConv1d(4, 3), x1),
        ("LazyConv2d", lambda: nn.LazyConv2d(4, 3), x2),
        ("LazyConv3d", lambda: nn.LazyConv3d(3, 2), x3),
        ("LazyConvTranspose1d", lambda: nn.LazyConvTranspose1d(4, 3), x1),
        ("LazyConvTranspose2d", lambda: nn.LazyConvTranspose2d(4, 3), x2),
        ("LazyConvTranspose3d", lambda: nn.LazyConvTranspose3d(3, 2), x3),
        ("Sequential/channels_last_conv_bn_relu", channels_last_cnn,
         lambda: (R(2, 3, 6, 6).contiguous(memory_format=torch.channels_last),)),
    ]


def _pooling() -> List[Case]:
    x1, x2, x3 = (lambda: (R(2, 3, 8),)), (lambda: (R(2, 3, 6, 6),)), (lambda: (R(1, 2, 4, 4, 4),))
    c: List[Case] = [
        ("MaxPool1d", lambda: nn.MaxPool1d(2), x1),
        ("MaxPool1d/indices_ceil", lambda: nn.MaxPool1d(3, 2, return_indices=True, ceil_mode=True), x1),
        ("MaxPool2d", lambda: nn.MaxPool2d(2), x2),
        ("MaxPool2d/indices_padded_dilated",
         lambda: nn.MaxPool2d(3, 2, padding=1, dilation=1, return_indices=True), x2),
        ("MaxPool3d", lambda: nn.MaxPool3d(2), x3),
        ("MaxPool3d/indices", lambda: nn.MaxPool3d(3, 2, padding=1, return_indices=True), x3),
        ("MaxUnpool1d", lambda: nn.MaxUnpool1d(2), lambda: unpool_inputs(1, (2, 3, 8))),
        ("MaxUnpool2d", lambda: nn.MaxUnpool2d(2), lambda: unpool_inputs(2, (2, 3, 6, 6))),
        ("MaxUnpool3d", lambda: nn.MaxUnpool3d(2), lambda: unpool_inputs(3, (1, 2, 4, 4, 4))),
        ("AvgPool1d", lambda: nn.AvgPool1d(2), x1),
        ("AvgPool1d/padded_ceil", lambda: nn.AvgPool1d(3, 2, padding=1, ceil_mode=True,
                                                       count_include_pad=False), x1),
        ("AvgPool2d", lambda: nn.AvgPool2d(2), x2),
        ("AvgPool2d/divisor_override", lambda: nn.AvgPool2d(3, 2, padding=1, divisor_override=5), x2),
        ("AvgPool3d", lambda: nn.AvgPool3d(2), x3),
        ("AvgPool3d/padded_no_count_pad",
         lambda: nn.AvgPool3d(3, 2, padding=1, count_include_pad=False), x3),
        ("LPPool1d", lambda: nn.LPPool1d(2, 2), x1),
        ("LPPool2d", lambda: nn.LPPool2d(1.5, 2), x2),
        ("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(3), x1),
        ("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d((4, 1)), x2),
        ("AdaptiveAvgPool2d/global", lambda: nn.AdaptiveAvgPool2d(1), x2),
        ("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d(3), x3),
        ("AdaptiveMaxPool1d", lambda: nn.AdaptiveMaxPool1d(3, return_indices=True), x1),
        ("AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d((4, 3)), x2),
        ("AdaptiveMaxPool3d", lambda: nn.AdaptiveMaxPool3d(3, return_indices=True), x3),
        # random pooling regions: _random_samples are drawn inside the op
        ("FractionalMaxPool2d", lambda: nn.FractionalMaxPool2d(2, output_size=3),
         lambda: (R(2, 3, 7, 7),)),
        ("FractionalMaxPool2d/ratio_indices",
         lambda: nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True),
         lambda: (R(2, 3, 8, 8),)),
        ("FractionalMaxPool3d", lambda: nn.FractionalMaxPool3d(2, output_ratio=0.5),
         lambda: (R(1, 2, 6, 6, 6),)),
        ("FractionalMaxPool3d/size_indices",
         lambda: nn.FractionalMaxPool3d(2, output_size=3, return_indices=True),
         lambda: (R(1, 2, 6, 6, 6),)),
    ]
    if has("LPPool3d"):  # torch >= 2.2
        c.append(("LPPool3d", lambda: nn.LPPool3d(2, 2), x3))
    return c


def _padding() -> List[Case]:
    x1, x2, x3 = (lambda: (R(2, 3, 5),)), (lambda: (R(2, 3, 4, 4),)), (lambda: (R(1, 2, 3, 3, 3),))
    c: List[Case] = [
        ("ConstantPad1d", lambda: nn.ConstantPad1d((1, 2), 0.5), x1),
        ("ConstantPad2d", lambda: nn.ConstantPad2d((1, 0, 2, 1), -1.0), x2),
        ("ConstantPad3d", lambda: nn.ConstantPad3d(1, 2.0), x3),
        ("ZeroPad2d", lambda: nn.ZeroPad2d((1, 1, 2, 0)), x2),
        ("ReflectionPad1d", lambda: nn.ReflectionPad1d((2, 1)), x1),
        ("ReflectionPad2d", lambda: nn.ReflectionPad2d(2), x2),
        ("ReflectionPad3d", lambda: nn.ReflectionPad3d(1), x3),
        ("ReplicationPad1d", lambda: nn.ReplicationPad1d((2, 1)), x1),
        ("ReplicationPad2d", lambda: nn.ReplicationPad2d(2), x2),
        ("ReplicationPad3d", lambda: nn.ReplicationPad3d(1), x3),
    ]
    for dims, x in ((1, x1), (2, x2), (3, x3)):  # torch >= 2.1
        for kind in ("ZeroPad", "CircularPad"):
            name = f"{kind}{dims}d"
            if has(name) and name != "ZeroPad2d":
                c.append((name, (lambda n=name: getattr(nn, n)(1)), x))
    return c


def _dropout() -> List[Case]:
    return [
        ("Dropout", lambda: nn.Dropout(0.5), lambda: (R(4, 5),)),
        ("Dropout/inplace", lambda: nn.Dropout(0.3, inplace=True), lambda: (Rn(4, 5),)),
        ("Dropout1d", lambda: nn.Dropout1d(0.5), lambda: (R(2, 4, 5),)),
        ("Dropout2d", lambda: nn.Dropout2d(0.5), lambda: (R(2, 4, 3, 3),)),
        ("Dropout2d/inplace", lambda: nn.Dropout2d(0.5, inplace=True), lambda: (Rn(2, 4, 3, 3),)),
        ("Dropout3d", lambda: nn.Dropout3d(0.5), lambda: (R(2, 4, 2, 2, 2),)),
        ("AlphaDropout", lambda: nn.AlphaDropout(0.2), lambda: (R(4, 5),)),
        ("FeatureAlphaDropout", lambda: nn.FeatureAlphaDropout(0.2), lambda: (R(2, 4, 3, 3),)),
    ]


def _recurrent() -> List[Case]:
    x = lambda: (R(3, 2, 4),)                       # (L, N, H_in)
    return [
        ("RNN", lambda: nn.RNN(4, 5), x),
        ("RNN/relu_2layer_bidir_batch_first_h0",
         lambda: nn.RNN(4, 5, num_layers=2, nonlinearity="relu", bidirectional=True, batch_first=True),
         lambda: (R(2, 3, 4), T(4, 2, 5))),
        ("RNN/packed", lambda: nn.RNN(4, 5), lambda: packed(3, 2, 4)),
        ("LSTM", lambda: nn.LSTM(4, 5), x),
        ("LSTM/2layer_dropout_bidir_h0c0",
         lambda: nn.LSTM(4, 5, num_layers=2, dropout=0.3, bidirectional=True),
         lambda: (R(3, 2, 4), (T(4, 2, 5), T(4, 2, 5)))),
        ("LSTM/proj_batch_first", lambda: nn.LSTM(4, 5, proj_size=3, batch_first=True),
         lambda: (R(2, 3, 4),)),
        ("LSTM/packed_no_bias", lambda: nn.LSTM(4, 5, bias=False), lambda: packed(3, 2, 4)),
        ("LSTM/unbatched", lambda: nn.LSTM(4, 5), lambda: (R(3, 4),)),
        ("GRU", lambda: nn.GRU(4, 5), x),
        ("GRU/2layer_dropout_bidir_h0",
         lambda: nn.GRU(4, 5, num_layers=2, dropout=0.3, bidirectional=True),
         lambda: (R(3, 2, 4), T(4, 2, 5))),
        ("GRU/packed", lambda: nn.GRU(4, 5), lambda: packed(3, 2, 4)),
        ("RNNCell", lambda: nn.RNNCell(4, 5), lambda: (R(2, 4),)),
        ("RNNCell/relu_h0", lambda: nn.RNNCell(4, 5, nonlinearity="relu"), lambda: (R(2, 4), T(2, 5))),
        ("LSTMCell", lambda: nn.LSTMCell(4, 5), lambda: (R(2, 4),)),
        ("LSTMCell/h0c0_unbatched", lambda: nn.LSTMCell(4, 5), lambda: (R(4), (T(5), T(5)))),
        ("GRUCell", lambda: nn.GRUCell(4, 5), lambda: (R(2, 4),)),
        ("GRUCell/h0_no_bias", lambda: nn.GRUCell(4, 5, bias=False), lambda: (R(2, 4), T(2, 5))),
    ]


def _sparse() -> List[Case]:
    idx = lambda: (L(10, 2, 3),)
    # the weights of max_norm cases are renormalized in place by embedding_renorm_
    return [
        ("Embedding", lambda: nn.Embedding(10, 4), idx),
        ("Embedding/padding_idx", lambda: nn.Embedding(10, 4, padding_idx=0), idx),
        ("Embedding/max_norm", lambda: nn.Embedding(10, 4, max_norm=1.0), idx),
        ("Embedding/max_norm_l1_scale_grad",
         lambda: nn.Embedding(10, 4, max_norm=0.5, norm_type=1.0, scale_grad_by_freq=True), idx),
        ("Embedding/sparse", lambda: nn.Embedding(10, 4, sparse=True), idx),
        ("EmbeddingBag", lambda: nn.EmbeddingBag(10, 4), idx),
        ("EmbeddingBag/sum_offsets_weights", lambda: nn.EmbeddingBag(10, 4, mode="sum"),
         lambda: (L(10, 6), torch.tensor([0, 2, 2]), R(6))),
        ("EmbeddingBag/max", lambda: nn.EmbeddingBag(10, 4, mode="max"), idx),
        ("EmbeddingBag/max_norm", lambda: nn.EmbeddingBag(10, 4, max_norm=1.0), idx),
        ("EmbeddingBag/max_norm_sum_last_offset",
         lambda: nn.EmbeddingBag(10, 4, mode="sum", max_norm=0.5, include_last_offset=True),
         lambda: (L(10, 6), torch.tensor([0, 1, 4, 6]))),
        ("EmbeddingBag/padding_idx_sparse",
         lambda: nn.EmbeddingBag(10, 4, padding_idx=0, sparse=True), idx),
    ]


def _linear_and_shape() -> List[Case]:
    def spectral() -> nn.Module:  # power iteration writes weight_u / weight_v in train mode
        return nn.utils.spectral_norm(nn.Linear(4, 3))

    def weight_normed() -> nn.Module:
        return nn.utils.weight_norm(nn.Linear(4, 3))

    c: List[Case] = [
        ("Identity", lambda: nn.Identity(7, unused=True), lambda: (R(2, 3),)),
        ("Linear", lambda: nn.Linear(4, 3), lambda: (R(2, 4),)),
        ("Linear/no_bias_3d", lambda: nn.Linear(4, 3, bias=False), lambda: (R(2, 5, 4),)),
        ("Linear/spectral_norm", spectral, lambda: (R(2, 4),)),
        ("Linear/weight_norm", weight_normed, lambda: (R(2, 4),)),
        ("LazyLinear", lambda: nn.LazyLinear(3), lambda: (R(2, 4),)),
        ("Bilinear", lambda: nn.Bilinear(3, 4, 5), lambda: (R(2, 3), R(2, 4))),
        ("Flatten", lambda: nn.Flatten(), lambda: (R(2, 3, 4),)),
        ("Unflatten", lambda: nn.Unflatten(1, (2, 3)), lambda: (R(2, 6, 4),)),
        ("Fold", lambda: nn.Fold(output_size=(4, 5), kernel_size=2), lambda: (R(2, 12, 12),)),
        ("Fold/stride_padding", lambda: nn.Fold((4, 4), 2, padding=1, stride=2),
         lambda: (R(2, 12, 9),)),
        ("Unfold", lambda: nn.Unfold(kernel_size=2), lambda: (R(2, 3, 4, 5),)),
        ("Unfold/dilation_stride", lambda: nn.Unfold(2, dilation=2, padding=1, stride=2),
         lambda: (R(2, 3, 5, 5),)),
        ("PixelShuffle", lambda: nn.PixelShuffle(2), lambda: (R(1, 8, 3, 3),)),
        ("PixelUnshuffle", lambda: nn.PixelUnshuffle(2), lambda: (R(1, 2, 4, 4),)),
        # no grad: torch 1.13 has no derivative for channel_shuffle
        ("ChannelShuffle", lambda: nn.ChannelShuffle(2), lambda: (T(1, 4, 2, 2),)),
        ("Upsample/nearest", lambda: nn.Upsample(scale_factor=2), lambda: (R(1, 2, 3, 3),)),
        ("Upsample/nearest_exact", lambda: nn.Upsample(size=(5, 4), mode="nearest-exact"),
         lambda: (R(1, 2, 3, 3),)),
        ("Upsample/linear", lambda: nn.Upsample(scale_factor=2, mode="linear"), lambda: (R(1, 2, 4),)),
        ("Upsample/bilinear_align", lambda: nn.Upsample(scale_factor=1.5, mode="bilinear",
                                                        align_corners=True), lambda: (R(1, 2, 4, 4),)),
        ("Upsample/bicubic", lambda: nn.Upsample(size=(5, 6), mode="bicubic"),
         lambda: (R(1, 2, 3, 3),)),
        ("Upsample/trilinear", lambda: nn.Upsample(scale_factor=2, mode="trilinear"),
         lambda: (R(1, 2, 2, 2, 2),)),
        ("Upsample/nearest_3d", lambda: nn.Upsample(scale_factor=2), lambda: (R(1, 2, 2, 2, 2),)),
        ("UpsamplingNearest2d", lambda: nn.UpsamplingNearest2d(scale_factor=2),
         lambda: (R(1, 2, 3, 3),)),
        ("UpsamplingBilinear2d", lambda: nn.UpsamplingBilinear2d(scale_factor=2),
         lambda: (R(1, 2, 3, 3),)),
        ("CosineSimilarity", lambda: nn.CosineSimilarity(dim=1), lambda: (R(3, 4), R(3, 4))),
        ("PairwiseDistance", lambda: nn.PairwiseDistance(p=3.0, keepdim=True),
         lambda: (R(3, 4), R(3, 4))),
        # without CUDA, DataParallel just calls the wrapped module
        ("DataParallel", lambda: nn.DataParallel(nn.Linear(4, 3)), lambda: (R(2, 4),)),
    ]
    return c


def _losses() -> List[Case]:
    pair = lambda: (R(3, 4), T(3, 4))

    def ctc_padded() -> tuple:   # targets (N, S), never the blank 0
        return (logp(10, 2, 5, dim=2), torch.randint(1, 5, (2, 4)),
                torch.tensor([10, 8]), torch.tensor([4, 3]))

    def ctc_concat() -> tuple:   # targets concatenated in 1-D
        return (logp(10, 2, 5, dim=2), torch.randint(1, 5, (7,)),
                torch.tensor([10, 9]), torch.tensor([4, 3]))

    def multilabel() -> tuple:   # class indices, ended by -1
        return R(3, 4), torch.tensor([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0]])

    c: List[Case] = [
        ("L1Loss", lambda: nn.L1Loss(), pair),
        ("L1Loss/none", lambda: nn.L1Loss(reduction="none"), pair),
        ("MSELoss", lambda: nn.MSELoss(), pair),
        ("MSELoss/sum", lambda: nn.MSELoss(reduction="sum"), pair),
        ("SmoothL1Loss", lambda: nn.SmoothL1Loss(beta=0.5), pair),
        ("HuberLoss", lambda: nn.HuberLoss(delta=0.5, reduction="sum"), pair),
        ("BCELoss", lambda: nn.BCELoss(), lambda: (R(3, 4).sigmoid(), U(3, 4))),
        ("BCELoss/weight_none", lambda: nn.BCELoss(weight=torch.rand(4), reduction="none"),
         lambda: (R(3, 4).sigmoid(), U(3, 4))),
        ("BCEWithLogitsLoss", lambda: nn.BCEWithLogitsLoss(), lambda: (R(3, 4), U(3, 4))),
        ("BCEWithLogitsLoss/pos_weight_weight",
         lambda: nn.BCEWithLogitsLoss(weight=torch.rand(4), pos_weight=torch.rand(4) + 0.5),
         lambda: (R(3, 4), U(3, 4))),
        ("CrossEntropyLoss", lambda: nn.CrossEntropyLoss(), lambda: (R(3, 5), L(5, 3))),
        ("CrossEntropyLoss/weight_ignore_smoothing",
         lambda: nn.CrossEntropyLoss(weight=torch.rand(5), ignore_index=1, label_smoothing=0.1),
         lambda: (R(3, 5), L(5, 3))),
        ("CrossEntropyLoss/probabilities", lambda: nn.CrossEntropyLoss(label_smoothing=0.2),
         lambda: (R(3, 5), F.softmax(T(3, 5), dim=1))),
        ("CrossEntropyLoss/spatial", lambda: nn.CrossEntropyLoss(reduction="none"),
         lambda: (R(2, 5, 3, 3), L(5, 2, 3, 3))),
        ("NLLLoss", lambda: nn.NLLLoss(), lambda: (logp(3, 5), L(5, 3))),
        ("NLLLoss/weight_ignore_sum", lambda: nn.NLLLoss(weight=torch.rand(5), ignore_index=2,
                                                         reduction="sum"),
         lambda: (logp(3, 5), L(5, 3))),
        ("NLLLoss/spatial", lambda: nn.NLLLoss(weight=torch.rand(5)),
         lambda: (logp(2, 5, 3, 3), L(5, 2, 3, 3))),
        ("NLLLoss2d", lambda: nn.NLLLoss2d(), lambda: (logp(2, 5, 3, 3), L(5, 2, 3, 3))),
        ("KLDivLoss", lambda: nn.KLDivLoss(reduction="batchmean"),
         lambda: (logp(3, 5), F.softmax(T(3, 5), dim=1))),
        ("KLDivLoss/log_target", lambda: nn.KLDivLoss(reduction="sum", log_target=True),
         lambda: (logp(3, 5), F.log_softmax(T(3, 5), dim=1))),
        ("PoissonNLLLoss", lambda: nn.PoissonNLLLoss(), lambda: (R(3, 4), L(5, 3, 4).float())),
        ("PoissonNLLLoss/rate_full", lambda: nn.PoissonNLLLoss(log_input=False, full=True),
         lambda: (R(3, 4).exp(), L(5, 3, 4).float())),
        ("GaussianNLLLoss", lambda: nn.GaussianNLLLoss(),
         lambda: (R(3, 4), T(3, 4), (torch.rand(3, 4) + 0.1).requires_grad_())),
        ("GaussianNLLLoss/full_shared_var", lambda: nn.GaussianNLLLoss(full=True, reduction="sum"),
         lambda: (R(3, 4), T(3, 4), (torch.rand(3, 1) + 0.1).requires_grad_())),
        ("CTCLoss", lambda: nn.CTCLoss(), ctc_padded),
        ("CTCLoss/concat_zero_infinity", lambda: nn.CTCLoss(reduction="sum", zero_infinity=True),
         ctc_concat),
        ("HingeEmbeddingLoss", lambda: nn.HingeEmbeddingLoss(margin=0.5), lambda: (R(3, 4), S(3, 4))),
        ("MultiLabelMarginLoss", lambda: nn.MultiLabelMarginLoss(), multilabel),
        ("MultiLabelSoftMarginLoss", lambda: nn.MultiLabelSoftMarginLoss(weight=torch.rand(4)),
         lambda: (R(3, 4), L(2, 3, 4).float())),
        ("MultiMarginLoss", lambda: nn.MultiMarginLoss(), lambda: (R(3, 4), L(4, 3))),
        ("MultiMarginLoss/p2_weight", lambda: nn.MultiMarginLoss(p=2, margin=0.5, weight=torch.rand(4)),
         lambda: (R(3, 4), L(4, 3))),
        ("SoftMarginLoss", lambda: nn.SoftMarginLoss(), lambda: (R(3, 4), S(3, 4))),
        ("CosineEmbeddingLoss", lambda: nn.CosineEmbeddingLoss(margin=0.2),
         lambda: (R(3, 4), R(3, 4), S(3))),
        ("MarginRankingLoss", lambda: nn.MarginRankingLoss(margin=0.1), lambda: (R(3), R(3), S(3))),
        ("TripletMarginLoss", lambda: nn.TripletMarginLoss(), lambda: (R(3, 4), R(3, 4), R(3, 4))),
        ("TripletMarginLoss/swap_p1", lambda: nn.TripletMarginLoss(margin=0.5, p=1, swap=True),
         lambda: (R(3, 4), R(3, 4), R(3, 4))),
        ("TripletMarginWithDistanceLoss", lambda: nn.TripletMarginWithDistanceLoss(),
         lambda: (R(3, 4), R(3, 4), R(3, 4))),
        ("TripletMarginWithDistanceLoss/cosine_swap",
         lambda: nn.TripletMarginWithDistanceLoss(
             distance_function=lambda a, b: 1 - F.cosine_similarity(a, b), swap=True),
         lambda: (R(3, 4), R(3, 4), R(3, 4))),
        ("AdaptiveLogSoftmaxWithLoss",
         lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 8], div_value=2.0),
         lambda: (R(6, 8), L(10, 6))),
        ("AdaptiveLogSoftmaxWithLoss/head_bias",
         lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[3], head_bias=True),
         lambda: (R(6, 8), L(10, 6))),
    ]
    if has("LinearCrossEntropyLoss"):  # newer torch 2.x: linear layer fused into the loss
        c += [("LinearCrossEntropyLoss", lambda: nn.LinearCrossEntropyLoss(8, 5),
               lambda: (R(3, 8), L(5, 3))),
              ("LinearCrossEntropyLoss/bias_weight_ignore_smoothing",
               lambda: nn.LinearCrossEntropyLoss(8, 5, bias=True, weight=torch.rand(5), ignore_index=1,
                                                 label_smoothing=0.1),
               lambda: (R(3, 8), L(5, 3)))]
    return c


def layer_cases() -> List[Case]:
    """(name, make_module, make_inputs) for every torch.nn layer class; several configs for some.

    `name` is "Class" or "Class/config". make_inputs returns the positional arguments of
    forward(); it is called after the case's seed is set, once per step."""
    return (_activations() + _attention() + _normalization() + _convolution() + _pooling()
            + _padding() + _dropout() + _recurrent() + _sparse() + _linear_and_shape() + _losses())


def excluded() -> Dict[str, str]:
    """torch.nn module classes deliberately not run by layer_cases(), with the reason."""
    container = "container: holds modules/parameters, runs no op of its own"
    return {
        "Module": "base class of every layer",
        "Container": "deprecated container, " + container,
        "Sequential": container + " (used by the channels_last conv+BN case)",
        "ModuleList": container,
        "ModuleDict": container,
        "ParameterList": container,
        "ParameterDict": container,
        "SyncBatchNorm": "needs an initialized torch.distributed process group (and CUDA)",
        "RNNBase": "abstract base of RNN/LSTM/GRU: no forward() of its own",
        "RNNCellBase": "abstract base of RNNCell/LSTMCell/GRUCell: no forward()",
    }


@contextlib.contextmanager
def _expected_warnings_silenced():
    """Silence the warnings this zoo provokes on purpose (lazy, deprecated, prototype classes)."""
    with warnings.catch_warnings():
        for message in ("Lazy modules are a new feature", "`?NLLLoss2d`? has been deprecated",
                        "The PyTorch API of nested tensors is in prototype stage",
                        "enable_nested_tensor is True",  # 2.x, seq-first encoders on purpose
                        "`?torch.nn.utils.weight_norm`? is deprecated",  # 2.x
                        "LSTM with projections is not supported with oneDNN"):  # 2.x
            warnings.filterwarnings("ignore", message=message)
        yield


def _nn_classes() -> List[str]:
    """Public torch.nn classes that are torch.nn.Module subclasses."""
    return sorted(n for n in dir(nn) if not n.startswith("_")
                  and inspect.isclass(getattr(nn, n)) and issubclass(getattr(nn, n), nn.Module))


def coverage_problems() -> List[str]:
    """torch.nn module classes neither run by layer_cases() nor in excluded() (empty = full).

    A class counts as covered when some case's make_module() returns an instance of exactly it."""
    torch.manual_seed(0)
    with _expected_warnings_silenced():
        covered = {type(make()).__name__ for _, make, _ in layer_cases()}
    skip = excluded()
    return [n for n in _nn_classes() if n not in covered and n not in skip]


# --- running -----------------------------------------------------------------------------------

def _tensors(obj: Any) -> List[Tensor]:
    """Every tensor in a (nested) forward output: tuples, namedtuples, PackedSequence, dicts."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


def _backward(out: Any) -> None:
    """One backward through the sum of every float output that requires grad."""
    grads = [t.sum() for t in _tensors(out) if t.is_floating_point() and t.requires_grad]
    if grads:
        torch.stack(grads).sum().backward()


def run_case(name: str, make_module: Callable[[], nn.Module], make_inputs: Callable[[], tuple],
             steps: int = 2) -> None:
    """Train mode: `steps` forward+backward; eval mode: `steps` forwards, then one under no_grad."""
    for training in (True, False):
        try:
            torch.manual_seed(0)
            module = make_module().train(training)
            for _ in range(steps):
                out = module(*make_inputs())
                if training:
                    _backward(out)
            if not training:
                with torch.no_grad():
                    module(*make_inputs())
        except Exception as e:
            mode = "train" if training else "eval"
            raise RuntimeError(f"layer_zoo case {name!r} failed in {mode} mode: {e}") from e


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def run_optimizers(steps: int = 2) -> None:
    """Every optimizer (foreach off and on where accepted), clip_grad_norm_, LBFGS, SparseAdam."""
    optim = torch.optim
    dense: List[Tuple[Any, Dict[str, Any]]] = [
        (optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)),
        (optim.SGD, dict(lr=0.1)),
        (optim.Adam, dict(lr=1e-2, weight_decay=1e-4)),
        (optim.Adam, dict(lr=1e-2, amsgrad=True)),
        (optim.AdamW, dict(lr=1e-2, amsgrad=True)),
        (optim.RMSprop, dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=1e-4)),
        (optim.Adagrad, dict(lr=1e-2, lr_decay=1e-3, weight_decay=1e-4)),
        (optim.Adadelta, dict(weight_decay=1e-4)),
        (optim.Adamax, dict(lr=1e-2, weight_decay=1e-4)),
        (optim.NAdam, dict(lr=1e-2, weight_decay=1e-4)),
        (optim.RAdam, dict(lr=1e-2, weight_decay=1e-4)),
        (optim.ASGD, dict(lr=1e-2, t0=1, weight_decay=1e-4)),
        (optim.Rprop, dict(lr=1e-2)),
        (getattr(optim, "Adafactor", None), dict(lr=1e-2, weight_decay=1e-4)),  # torch >= 2.5
        (getattr(optim, "Muon", None), dict(lr=1e-2)),  # newer 2.x; 2-D parameters only
    ]
    torch.manual_seed(0)
    x, y = torch.randn(5, 4), torch.randn(5, 2)
    for cls, kw in dense:
        if cls is None:
            continue
        accepts = "foreach" in inspect.signature(cls).parameters
        for foreach in ((False, True) if accepts else (None,)):
            torch.manual_seed(0)
            model = _mlp()
            params = [p for p in model.parameters() if cls.__name__ != "Muon" or p.dim() == 2]
            opt = cls(params, **kw, **({} if foreach is None else {"foreach": foreach}))
            for _ in range(steps + 1):  # state is created at step 1 and updated from step 2 on
                opt.zero_grad()
                F.mse_loss(model(x), y).backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()

    torch.manual_seed(0)
    model = _mlp()
    lbfgs = optim.LBFGS(model.parameters(), lr=0.5, max_iter=3, history_size=3,
                        line_search_fn="strong_wolfe")

    def closure() -> Tensor:
        lbfgs.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    for _ in range(steps):
        lbfgs.step(closure)

    torch.manual_seed(0)
    emb = nn.Embedding(10, 4, sparse=True)
    sparse_adam = optim.SparseAdam(list(emb.parameters()), lr=1e-2)
    for _ in range(steps + 1):
        sparse_adam.zero_grad()
        emb(torch.randint(0, 10, (3, 2))).pow(2).sum().backward()
        sparse_adam.step()

    torch.manual_seed(0)
    model = _mlp()
    F.mse_loss(model(x), y).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type=1.0)
    nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type=float("inf"))
    nn.utils.clip_grad_value_(model.parameters(), 0.01)


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 2 * 2, 3))


def run_functional(steps: int = 2) -> None:
    """Functional calls with the buffers passed explicitly, and a CNN with BatchNorm evaluated
    under no_grad()/inference_mode() (and trained under them: BN still updates running stats)."""
    torch.manual_seed(0)
    x = torch.randn(3, 4, 2, requires_grad=True)
    mean, var = torch.zeros(4), torch.ones(4)
    for _ in range(steps):
        F.batch_norm(x, mean, var, torch.ones(4), torch.zeros(4), training=True,
                     momentum=0.1).sum().backward()
        F.instance_norm(x, mean, var, use_input_stats=True, momentum=0.1).sum().backward()
        F.rrelu(x * 1.0, training=True).sum().backward()
        F.rrelu_(x.detach().clone(), training=True)
        F.dropout(x, 0.5, training=True).sum().backward()
        F.alpha_dropout(x, 0.5, training=True).sum().backward()
        F.feature_alpha_dropout(x, 0.5, training=True).sum().backward()
        weight = torch.randn(10, 4, requires_grad=True)
        F.embedding(torch.randint(0, 10, (5,)), weight, max_norm=1.0).sum().backward()
        F.embedding_bag(torch.randint(0, 10, (2, 3)), weight, max_norm=1.0, mode="max").sum().backward()
        with torch.no_grad():
            torch.embedding_renorm_(weight.detach(), torch.tensor([1, 2]), 0.5, 2.0)

    torch.manual_seed(0)
    cnn = _cnn()
    img = torch.randn(2, 3, 4, 4)
    for _ in range(steps):
        cnn(img).sum().backward()
    cnn.eval()
    with torch.no_grad():
        for _ in range(steps):
            cnn(img)
    with torch.inference_mode():
        for _ in range(steps):
            cnn(img)
    cnn.train()
    with torch.no_grad():
        cnn(img)
    with torch.inference_mode():
        cnn(img)


def run_all(steps: int = 2) -> None:
    """Every layer case in train and eval mode, then the optimizers and the functional paths.

    Runs on one intra-op thread: the tensors are tiny, and on a busy 2-core machine OpenMP
    worker threads spinning against each other make torch 2.x ten times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with _expected_warnings_silenced():
            for name, make_module, make_inputs in layer_cases():
                run_case(name, make_module, make_inputs, steps)
            run_optimizers(steps)
            run_functional(steps)
    finally:
        torch.set_num_threads(threads)


if __name__ == "__main__":
    started = time.perf_counter()
    run_all()
    problems = coverage_problems()
    print(f"layer_zoo: {len(layer_cases())} cases, torch {torch.__version__}, "
          f"{time.perf_counter() - started:.1f}s")
    if problems:
        print("torch.nn classes neither run nor excluded: " + ", ".join(problems))
    sys.exit(1 if problems else 0)

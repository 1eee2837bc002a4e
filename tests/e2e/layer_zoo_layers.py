"""The layer zoo's cases (layer_zoo.py): activations, attention, normalization, convolution,
pooling, padding, dropout, recurrent and sparse layers."""

from __future__ import annotations

from typing import List

from layer_zoo_inputs import (  # noqa: F401
    Case, F, L, R, Rn, S, T, U, causal, causal_bool, has, logp, nn, packed, torch, unpool_inputs)


def activations() -> List[Case]:
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


def attention() -> List[Case]:
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


def normalization() -> List[Case]:
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


def convolution() -> List[Case]:
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


def pooling() -> List[Case]:
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


def padding() -> List[Case]:
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


def dropout() -> List[Case]:
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


def recurrent() -> List[Case]:
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


def sparse() -> List[Case]:
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

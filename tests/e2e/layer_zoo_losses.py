"""The layer zoo's cases (layer_zoo.py): linear and shape layers, and every loss."""

from __future__ import annotations

from typing import List

from layer_zoo_inputs import (  # noqa: F401
    Case, F, L, R, Rn, S, T, U, causal, causal_bool, has, logp, nn, packed, torch, unpool_inputs)


def linear_and_shape() -> List[Case]:
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


def losses() -> List[Case]:
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

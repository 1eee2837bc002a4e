// The layer pieces of the synthetic GPT step: linear, layer norm, residual add, batched
// matmul with its per-matrix views, and the AdamW update of one parameter.
#include "tools/synthetic_gpt_builder.h"

namespace upguard::synthetic::gpt_internal {

int GptBuilder::LinearForward(Linear& l, int x) {
  b_.At(l.module, l.site, Phase::kForward);
  const int weight_t = b_.Slot(), rows = b_.Slot(), mm = b_.Slot(), out = b_.Slot();
  const std::string rows_text = "[" + std::to_string(kRows) + ", ";
  b_.Op("aten::t", 1)
      .Alias("self", kF32, {l.out, l.in})
      .OutView(weight_t, l.weight.slot, kF32, {l.in, l.out});
  b_.Op("aten::view", 1)
      .Alias("self", kF32, Act(l.in))
      .Scalar("size", rows_text + std::to_string(l.in) + "]")
      .OutView(rows, x, kF32, {kRows, l.in});
  b_.Op("aten::addmm", 1)
      .In("self", l.bias.slot, kF32, {l.out})
      .In("mat1", rows, kF32, {kRows, l.in})
      .In("mat2", weight_t, kF32, {l.in, l.out})
      .Scalar("beta", "1")
      .Scalar("alpha", "1")
      .Out(mm, kF32, {kRows, l.out});
  b_.Op("aten::view", 1)
      .Alias("self", kF32, {kRows, l.out})
      .Scalar("size", "[8, 64, " + std::to_string(l.out) + "]")
      .OutView(out, mm, kF32, Act(l.out));
  b_.Op("aten::linear")
      .In("input", x, kF32, Act(l.in))
      .In("weight", l.weight.slot, kF32, {l.out, l.in})
      .In("bias", l.bias.slot, kF32, {l.out})
      .OutCopy(out, out, kF32, Act(l.out));
  l.input = x;
  l.input_rows = rows;
  l.output = out;
  return out;
}

int GptBuilder::LinearBackward(const Linear& l, int grad) {
  b_.At(l.module, l.site, Phase::kBackward, "AddmmBackward0");
  const int weight_t = b_.Slot(), conj = b_.Slot(), grad_in = b_.Slot(), rows_t = b_.Slot();
  const int grad_w_t = b_.Slot(), grad_b = b_.Slot();
  b_.Op("aten::t")
      .Alias("self", kF32, {l.in, l.out})
      .OutView(weight_t, l.weight.slot, kF32, {l.out, l.in});
  b_.Op("aten::resolve_conj")
      .Alias("self", kF32, {l.out, l.in})
      .OutView(conj, weight_t, kF32, {l.out, l.in});
  b_.Op("aten::mm")
      .In("self", grad, kF32, {kRows, l.out})
      .In("mat2", conj, kF32, {l.out, l.in})
      .Out(grad_in, kF32, {kRows, l.in});
  b_.Op("aten::t")
      .Alias("self", kF32, {kRows, l.in})
      .OutView(rows_t, l.input_rows, kF32, {l.in, kRows});
  b_.Op("aten::mm")
      .In("self", rows_t, kF32, {l.in, kRows})
      .In("mat2", grad, kF32, {kRows, l.out})
      .Out(grad_w_t, kF32, {l.in, l.out});
  b_.Op("aten::t")
      .Alias("self", kF32, {l.in, l.out})
      .OutView(l.weight.grad, grad_w_t, kF32, {l.out, l.in});
  b_.Op("aten::sum")
      .In("self", grad, kF32, {kRows, l.out})
      .Scalar("dim", "[0]")
      .Scalar("keepdim", "True")
      .None("dtype")
      .Out(grad_b, kF32, {1, l.out});
  b_.Op("aten::view")
      .Alias("self", kF32, {1, l.out})
      .Scalar("size", "[" + std::to_string(l.out) + "]")
      .OutView(l.bias.grad, grad_b, kF32, {l.out});
  return grad_in;
}

int GptBuilder::LayerNormForward(LayerNorm& ln, int x) {
  b_.At(ln.module, ln.site, Phase::kForward);
  const int out = b_.Slot();
  ln.input = x;
  ln.mean = b_.Slot();
  ln.rstd = b_.Slot();
  b_.Op("aten::native_layer_norm", 1)
      .In("input", x, kF32, Act(kWidth))
      .Scalar("normalized_shape", "[256]")
      .In("weight", ln.weight.slot, kF32, {kWidth})
      .In("bias", ln.bias.slot, kF32, {kWidth})
      .Scalar("eps", "1e-05")
      .Out(out, kF32, Act(kWidth))
      .Out(ln.mean, kF32, {kBatch, kTokens, 1})
      .Out(ln.rstd, kF32, {kBatch, kTokens, 1});
  b_.Op("aten::layer_norm")
      .In("input", x, kF32, Act(kWidth))
      .Scalar("normalized_shape", "[256]")
      .In("weight", ln.weight.slot, kF32, {kWidth})
      .In("bias", ln.bias.slot, kF32, {kWidth})
      .Scalar("eps", "1e-05")
      .Scalar("cudnn_enable", "True")
      .OutCopy(out, out, kF32, Act(kWidth));
  return out;
}

int GptBuilder::LayerNormBackward(const LayerNorm& ln, int grad) {
  b_.At(ln.module, ln.site, Phase::kBackward, "NativeLayerNormBackward0");
  const int grad_in = b_.Slot();
  b_.Op("aten::native_layer_norm_backward")
      .In("grad_out", grad, kF32, Act(kWidth))
      .In("input", ln.input, kF32, Act(kWidth))
      .Scalar("normalized_shape", "[256]")
      .In("mean", ln.mean, kF32, {kBatch, kTokens, 1})
      .In("rstd", ln.rstd, kF32, {kBatch, kTokens, 1})
      .In("weight", ln.weight.slot, kF32, {kWidth})
      .In("bias", ln.bias.slot, kF32, {kWidth})
      .Scalar("output_mask", "[True, True, True]")
      .Out(grad_in, kF32, Act(kWidth))
      .Out(ln.weight.grad, kF32, {kWidth})
      .Out(ln.bias.grad, kF32, {kWidth});
  return grad_in;
}

// The per-matrix views a CPU bmm records inside itself (nested one level below `depth`).
void GptBuilder::BatchViews(uint32_t depth, int source) {
  const Shape batch = {kBatch * kHeads, kTokens, kHeadWidth};
  for (int entry = 0; entry < 8; ++entry) {
    const int strided = b_.Slot(), selected = b_.Slot();
    b_.Op("aten::as_strided", depth + 2)
        .Alias("self", kF32, batch)
        .Scalar("size", "[64, 64]")
        .Scalar("stride", "[64, 1]")
        .Scalar("storage_offset", std::to_string(entry * kTokens * kHeadWidth))
        .OutView(strided, source, kF32, {kTokens, kHeadWidth});
    b_.Op("aten::select", depth + 1)
        .Alias("self", kF32, batch)
        .Scalar("dim", "0")
        .Scalar("index", std::to_string(entry))
        .OutView(selected, strided, kF32, {kTokens, kHeadWidth});
    b_.Op("aten::resolve_conj", depth + 1)
        .Alias("self", kF32, {kTokens, kHeadWidth})
        .OutView(b_.Slot(), selected, kF32, {kTokens, kHeadWidth});
  }
}

// A residual (or gradient) sum of two activations.
int GptBuilder::Add(int self, int other) {
  const int out = b_.Slot();
  b_.Op("aten::add")
      .In("self", self, kF32, Act(kWidth))
      .In("other", other, kF32, Act(kWidth))
      .Scalar("alpha", "1")
      .Out(out, kF32, Act(kWidth));
  return out;
}

// torch.matmul of [B, H, m, k] by [B, H, k, n]: a bmm over the flattened batch (with its
// per-matrix views) and the view back, nested in the matmul.
int GptBuilder::Matmul(int left, int right, int64_t m, int64_t k, int64_t n) {
  const int64_t batch = kBatch * kHeads;
  const Shape out_shape = {kBatch, kHeads, m, n};
  const int mm = b_.Slot(), out = b_.Slot();
  BatchViews(1, left);
  b_.Op("aten::bmm", 1)
      .In("self", left, kF32, {batch, m, k})
      .In("mat2", right, kF32, {batch, k, n})
      .Out(mm, kF32, {batch, m, n});
  b_.Op("aten::_unsafe_view", 1)
      .Alias("self", kF32, {batch, m, n})
      .Scalar("size", "[8, 4, " + std::to_string(m) + ", " + std::to_string(n) + "]")
      .OutView(out, mm, kF32, out_shape);
  b_.Op("aten::matmul")
      .In("self", left, kF32, {kBatch, kHeads, m, k})
      .In("other", right, kF32, {kBatch, kHeads, k, n})
      .OutCopy(out, out, kF32, out_shape);
  return out;
}

// AdamW (torch.optim, foreach=False): eight ops per parameter.
void GptBuilder::Adam(const Param& p) {
  const int m = b_.Slot(), v = b_.Slot(), denom = b_.Slot();
  b_.Op("aten::mul_")
      .In("self", p.slot, kF32, p.shape)
      .Scalar("other", "0.9999")
      .Out(p.slot, kF32, p.shape);
  b_.Op("aten::lerp_")
      .In("self", m, kF32, p.shape)
      .In("end", p.grad, kF32, p.shape)
      .Scalar("weight", "0.1")
      .Out(m, kF32, p.shape);
  b_.Op("aten::mul_").In("self", v, kF32, p.shape).Scalar("other", "0.999").Out(v, kF32, p.shape);
  b_.Op("aten::addcmul_")
      .In("self", v, kF32, p.shape)
      .In("tensor1", p.grad, kF32, p.shape)
      .In("tensor2", p.grad, kF32, p.shape)
      .Scalar("value", "0.001")
      .Out(v, kF32, p.shape);
  b_.Op("aten::sqrt").In("self", v, kF32, p.shape).Out(denom, kF32, p.shape);
  b_.Op("aten::div_")
      .In("self", denom, kF32, p.shape)
      .Scalar("other", "0.0316")
      .Out(denom, kF32, p.shape);
  b_.Op("aten::add_")
      .In("self", denom, kF32, p.shape)
      .Scalar("other", "1e-08")
      .Scalar("alpha", "1")
      .Out(denom, kF32, p.shape);
  b_.Op("aten::addcdiv_")
      .In("self", p.slot, kF32, p.shape)
      .In("tensor1", m, kF32, p.shape)
      .In("tensor2", denom, kF32, p.shape)
      .Scalar("value", "-0.0003")
      .Out(p.slot, kF32, p.shape);
}

}  // namespace upguard::synthetic::gpt_internal

// The GPT-like step template of the synthetic traces (synthetic_program.h). The op names,
// nesting and argument lists follow what the PyTorch adapter records for examples/gpt.py; the
// sizes (batch 8, 64 tokens, width 256, vocabulary 512) only set the shapes written.
#include "tools/synthetic_gpt_builder.h"

namespace upguard::synthetic {
namespace gpt_internal {

int GptBuilder::BlockForward(Block& block, int x, const std::string& prefix) {
  const Shape heads = {kBatch, kHeads, kTokens, kHeadWidth};
  const Shape scores = {kBatch, kHeads, kTokens, kTokens};
  const int h = LayerNormForward(block.ln1, x);
  const int qkv = LinearForward(block.qkv, h);
  b_.At(prefix + "attn", "examples/gpt.py:41", Phase::kForward);
  int split[3];
  for (int& slot : split) slot = b_.Slot();
  b_.Op("aten::split")
      .In("self", qkv, kF32, Act(3 * kWidth))
      .Scalar("split_size", "256")
      .Scalar("dim", "2")
      .OutView(split[0], qkv, kF32, Act(kWidth))
      .OutView(split[1], qkv, kF32, Act(kWidth))
      .OutView(split[2], qkv, kF32, Act(kWidth));
  int per_head[3];
  for (int part = 0; part < 3; ++part) {
    const int viewed = b_.Slot();
    per_head[part] = b_.Slot();
    b_.Op("aten::view")
        .Alias("self", kF32, Act(kWidth))
        .Scalar("size", "[8, 64, 4, 64]")
        .OutView(viewed, split[part], kF32, {kBatch, kTokens, kHeads, kHeadWidth});
    b_.Op("aten::transpose")
        .Alias("self", kF32, {kBatch, kTokens, kHeads, kHeadWidth})
        .Scalar("dim0", "1")
        .Scalar("dim1", "2")
        .OutView(per_head[part], viewed, kF32, heads);
  }
  // Per-head views, as the attention's head loop records them (select nested in unbind).
  for (int part = 0; part < 3; ++part) {
    for (int head = 0; head < kHeads; ++head) {
      const int strided = b_.Slot(), selected = b_.Slot();
      b_.Op("aten::as_strided", 2)
          .Alias("self", kF32, heads)
          .Scalar("size", "[8, 64, 64]")
          .Scalar("stride", "[16384, 64, 1]")
          .Scalar("storage_offset", std::to_string(head * kTokens * kHeadWidth))
          .OutView(strided, per_head[part], kF32, {kBatch, kTokens, kHeadWidth});
      b_.Op("aten::select", 1)
          .Alias("self", kF32, heads)
          .Scalar("dim", "1")
          .Scalar("index", std::to_string(head))
          .OutView(selected, strided, kF32, {kBatch, kTokens, kHeadWidth});
    }
    b_.Op("aten::unbind")
        .Alias("self", kF32, heads)
        .Scalar("dim", "1")
        .OutView(b_.Slot(), per_head[part], kF32, {kBatch, kTokens, kHeadWidth})
        .OutView(b_.Slot(), per_head[part], kF32, {kBatch, kTokens, kHeadWidth})
        .OutView(b_.Slot(), per_head[part], kF32, {kBatch, kTokens, kHeadWidth})
        .OutView(b_.Slot(), per_head[part], kF32, {kBatch, kTokens, kHeadWidth});
  }
  block.q = per_head[0];
  block.v = per_head[2];
  block.k_t = b_.Slot();
  b_.At(prefix + "attn", "examples/gpt.py:44", Phase::kForward);
  b_.Op("aten::transpose")
      .Alias("self", kF32, heads)
      .Scalar("dim0", "-2")
      .Scalar("dim1", "-1")
      .OutView(block.k_t, per_head[1], kF32, heads);
  const int att = Matmul(block.q, block.k_t, kTokens, kHeadWidth, kTokens);
  const int scaled = b_.Slot(), masked = b_.Slot(), mask = b_.Slot();
  b_.Op("aten::mul")
      .In("self", att, kF32, scores)
      .Scalar("other", "0.125")
      .Out(scaled, kF32, scores);
  b_.At(prefix + "attn", "examples/gpt.py:45", Phase::kForward);
  b_.Op("aten::masked_fill")
      .In("self", scaled, kF32, scores)
      .In("mask", mask, DType::kBool, {1, 1, kTokens, kTokens})
      .Scalar("value", "-inf")
      .Out(masked, kF32, scores);
  block.probs = b_.Slot();
  b_.At(prefix + "attn", "examples/gpt.py:46", Phase::kForward);
  b_.Op("aten::_softmax", 1)
      .In("self", masked, kF32, scores)
      .Scalar("dim", "-1")
      .Scalar("half_to_float", "False")
      .Out(block.probs, kF32, scores);
  b_.Op("aten::softmax")
      .In("self", masked, kF32, scores)
      .Scalar("dim", "-1")
      .None("dtype")
      .OutCopy(block.probs, block.probs, kF32, scores);
  b_.At(prefix + "attn", "examples/gpt.py:47", Phase::kForward);
  const int y = Matmul(block.probs, block.v, kTokens, kTokens, kHeadWidth);
  b_.At(prefix + "attn", "examples/gpt.py:48", Phase::kForward);
  const int y_t = b_.Slot(), y_c = b_.Slot(), y_rows = b_.Slot();
  b_.Op("aten::transpose")
      .Alias("self", kF32, heads)
      .Scalar("dim0", "1")
      .Scalar("dim1", "2")
      .OutView(y_t, y, kF32, {kBatch, kTokens, kHeads, kHeadWidth});
  b_.Op("aten::clone", 1)
      .In("self", y_t, kF32, {kBatch, kTokens, kHeads, kHeadWidth})
      .Scalar("memory_format", "torch.contiguous_format")
      .Out(y_c, kF32, {kBatch, kTokens, kHeads, kHeadWidth});
  b_.Op("aten::contiguous")
      .In("self", y_t, kF32, {kBatch, kTokens, kHeads, kHeadWidth})
      .Scalar("memory_format", "torch.contiguous_format")
      .OutCopy(y_c, y_c, kF32, {kBatch, kTokens, kHeads, kHeadWidth});
  b_.Op("aten::view")
      .Alias("self", kF32, {kBatch, kTokens, kHeads, kHeadWidth})
      .Scalar("size", "[8, 64, 256]")
      .OutView(y_rows, y_c, kF32, Act(kWidth));
  const int attn_out = LinearForward(block.proj, y_rows);
  b_.At(prefix.substr(0, prefix.size() - 1), "examples/gpt.py:62", Phase::kForward);
  const int x_mid = Add(x, attn_out);
  const int h2 = LayerNormForward(block.ln2, x_mid);
  const int f = LinearForward(block.fc, h2);
  b_.At(prefix + "mlp.act", "examples/gpt.py:74", Phase::kForward);
  const int g = b_.Slot();
  block.gelu_in = f;
  b_.Op("aten::gelu")
      .In("self", f, kF32, Act(4 * kWidth))
      .Scalar("approximate", "none")
      .Out(g, kF32, Act(4 * kWidth));
  const int mlp_out = LinearForward(block.proj2, g);
  b_.At(prefix.substr(0, prefix.size() - 1), "examples/gpt.py:63", Phase::kForward);
  const int x_out = Add(x_mid, mlp_out);
  return x_out;
}

int GptBuilder::BlockBackward(const Block& block, int grad, const std::string& prefix) {
  const Shape heads = {kBatch, kHeads, kTokens, kHeadWidth};
  const Shape scores = {kBatch, kHeads, kTokens, kTokens};
  const std::string block_module = prefix.substr(0, prefix.size() - 1);
  int g = LinearBackward(block.proj2, grad);
  b_.At(prefix + "mlp.act", "examples/gpt.py:74", Phase::kBackward, "GeluBackward0");
  const int g_f = b_.Slot();
  b_.Op("aten::gelu_backward")
      .In("grad_output", g, kF32, Act(4 * kWidth))
      .In("self", block.gelu_in, kF32, Act(4 * kWidth))
      .Scalar("approximate", "none")
      .Out(g_f, kF32, Act(4 * kWidth));
  g = LayerNormBackward(block.ln2, LinearBackward(block.fc, g_f));
  b_.At(block_module, "examples/gpt.py:63", Phase::kBackward, "AddBackward0");
  const int g_mid = Add(grad, g);
  const int g_y = LinearBackward(block.proj, g_mid);
  b_.At(prefix + "attn", "examples/gpt.py:48", Phase::kBackward, "ViewBackward0");
  const int g_y4 = b_.Slot(), g_heads = b_.Slot();
  b_.Op("aten::view")
      .Alias("self", kF32, {kRows, kWidth})
      .Scalar("size", "[8, 64, 4, 64]")
      .OutView(g_y4, g_y, kF32, {kBatch, kTokens, kHeads, kHeadWidth});
  b_.At(prefix + "attn", "examples/gpt.py:48", Phase::kBackward, "TransposeBackward0");
  b_.Op("aten::transpose")
      .Alias("self", kF32, {kBatch, kTokens, kHeads, kHeadWidth})
      .Scalar("dim0", "1")
      .Scalar("dim1", "2")
      .OutView(g_heads, g_y4, kF32, heads);
  // Two BmmBackward0 nodes: (probs @ v) and (q @ k^T).
  auto bmm_backward = [&](int grad_out, int left, int right, const Shape& left_shape,
                          const Shape& right_shape, int* grad_left, int* grad_right) {
    b_.At(prefix + "attn", "examples/gpt.py:47", Phase::kBackward, "BmmBackward0");
    const int right_t = b_.Slot(), left_t = b_.Slot();
    *grad_left = b_.Slot();
    *grad_right = b_.Slot();
    b_.Op("aten::transpose")
        .Alias("self", kF32, right_shape)
        .Scalar("dim0", "1")
        .Scalar("dim1", "2")
        .OutView(right_t, right, kF32, right_shape);
    BatchViews(0, grad_out);
    b_.Op("aten::bmm")
        .In("self", grad_out, kF32, scores)
        .In("mat2", right_t, kF32, right_shape)
        .Out(*grad_left, kF32, left_shape);
    b_.Op("aten::transpose")
        .Alias("self", kF32, left_shape)
        .Scalar("dim0", "1")
        .Scalar("dim1", "2")
        .OutView(left_t, left, kF32, left_shape);
    BatchViews(0, left_t);
    b_.Op("aten::bmm")
        .In("self", left_t, kF32, left_shape)
        .In("mat2", grad_out, kF32, scores)
        .Out(*grad_right, kF32, right_shape);
  };
  int g_probs = -1, g_v = -1, g_q = -1, g_k_t = -1;
  bmm_backward(g_heads, block.probs, block.v, scores, heads, &g_probs, &g_v);
  b_.At(prefix + "attn", "examples/gpt.py:46", Phase::kBackward, "SoftmaxBackward0");
  const int g_att = b_.Slot(), g_masked = b_.Slot(), g_scaled = b_.Slot();
  b_.Op("aten::_softmax_backward_data")
      .In("grad_output", g_probs, kF32, scores)
      .In("output", block.probs, kF32, scores)
      .Scalar("dim", "-1")
      .Scalar("input_dtype", "6")
      .Out(g_att, kF32, scores);
  b_.At(prefix + "attn", "examples/gpt.py:45", Phase::kBackward, "MaskedFillBackward0");
  b_.Op("aten::masked_fill")
      .In("self", g_att, kF32, scores)
      .In("mask", g_att, DType::kBool, {1, 1, kTokens, kTokens})
      .Scalar("value", "0")
      .Out(g_masked, kF32, scores);
  b_.At(prefix + "attn", "examples/gpt.py:44", Phase::kBackward, "MulBackward0");
  b_.Op("aten::mul")
      .In("self", g_masked, kF32, scores)
      .Scalar("other", "0.125")
      .Out(g_scaled, kF32, scores);
  bmm_backward(g_scaled, block.q, block.k_t, heads, heads, &g_q, &g_k_t);
  // UnbindBackward0 of the head loop: stack the per-head gradients back.
  b_.At(prefix + "attn", "examples/gpt.py:42", Phase::kBackward, "UnbindBackward0");
  for (int* grad_part : {&g_q, &g_k_t, &g_v}) {
    for (int head = 0; head < kHeads; ++head) {
      const int strided = b_.Slot();
      b_.Op("aten::as_strided", 2)
          .Alias("self", kF32, {kBatch, kTokens, kHeadWidth})
          .Scalar("size", "[8, 1, 64, 64]")
          .Scalar("stride", "[4096, 4096, 64, 1]")
          .Scalar("storage_offset", "0")
          .OutView(strided, *grad_part, kF32, {kBatch, 1, kTokens, kHeadWidth});
      b_.Op("aten::unsqueeze", 1)
          .Alias("self", kF32, {kBatch, kTokens, kHeadWidth})
          .Scalar("dim", "1")
          .OutView(b_.Slot(), strided, kF32, {kBatch, 1, kTokens, kHeadWidth});
    }
    const int stacked = b_.Slot();
    b_.Op("aten::stack")
        .In("tensors", *grad_part, kF32, heads)
        .Scalar("dim", "1")
        .Out(stacked, kF32, heads);
    *grad_part = stacked;
  }
  b_.At(prefix + "attn", "examples/gpt.py:44", Phase::kBackward, "TransposeBackward0");
  const int g_k = b_.Slot(), g_qkv = b_.Slot();
  b_.Op("aten::transpose")
      .Alias("self", kF32, heads)
      .Scalar("dim0", "-2")
      .Scalar("dim1", "-1")
      .OutView(g_k, g_k_t, kF32, heads);
  b_.At(prefix + "attn", "examples/gpt.py:41", Phase::kBackward, "SplitBackward0");
  b_.Op("aten::cat")
      .In("tensors", g_q, kF32, Act(kWidth))
      .In("tensors", g_k, kF32, Act(kWidth))
      .In("tensors", g_v, kF32, Act(kWidth))
      .Scalar("dim", "2")
      .Out(g_qkv, kF32, Act(3 * kWidth));
  g = LayerNormBackward(block.ln1, LinearBackward(block.qkv, g_qkv));
  b_.At(block_module, "examples/gpt.py:62", Phase::kBackward, "AddBackward0");
  const int g_in = Add(g_mid, g);
  return g_in;
}

void GptBuilder::Build(int layers) {
  Program& program = b_.program();
  program.batch_slot = b_.Slot();
  program.scale_slot = b_.Slot();
  const int positions = b_.Slot();
  const Param tok = NewParam({kVocab, kWidth}), pos = NewParam({kTokens, kWidth});
  std::vector<Block> blocks(static_cast<size_t>(layers));
  for (int layer = 0; layer < layers; ++layer) {
    const std::string prefix = "blocks." + std::to_string(layer) + ".";
    Block& block = blocks[static_cast<size_t>(layer)];
    block.ln1 = NewLayerNorm(prefix + "ln1", "examples/gpt.py:62");
    block.qkv = NewLinear(prefix + "attn.c_attn", "examples/gpt.py:40", kWidth, 3 * kWidth);
    block.proj = NewLinear(prefix + "attn.c_proj", "examples/gpt.py:49", kWidth, kWidth);
    block.ln2 = NewLayerNorm(prefix + "ln2", "examples/gpt.py:63");
    block.fc = NewLinear(prefix + "mlp.fc", "examples/gpt.py:73", kWidth, 4 * kWidth);
    block.proj2 = NewLinear(prefix + "mlp.proj", "examples/gpt.py:75", 4 * kWidth, kWidth);
  }
  LayerNorm ln_f = NewLayerNorm("ln_f", "examples/gpt.py:96");
  Linear head = NewLinear("lm_head", "examples/gpt.py:97", kWidth, kVocab);

  // Forward.
  const int tok_emb = b_.Slot(), pos_emb = b_.Slot();
  int x = b_.Slot();
  const DType kI64 = DType::kInt64;
  b_.At("tok_emb", "examples/gpt.py:92", Phase::kForward);
  b_.Op("aten::embedding")
      .In("weight", tok.slot, kF32, tok.shape)
      .In("indices", program.batch_slot, kI64, {kBatch, kTokens})
      .Scalar("padding_idx", "-1")
      .Scalar("scale_grad_by_freq", "False")
      .Scalar("sparse", "False")
      .Out(tok_emb, kF32, Act(kWidth));
  b_.At("pos_emb", "examples/gpt.py:93", Phase::kForward);
  b_.Op("aten::embedding")
      .In("weight", pos.slot, kF32, pos.shape)
      .In("indices", positions, kI64, {kTokens})
      .Scalar("padding_idx", "-1")
      .Scalar("scale_grad_by_freq", "False")
      .Scalar("sparse", "False")
      .Out(pos_emb, kF32, {kTokens, kWidth});
  b_.At("", "examples/gpt.py:94", Phase::kForward);
  b_.Op("aten::add")
      .In("self", tok_emb, kF32, Act(kWidth))
      .In("other", pos_emb, kF32, {kTokens, kWidth})
      .Scalar("alpha", "1")
      .Out(x, kF32, Act(kWidth));
  for (int layer = 0; layer < layers; ++layer) {
    x = BlockForward(blocks[static_cast<size_t>(layer)], x,
                     "blocks." + std::to_string(layer) + ".");
  }
  const int logits = LinearForward(head, LayerNormForward(ln_f, x));
  b_.At("", "examples/gpt_train.py:55", Phase::kForward);
  const int log_probs = b_.Slot(), loss = b_.Slot(), total_weight = b_.Slot();
  b_.Op("aten::_log_softmax", 2)
      .In("self", logits, kF32, {kRows, kVocab})
      .Scalar("dim", "1")
      .Scalar("half_to_float", "False")
      .Out(log_probs, kF32, {kRows, kVocab});
  b_.Op("aten::log_softmax", 1)
      .In("self", logits, kF32, {kRows, kVocab})
      .Scalar("dim", "1")
      .None("dtype")
      .OutCopy(log_probs, log_probs, kF32, {kRows, kVocab});
  b_.Op("aten::nll_loss_forward", 2)
      .In("self", log_probs, kF32, {kRows, kVocab})
      .In("target", program.batch_slot, kI64, {kRows})
      .None("weight")
      .Scalar("reduction", "1")
      .Scalar("ignore_index", "-100")
      .Out(loss, kF32, {})
      .Out(total_weight, kF32, {});
  b_.Op("aten::nll_loss_nd", 1)
      .In("self", log_probs, kF32, {kRows, kVocab})
      .In("target", program.batch_slot, kI64, {kRows})
      .None("weight")
      .Scalar("reduction", "1")
      .Scalar("ignore_index", "-100")
      .OutCopy(loss, loss, kF32, {});
  b_.Op("aten::cross_entropy_loss")
      .In("self", logits, kF32, {kRows, kVocab})
      .In("target", program.batch_slot, kI64, {kRows})
      .None("weight")
      .Scalar("reduction", "1")
      .Scalar("ignore_index", "-100")
      .Scalar("label_smoothing", "0.0")
      .OutCopy(loss, loss, kF32, {});

  // Backward.
  b_.At("", "examples/gpt_train.py:56", Phase::kBackward, "NllLossBackward0");
  const int g_log_probs = b_.Slot(), g_logits = b_.Slot();
  b_.Op("aten::nll_loss_backward")
      .In("grad_output", loss, kF32, {})
      .In("self", log_probs, kF32, {kRows, kVocab})
      .In("target", program.batch_slot, kI64, {kRows})
      .None("weight")
      .Scalar("reduction", "1")
      .Scalar("ignore_index", "-100")
      .In("total_weight", total_weight, kF32, {})
      .Out(g_log_probs, kF32, {kRows, kVocab});
  b_.At("", "examples/gpt_train.py:56", Phase::kBackward, "LogSoftmaxBackward0");
  b_.Op("aten::_log_softmax_backward_data")
      .In("grad_output", g_log_probs, kF32, {kRows, kVocab})
      .In("output", log_probs, kF32, {kRows, kVocab})
      .Scalar("dim", "1")
      .Scalar("input_dtype", "6")
      .Out(g_logits, kF32, {kRows, kVocab});
  int g = LayerNormBackward(ln_f, LinearBackward(head, g_logits));
  for (int layer = layers - 1; layer >= 0; --layer) {
    g = BlockBackward(blocks[static_cast<size_t>(layer)], g,
                      "blocks." + std::to_string(layer) + ".");
  }
  b_.At("pos_emb", "examples/gpt.py:93", Phase::kBackward, "EmbeddingBackward0");
  const int g_pos = b_.Slot();
  b_.Op("aten::sum")
      .In("self", g, kF32, Act(kWidth))
      .Scalar("dim", "[0]")
      .Scalar("keepdim", "False")
      .None("dtype")
      .Out(g_pos, kF32, {kTokens, kWidth});
  for (const Param* p : {&pos, &tok}) {
    const bool is_pos = p == &pos;
    b_.At(is_pos ? "pos_emb" : "tok_emb", is_pos ? "examples/gpt.py:93" : "examples/gpt.py:92",
          Phase::kBackward, "EmbeddingBackward0");
    const int grad_in = is_pos ? g_pos : g;
    const Shape grad_shape = is_pos ? Shape{kTokens, kWidth} : Act(kWidth);
    const int indices = is_pos ? positions : program.batch_slot;
    const Shape indices_shape = is_pos ? Shape{kTokens} : Shape{kBatch, kTokens};
    const std::string num_weights = is_pos ? "64" : "512";
    b_.Op("aten::embedding_dense_backward", 1)
        .In("grad_output", grad_in, kF32, grad_shape)
        .In("indices", indices, kI64, indices_shape)
        .Scalar("num_weights", num_weights)
        .Scalar("padding_idx", "-1")
        .Scalar("scale_grad_by_freq", "False")
        .Out(p->grad, kF32, p->shape);
    b_.Op("aten::embedding_backward")
        .In("grad", grad_in, kF32, grad_shape)
        .In("indices", indices, kI64, indices_shape)
        .Scalar("num_weights", num_weights)
        .Scalar("padding_idx", "-1")
        .Scalar("scale_grad_by_freq", "False")
        .Scalar("sparse", "False")
        .OutCopy(p->grad, p->grad, kF32, p->shape);
  }

  // AdamW over the parameters in registration order.
  b_.At("", "examples/gpt_train.py:58", Phase::kOptimizer);
  for (const Param& p : params_) Adam(p);

  // Padding: metrics on the loss (phase other), cycled to fill the step.
  b_.At("", "examples/gpt_train.py:61", Phase::kOther);
  const int detached = b_.Slot(), mean = b_.Slot(), finite = b_.Slot(), total = b_.Slot();
  b_.Pad("aten::detach").Alias("self", kF32, {}).OutView(detached, loss, kF32, {});
  b_.Pad("aten::div").In("self", detached, kF32, {}).Scalar("other", "4").Out(mean, kF32, {});
  b_.Pad("aten::isfinite").In("self", mean, kF32, {}).Out(finite, DType::kBool, {});
  b_.Pad("aten::add_")
      .In("self", total, kF32, {})
      .In("other", mean, kF32, {})
      .Scalar("alpha", "1")
      .Out(total, kF32, {});
}

}  // namespace gpt_internal

Program BuildGptProgram(uint64_t ops_per_step, ProgramBuilder& builder) {
  // Measure one and two blocks without touching the real string table, then build the largest
  // model that fits.
  auto size_with = [](int layers) {
    ProgramBuilder dry([](std::string_view) { return kEmptyString; });
    gpt_internal::GptBuilder(dry).Build(layers);
    return static_cast<uint64_t>(dry.program().ops.size());
  };
  const uint64_t one = size_with(1), per_block = size_with(2) - one;
  const int layers =
      ops_per_step <= one ? 1 : static_cast<int>(1 + (ops_per_step - one) / per_block);
  gpt_internal::GptBuilder(builder).Build(layers);
  return std::move(builder.program());
}

}  // namespace upguard::synthetic

// The builder behind the synthetic GPT step (synthetic_gpt.cc, synthetic_gpt_layers.cc):
// model pieces as parameter slots and the ops each piece records forward and backward.
// Private to tools/; the public entry point is BuildGptProgram (synthetic_program.h).
#pragma once

#include <string>
#include <vector>

#include "digest/digest.h"
#include "tools/synthetic_program.h"

namespace upguard::synthetic::gpt_internal {

inline constexpr DType kF32 = DType::kFloat32;
inline constexpr int64_t kBatch = 8, kTokens = 64, kWidth = 256, kVocab = 512, kHeads = 4;
inline constexpr int64_t kRows = kBatch * kTokens;
inline constexpr int64_t kHeadWidth = kWidth / kHeads;

using Shape = std::vector<int64_t>;

inline Shape Act(int64_t width) { return {kBatch, kTokens, width}; }

// A parameter with its gradient slot and shape, in registration order (the optimizer's order).
struct Param {
  int slot;
  int grad;
  Shape shape;
};

class GptBuilder {
 public:
  explicit GptBuilder(ProgramBuilder& b) : b_(b) {}

  void Build(int layers);

 private:
  struct Linear {
    std::string module, site;
    int64_t in, out;
    Param weight, bias;
    int input = -1, input_rows = -1, output = -1;  // slots seen in forward
  };
  struct LayerNorm {
    std::string module, site;
    Param weight, bias;
    int input = -1, mean = -1, rstd = -1;
  };
  struct Block {
    LayerNorm ln1, ln2;
    Linear qkv, proj, fc, proj2;
    int q = -1, k_t = -1, v = -1, probs = -1, gelu_in = -1;
  };

  Param NewParam(Shape shape) {
    params_.push_back(Param{b_.Parameter(), b_.Slot(), std::move(shape)});
    return params_.back();
  }
  Linear NewLinear(const std::string& module, const std::string& site, int64_t in, int64_t out) {
    return Linear{module, site, in, out, NewParam({out, in}), NewParam({out})};
  }
  LayerNorm NewLayerNorm(const std::string& module, const std::string& site) {
    return LayerNorm{module, site, NewParam({kWidth}), NewParam({kWidth})};
  }

  int LinearForward(Linear& l, int x);
  int LinearBackward(const Linear& l, int grad);
  int LayerNormForward(LayerNorm& ln, int x);
  int LayerNormBackward(const LayerNorm& ln, int grad);
  int BlockForward(Block& block, int x, const std::string& prefix);
  int BlockBackward(const Block& block, int grad, const std::string& prefix);
  void Adam(const Param& param);
  void BatchViews(uint32_t depth, int source);
  int Matmul(int left, int right, int64_t m, int64_t k, int64_t n);
  int Add(int self, int other);

  ProgramBuilder& b_;
  std::vector<Param> params_;
};

}  // namespace upguard::synthetic::gpt_internal

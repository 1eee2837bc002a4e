// CAME (Luo et al., ACL 2023): one optimizer step of one parameter tensor, fused.
//
//   CameTensor t;  t.param = p; t.grad = g; t.shape = {rows, cols}; t.m = m; t.r = r; ...
//   CameHyper h;   h.lr = 1e-3;
//   Status s = CameStep(h, t, SerialFor());
//
// The algorithm (issue 17, docs/optim.md): second moments factored over the last two dims of a
// tensor with 2 or more dims (row and column means of g^2 + eps1), the update clipped by its
// RMS, momentum m, and a factored "confidence" estimate from (u - m)^2 + eps2 that scales m; no
// bias correction; decoupled weight decay applied first. Tensors of 0 or 1 dims keep a full
// second moment v and step by m alone.
//
// Bitwise reproducible for any thread count: the work is cut into blocks of rows and chunks of
// columns by the tensor's shape alone; a row's or a column's mean is taken by one task, in the
// order torch's CPU sum kernel takes it (torch_order_sum.h), and the update's norm is one
// serial pass; so `parallel` may run the tasks in any order on any number of threads.
//
// The arithmetic is the reference implementation's (the authors' PyTorch code on torch 1.13's
// CPU kernels, AVX2): the same float32 operations in the same order, its means and its norm
// summed in torch's order (torch_order_sum.h), and a multiply-add fused exactly where torch's
// vectorized kernel fuses it (x.mul_(b).add_(y, alpha=a), p.add_(p, alpha=-lr*wd)). On the
// reference data the parameters after 20 steps are the same bits (came_reference_test.cc).
// Nothing else is fused or reordered (-ffp-contract=off), so the bits do not depend on the
// machine's vector width or on the compiler.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "upguard/status.h"

namespace upguard::optim {

enum class Precision : uint8_t { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

struct CameHyper {
  double lr = 0;
  double beta1 = 0.9, beta2 = 0.999, beta3 = 0.9999;
  double eps1 = 1e-30, eps2 = 1e-16;
  double clip_threshold = 1.0;
  double weight_decay = 0;
};

// One tensor and its state. Every buffer is contiguous (C order) and float32 except `param`
// and `grad`, whose precision is given.
struct CameTensor {
  std::vector<int64_t> shape;  // the parameter's; factored when shape.size() >= 2
  void* param = nullptr;
  Precision param_precision = Precision::kFloat32;
  const void* grad = nullptr;
  Precision grad_precision = Precision::kFloat32;
  float* m = nullptr;  // shape
  // Factored (2+ dims): r, big_r: shape[:-1]; c, big_c: shape[:-2] + shape[-1:].
  float* r = nullptr;
  float* c = nullptr;
  float* big_r = nullptr;
  float* big_c = nullptr;
  float* v = nullptr;  // not factored: shape
  // A float32 copy of a float16/bfloat16 parameter: the step updates it and writes it rounded
  // to `param`. Null: the step reads `param` and rounds its result (see `stochastic`).
  float* master = nullptr;
  // bfloat16 `param` without `master`: rounded stochastically (seeded by `seed` and the element
  // index, so reproducible) instead of to nearest.
  bool stochastic = false;
  uint64_t seed = 0;
};

// Runs body(begin, end) over [0, count) blocks, in any split and order, and returns when all
// are done.
using ParallelFor =
    std::function<void(int64_t count, const std::function<void(int64_t, int64_t)>&)>;
ParallelFor SerialFor();

// Rows per block of the factored route: a function of the shape only (about 16K elements).
int64_t RowsPerBlock(int64_t rows, int64_t cols);
// Elements per block of the unfactored route.
constexpr int64_t kElementsPerBlock = 16384;

Status CameStep(const CameHyper& hyper, const CameTensor& tensor, const ParallelFor& parallel);

// The kernel's builds: the compiler's default target, and AVX2 + FMA (chosen by CameStep where
// the CPU has both). They give the same bits; the tests run each.
enum class Build : uint8_t { kGeneric = 0, kAvx2 = 1 };
bool HasAvx2Build();  // built, and this CPU runs it
Status CameStepWith(Build build, const CameHyper& hyper, const CameTensor& tensor,
                    const ParallelFor& parallel);

}  // namespace upguard::optim

// CAME's kernel (came.h), compiled once per instruction set: came_generic.cc as the compiler
// targets, came_avx2.cc with AVX2 and FMA (an fma is then one instruction, and the element loops
// take 8 floats at a time). Both take the same operations in the same order (nothing is
// reassociated; a fused multiply-add is exact by definition), so both give the same bits
// (came_test.cc runs both). Each includer defines UPGUARD_OPTIM_ISA, the namespace its copy
// lives in, so that the two copies of every inline function stay apart.
#pragma once

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "optim/came.h"
#include "optim/narrow_float.h"
#include "optim/torch_order_sum.h"

namespace upguard::optim::UPGUARD_OPTIM_ISA {
namespace {

// Loads and stores of one precision; `float` is the arithmetic type of every one.
struct F32 {
  using T = float;
  static float Load(T value) { return value; }
};
struct F16 {
  using T = uint16_t;
  static float Load(T value) { return Float16ToFloat(value); }
};
struct BF16 {
  using T = uint16_t;
  static float Load(T value) { return BFloat16ToFloat(value); }
};

uint16_t Noise(uint64_t seed, int64_t index) {  // SplitMix64 of (seed, index)
  uint64_t z = seed + uint64_t(index) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return uint16_t((z ^ (z >> 31)) >> 48);
}

// The hyper-parameters as the reference's float32 tensor ops see them: a Python float scalar
// is rounded to float32 once.
struct Consts {
  float b1, a1, b2, a2, b3, a3, e1, e2, clip, lr, decay;
  bool has_decay;
  explicit Consts(const CameHyper& h)
      : b1(float(h.beta1)),
        a1(float(1.0 - h.beta1)),
        b2(float(h.beta2)),
        a2(float(1.0 - h.beta2)),
        b3(float(h.beta3)),
        a3(float(1.0 - h.beta3)),
        e1(float(h.eps1)),
        e2(float(h.eps2)),
        clip(float(h.clip_threshold)),
        lr(float(h.lr)),
        decay(float(-h.weight_decay * h.lr)),
        has_decay(h.weight_decay != 0) {}
};

float Rsqrt(float value) { return 1.0f / std::sqrt(value); }

// The update's RMS clip divisor: max(1, rms(u) / clip), rms = norm(u) / sqrt(numel) in float32.
float ClipDivisor(const float* u, int64_t numel, const Consts& k) {
  const float rms = NormTwo(u, numel) / float(std::sqrt(double(numel)));
  return std::max(rms / k.clip, 1.0f);
}

// The update u, materialized once a step for its norm; kept per thread between steps.
std::vector<float>& Scratch(int64_t numel) {
  thread_local std::vector<float> scratch;
  if (int64_t(scratch.size()) < numel) scratch.resize(size_t(numel));
  return scratch;
}

constexpr int64_t kColumnChunk = 256;  // columns a task of the column means sums (1 KiB a row)

// How a factored tensor's work is cut: blocks of rows (a batch's rows never share a block) and
// chunks of columns, by the shape alone.
struct Grid {
  int64_t batches, rows, cols;
  int64_t per_block, blocks_per_batch, row_blocks;
  int64_t chunks_per_batch, col_chunks;
  Grid(int64_t b, int64_t r, int64_t c)
      : batches(b),
        rows(r),
        cols(c),
        per_block(RowsPerBlock(r, c)),
        blocks_per_batch((r + per_block - 1) / per_block),
        row_blocks(b * blocks_per_batch),
        chunks_per_batch((c + kColumnChunk - 1) / kColumnChunk),
        col_chunks(b * chunks_per_batch) {}
  // Rows [First, Last) of a block, counted over all batches.
  int64_t First(int64_t block) const {
    return (block / blocks_per_batch) * rows + (block % blocks_per_batch) * per_block;
  }
  int64_t Last(int64_t block) const {
    return std::min(First(block) + per_block, (block / blocks_per_batch + 1) * rows);
  }
};

template <typename P, typename G>
class Kernel {
 public:
  Kernel(const CameHyper& hyper, const CameTensor& t, const ParallelFor& parallel)
      : k_(hyper),
        t_(t),
        parallel_(parallel),
        param_(static_cast<typename P::T*>(t.param)),
        grad_(static_cast<const typename G::T*>(t.grad)) {}

  void Factored(int64_t batches, int64_t rows, int64_t cols) {
    Grid grid(batches, rows, cols);
    std::vector<float> row_factor(size_t(batches * rows)), col_factor(size_t(batches * cols));
    const typename G::T* __restrict grad = grad_;
    const float e1 = k_.e1, e2 = k_.e2;
    // 1. Row and column means of q = g^2 + eps1 into r and c, then approx(r, c)'s factors.
    auto q = [grad, e1](int64_t at, int64_t count, float* __restrict out) {
      for (int64_t idx = 0; idx < count; ++idx) {
        const float g = G::Load(grad[at + idx]);
        out[idx] = g * g + e1;
      }
    };
    RowMeans(grid, q, t_.r, k_.b2, k_.a2);
    ColumnMeans(grid, q, t_.c, k_.b2, k_.a2);
    Factors(grid, t_.r, t_.c, &row_factor, &col_factor);
    // 2. u = approx(r, c) * g, and its RMS clip.
    float* __restrict u = Scratch(batches * rows * cols).data();
    EachRow(grid, [&row_factor, &col_factor, u, grad, rows, cols](int64_t row) {
      const float rf = row_factor[size_t(row)];
      const float* __restrict cf = &col_factor[size_t((row / rows) * cols)];
      float* __restrict out = u + row * cols;
      const typename G::T* __restrict in = grad + row * cols;
      for (int64_t j = 0; j < cols; ++j) out[j] = (rf * cf[j]) * G::Load(in[j]);
    });
    const float divisor = ClipDivisor(u, batches * rows * cols, k_);
    // 3. u clipped, the momentum m, then the instability (u - m)^2 + eps2's row and column
    // means into R and C (m is complete before the columns are read).
    float* __restrict m = t_.m;
    EachRow(grid, [this, u, m, cols, divisor](int64_t row) {
      Momentum(row * cols, cols, divisor, u, m);
    });
    auto res = [u, m, e2](int64_t at, int64_t count, float* __restrict out) {
      for (int64_t idx = 0; idx < count; ++idx) {
        const float diff = u[at + idx] - m[at + idx];
        out[idx] = diff * diff + e2;
      }
    };
    RowMeans(grid, res, t_.big_r, k_.b3, k_.a3);
    ColumnMeans(grid, res, t_.big_c, k_.b3, k_.a3);
    Factors(grid, t_.big_r, t_.big_c, &row_factor, &col_factor);
    // 4. The parameter: decay, then the step approx(R, C) * m (a row at a time, into u's row:
    // u is not read again).
    EachRow(grid, [this, &row_factor, &col_factor, u, m, rows, cols](int64_t row) {
      const float rf = row_factor[size_t(row)];
      const float* __restrict cf = &col_factor[size_t((row / rows) * cols)];
      const float* __restrict mm = m + row * cols;
      float* __restrict step = u + row * cols;
      for (int64_t j = 0; j < cols; ++j) step[j] = (rf * cf[j]) * mm[j];
      Apply(row * cols, cols, step);
    });
  }

  void Unfactored(int64_t numel) {
    const int64_t blocks = (numel + kElementsPerBlock - 1) / kElementsPerBlock;
    float* __restrict u = Scratch(numel).data();
    float* __restrict v = t_.v;
    float* __restrict m = t_.m;
    const typename G::T* __restrict grad = grad_;
    const float b2 = k_.b2, a2 = k_.a2, e1 = k_.e1;
    auto each = [&](auto&& fn) {
      parallel_(blocks, [&](int64_t begin, int64_t end) {
        const int64_t first = begin * kElementsPerBlock;
        fn(first, std::min(numel, end * kElementsPerBlock) - first);
      });
    };
    each([u, v, grad, b2, a2, e1](int64_t at, int64_t count) {  // by value: kept in registers
      for (int64_t idx = at; idx < at + count; ++idx) {
        const float g = G::Load(grad[idx]);
        v[idx] = Ema(v[idx], b2, a2, g * g + e1);
        u[idx] = Rsqrt(v[idx]) * g;
      }
    });
    const float divisor = ClipDivisor(u, numel, k_);
    each([this, u, m, divisor](int64_t at, int64_t count) {
      Momentum(at, count, divisor, u, m);
      Apply(at, count, m + at);  // no confidence term: the step is m itself
    });
  }

 private:
  // x.mul_(b).add_(y, alpha=a), as torch computes it in float32.
  static float Ema(float x, float b, float a, float y) { return std::fma(a, y, x * b); }

  float Grad(int64_t at) const { return G::Load(grad_[at]); }

  // fn(row) for every row, row blocks in parallel.
  template <typename Fn>
  void EachRow(const Grid& grid, const Fn& fn) {
    parallel_(grid.row_blocks, [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        for (int64_t row = grid.First(block); row < grid.Last(block); ++row) fn(row);
      }
    });
  }

  // u /= divisor (the clip), then m = b1 * m + (1 - b1) * u, over [at, at + count).
  void Momentum(int64_t at, int64_t count, float divisor, float* __restrict u,
                float* __restrict m) const {
    const float b1 = k_.b1, a1 = k_.a1;
    for (int64_t idx = at; idx < at + count; ++idx) {
      u[idx] = u[idx] / divisor;
      m[idx] = Ema(m[idx], b1, a1, u[idx]);
    }
  }

  // stat = beta * stat + alpha * mean(x, dim=-1), a row at a time (row blocks in parallel);
  // x(at, count, out) writes the values [at, at + count) into out.
  template <typename Fn>
  void RowMeans(const Grid& grid, const Fn& x, float* stat, float beta, float alpha) {
    const int64_t cols = grid.cols;
    parallel_(grid.row_blocks, [&](int64_t begin, int64_t end) {
      std::vector<float> values(static_cast<size_t>(cols));
      for (int64_t block = begin; block < end; ++block) {
        for (int64_t row = grid.First(block); row < grid.Last(block); ++row) {
          x(row * cols, cols, values.data());
          stat[row] = Ema(stat[row], beta, alpha, RowSum(values.data(), cols) / float(cols));
        }
      }
    });
  }

  // stat = beta * stat + alpha * mean(x, dim=-2): chunks of columns in parallel, each read a
  // row at a time (contiguous) into its columns' sums; a chunk is cut where torch's column
  // groups change how they sum (FirstInterleavedColumn).
  template <typename Fn>
  void ColumnMeans(const Grid& grid, const Fn& x, float* stat, float beta, float alpha) {
    const int64_t rows = grid.rows, cols = grid.cols;
    const int64_t split = FirstInterleavedColumn(cols);
    parallel_(grid.col_chunks, [&](int64_t begin, int64_t end) {
      std::vector<float> values(static_cast<size_t>(kColumnChunk));
      std::vector<float> totals(static_cast<size_t>(kColumnChunk));
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        const int64_t batch = chunk / grid.chunks_per_batch;
        const int64_t start = (chunk % grid.chunks_per_batch) * kColumnChunk;
        const int64_t stop = std::min(cols, start + kColumnChunk);
        for (auto [first, last] : {std::pair{start, std::min(stop, std::max(start, split))},
                                   std::pair{std::max(start, split), stop}}) {
          if (first >= last) continue;
          ColumnSums sums(rows, cols, first, last);
          for (int64_t row = batch * rows; row < (batch + 1) * rows; ++row) {
            x(row * cols + first, last - first, values.data());
            sums.AddRow(values.data());
          }
          sums.Totals(totals.data());
          for (int64_t j = first; j < last; ++j) {
            float& value = stat[batch * cols + j];
            value = Ema(value, beta, alpha, totals[size_t(j - first)] / float(rows));
          }
        }
      }
    });
  }

  // The factors of approx(row, col): rsqrt(row / mean(row, dim=-1)) and rsqrt(col).
  void Factors(const Grid& grid, const float* row_stat, const float* col_stat,
               std::vector<float>* row_factor, std::vector<float>* col_factor) const {
    const int64_t rows = grid.rows, cols = grid.cols;
    for (int64_t batch = 0; batch < grid.batches; ++batch) {
      const float* stat = row_stat + batch * rows;
      const float mean = RowSum(stat, rows) / float(rows);
      for (int64_t row = 0; row < rows; ++row) {
        (*row_factor)[size_t(batch * rows + row)] = Rsqrt(stat[row] / mean);
      }
      for (int64_t j = batch * cols; j < (batch + 1) * cols; ++j) {
        (*col_factor)[size_t(j)] = Rsqrt(col_stat[j]);
      }
    }
  }

  // p = p - lr*wd*p (decoupled, first), then p = p - lr*step, over [at, at + count); rounded
  // into the parameter.
  void Apply(int64_t at, int64_t count, const float* __restrict step) {
    const float lr = k_.lr, decay = k_.decay;
    if constexpr (std::is_same_v<P, F32>) {  // the common case, in loops that vectorize
      float* __restrict p = param_ + at;
      if (k_.has_decay) {
        for (int64_t idx = 0; idx < count; ++idx) {
          const float decayed = std::fma(p[idx], decay, p[idx]);
          p[idx] = decayed + -(step[idx] * lr);
        }
      } else {
        for (int64_t idx = 0; idx < count; ++idx) p[idx] = p[idx] + -(step[idx] * lr);
      }
      return;
    }
    for (int64_t idx = 0; idx < count; ++idx) {
      float p = t_.master != nullptr ? t_.master[at + idx] : P::Load(param_[at + idx]);
      if (k_.has_decay) p = std::fma(p, decay, p);
      p = p + -(step[idx] * lr);
      if (t_.master != nullptr) t_.master[at + idx] = p;
      Store(at + idx, p);
    }
  }

  void Store(int64_t at, float value) {
    if constexpr (std::is_same_v<P, F32>) {
      param_[at] = value;
    } else if constexpr (std::is_same_v<P, F16>) {
      param_[at] = FloatToFloat16(value);
    } else if (t_.stochastic) {
      param_[at] = FloatToBFloat16Stochastic(value, Noise(t_.seed, at));
    } else {
      param_[at] = FloatToBFloat16(value);
    }
  }

  const Consts k_;
  const CameTensor& t_;
  const ParallelFor& parallel_;
  typename P::T* param_;
  const typename G::T* grad_;
};

template <typename P, typename G>
void Run(const CameHyper& hyper, const CameTensor& t, const ParallelFor& parallel) {
  Kernel<P, G> kernel(hyper, t, parallel);
  int64_t numel = 1;
  for (int64_t size : t.shape) numel *= size;
  if (t.shape.size() < 2) {
    kernel.Unfactored(numel);
    return;
  }
  const int64_t rows = t.shape[t.shape.size() - 2], cols = t.shape.back();
  kernel.Factored(numel / (rows * cols), rows, cols);
}

template <typename P>
void RunGrad(const CameHyper& hyper, const CameTensor& t, const ParallelFor& parallel) {
  switch (t.grad_precision) {
    case Precision::kFloat32:
      return Run<P, F32>(hyper, t, parallel);
    case Precision::kFloat16:
      return Run<P, F16>(hyper, t, parallel);
    case Precision::kBFloat16:
      return Run<P, BF16>(hyper, t, parallel);
  }
}

}  // namespace

// One tensor's step, the arguments checked (came.cc).
void RunCame(const CameHyper& hyper, const CameTensor& tensor, const ParallelFor& parallel) {
  switch (tensor.param_precision) {
    case Precision::kFloat32:
      RunGrad<F32>(hyper, tensor, parallel);
      break;
    case Precision::kFloat16:
      RunGrad<F16>(hyper, tensor, parallel);
      break;
    case Precision::kBFloat16:
      RunGrad<BF16>(hyper, tensor, parallel);
      break;
  }
}

}  // namespace upguard::optim::UPGUARD_OPTIM_ISA

#include "optim/came.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "optim/narrow_float.h"
#include "optim/torch_order_sum.h"

namespace upguard::optim {
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

constexpr int64_t kColumnChunk = 64;  // columns a task of the column means sums

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
    // 1. Row and column means of q = g^2 + eps1 into r and c, then approx(r, c)'s factors.
    auto q = [&](int64_t at) {
      const float g = Grad(at);
      return g * g + k_.e1;
    };
    RowMeans(grid, q, t_.r, k_.b2, k_.a2);
    ColumnMeans(grid, q, t_.c, k_.b2, k_.a2);
    Factors(grid, t_.r, t_.c, &row_factor, &col_factor);
    // 2. u = approx(r, c) * g, and its RMS clip.
    float* u = Scratch(batches * rows * cols).data();
    parallel_(grid.row_blocks, [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        for (int64_t row = grid.First(block); row < grid.Last(block); ++row) {
          const float* cf = &col_factor[size_t((row / rows) * cols)];
          for (int64_t j = 0; j < cols; ++j) {
            u[row * cols + j] = (row_factor[size_t(row)] * cf[j]) * Grad(row * cols + j);
          }
        }
      }
    });
    const float divisor = ClipDivisor(u, batches * rows * cols, k_);
    // 3. u clipped, the momentum m, then the instability (u - m)^2 + eps2's row and column
    // means into R and C (m is complete before the columns are read).
    parallel_(grid.row_blocks, [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        for (int64_t at = grid.First(block) * cols; at < grid.Last(block) * cols; ++at) {
          u[at] = u[at] / divisor;
          t_.m[at] = Ema(t_.m[at], k_.b1, k_.a1, u[at]);
        }
      }
    });
    auto res = [&](int64_t at) {
      const float diff = u[at] - t_.m[at];
      return diff * diff + k_.e2;
    };
    RowMeans(grid, res, t_.big_r, k_.b3, k_.a3);
    ColumnMeans(grid, res, t_.big_c, k_.b3, k_.a3);
    Factors(grid, t_.big_r, t_.big_c, &row_factor, &col_factor);
    // 4. The parameter: decay, then the step approx(R, C) * m.
    parallel_(grid.row_blocks, [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        for (int64_t row = grid.First(block); row < grid.Last(block); ++row) {
          const float* cf = &col_factor[size_t((row / rows) * cols)];
          for (int64_t j = 0; j < cols; ++j) {
            const int64_t at = row * cols + j;
            Apply(at, (row_factor[size_t(row)] * cf[j]) * t_.m[at]);
          }
        }
      }
    });
  }

  void Unfactored(int64_t numel) {
    const int64_t blocks = (numel + kElementsPerBlock - 1) / kElementsPerBlock;
    float* u = Scratch(numel).data();
    auto each = [&](auto&& fn) {
      parallel_(blocks, [&](int64_t begin, int64_t end) {
        for (int64_t at = begin * kElementsPerBlock; at < std::min(numel, end * kElementsPerBlock);
             ++at) {
          fn(at);
        }
      });
    };
    each([&](int64_t at) {
      const float g = Grad(at);
      t_.v[at] = Ema(t_.v[at], k_.b2, k_.a2, g * g + k_.e1);
      u[at] = Rsqrt(t_.v[at]) * g;
    });
    const float divisor = ClipDivisor(u, numel, k_);
    each([&](int64_t at) {
      t_.m[at] = Ema(t_.m[at], k_.b1, k_.a1, u[at] / divisor);
      Apply(at, t_.m[at]);  // no confidence term: the step is m itself
    });
  }

 private:
  // x.mul_(b).add_(y, alpha=a), as torch computes it in float32.
  static float Ema(float x, float b, float a, float y) { return std::fma(a, y, x * b); }

  float Grad(int64_t at) const { return G::Load(grad_[at]); }

  // stat = beta * stat + alpha * mean(x, dim=-1), a row at a time (row blocks in parallel).
  template <typename Fn>
  void RowMeans(const Grid& grid, const Fn& x, float* stat, float beta, float alpha) {
    const int64_t cols = grid.cols;
    parallel_(grid.row_blocks, [&](int64_t begin, int64_t end) {
      std::vector<float> values(static_cast<size_t>(cols));
      for (int64_t block = begin; block < end; ++block) {
        for (int64_t row = grid.First(block); row < grid.Last(block); ++row) {
          for (int64_t j = 0; j < cols; ++j) values[size_t(j)] = x(row * cols + j);
          stat[row] = Ema(stat[row], beta, alpha, RowSum(values.data(), cols) / float(cols));
        }
      }
    });
  }

  // stat = beta * stat + alpha * mean(x, dim=-2): chunks of columns in parallel, each read a
  // row at a time (contiguous) into its columns' sums.
  template <typename Fn>
  void ColumnMeans(const Grid& grid, const Fn& x, float* stat, float beta, float alpha) {
    const int64_t rows = grid.rows, cols = grid.cols;
    parallel_(grid.col_chunks, [&](int64_t begin, int64_t end) {
      std::vector<ColumnSum> sums;
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        const int64_t batch = chunk / grid.chunks_per_batch;
        const int64_t first = (chunk % grid.chunks_per_batch) * kColumnChunk;
        const int64_t last = std::min(cols, first + kColumnChunk);
        sums.clear();
        for (int64_t j = first; j < last; ++j) sums.emplace_back(rows, cols, j);
        for (int64_t row = batch * rows; row < (batch + 1) * rows; ++row) {
          for (int64_t j = first; j < last; ++j) sums[size_t(j - first)].Add(x(row * cols + j));
        }
        for (int64_t j = first; j < last; ++j) {
          float& value = stat[batch * cols + j];
          value = Ema(value, beta, alpha, sums[size_t(j - first)].Total() / float(rows));
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

  // p = p - lr*wd*p (decoupled, first), then p = p - lr*step; rounded into the parameter.
  void Apply(int64_t at, float step) {
    float p = t_.master != nullptr ? t_.master[at] : P::Load(param_[at]);
    if (k_.has_decay) p = std::fma(p, k_.decay, p);
    p = p + -(step * k_.lr);
    if (t_.master != nullptr) t_.master[at] = p;
    Store(at, p);
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

Status Check(const CameHyper& h, const CameTensor& t, bool factored) {
  auto bad = [](const std::string& what) { return InvalidArgument("CAME: " + what); };
  if (!(h.lr > 0) || !std::isfinite(h.lr)) return bad("lr must be a positive number");
  for (double beta : {h.beta1, h.beta2, h.beta3}) {
    if (!(beta >= 0 && beta <= 1)) return bad("betas must lie in [0, 1]");
  }
  if (!(h.eps1 >= 0) || !(h.eps2 >= 0)) return bad("eps must be >= 0");
  if (!(h.clip_threshold > 0)) return bad("clip_threshold must be > 0");
  if (!(h.weight_decay >= 0)) return bad("weight_decay must be >= 0");
  int64_t numel = 1;
  for (int64_t size : t.shape) {
    if (size < 0) return bad("a negative size in the shape");
    numel *= size;
  }
  if (numel == 0) return Status::Ok();  // nothing to update, nothing read
  if (t.param == nullptr || t.grad == nullptr || t.m == nullptr) {
    return bad("param, grad and m are required");
  }
  if (factored && (!t.r || !t.c || !t.big_r || !t.big_c)) {
    return bad("a tensor of 2 or more dims needs the factored state r, c, R, C");
  }
  if (!factored && t.v == nullptr) return bad("a tensor of 0 or 1 dims needs the state v");
  if (t.master != nullptr && t.param_precision == Precision::kFloat32) {
    return bad("a float32 master copy of a float32 parameter: the parameter is its own master");
  }
  if (t.stochastic && (t.param_precision != Precision::kBFloat16 || t.master != nullptr)) {
    return bad("stochastic rounding is for bfloat16 parameters without a master copy");
  }
  return Status::Ok();
}

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

ParallelFor SerialFor() {
  return [](int64_t count, const std::function<void(int64_t, int64_t)>& body) {
    if (count > 0) body(0, count);
  };
}

int64_t RowsPerBlock(int64_t rows, int64_t cols) {
  const int64_t for_size = (kElementsPerBlock + cols - 1) / std::max<int64_t>(cols, 1);
  return std::clamp<int64_t>(for_size, 1, std::max<int64_t>(rows, 1));
}

Status CameStep(const CameHyper& hyper, const CameTensor& tensor, const ParallelFor& parallel) {
  const bool factored = tensor.shape.size() >= 2;
  RETURN_IF_ERROR(Check(hyper, tensor, factored));
  for (int64_t size : tensor.shape) {
    if (size == 0) return Status::Ok();
  }
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
  return Status::Ok();
}

}  // namespace upguard::optim

#include "optim/came.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "optim/narrow_float.h"

namespace upguard::optim {
namespace {

// A parameter with its gradient and CAME state, all float32.
struct Param {
  std::vector<int64_t> shape;
  std::vector<float> p, g, m, r, c, big_r, big_c, v;

  explicit Param(std::vector<int64_t> dims, uint32_t seed = 1) : shape(std::move(dims)) {
    int64_t numel = 1;
    for (int64_t size : shape) numel *= size;
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal;
    for (int64_t idx = 0; idx < numel; ++idx) p.push_back(0.1f * normal(gen));
    g.resize(size_t(numel));
    m.assign(size_t(numel), 0.0f);
    if (shape.size() >= 2) {
      int64_t batches = 1;
      for (size_t dim = 0; dim + 2 < shape.size(); ++dim) batches *= shape[dim];
      r.assign(size_t(batches * shape[shape.size() - 2]), 0.0f);
      big_r = r;
      c.assign(size_t(batches * shape.back()), 0.0f);
      big_c = c;
    } else {
      v.assign(size_t(numel), 0.0f);
    }
  }

  void NewGrad(uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal;
    for (float& value : g) value = normal(gen) * (1.0f + float(&value - g.data()) * 0.01f);
  }

  CameTensor Tensor() {
    CameTensor t;
    t.shape = shape;
    t.param = p.data();
    t.grad = g.data();
    t.m = m.data();
    if (shape.size() >= 2) {
      t.r = r.data(), t.c = c.data(), t.big_r = big_r.data(), t.big_c = big_c.data();
    } else {
      t.v = v.data();
    }
    return t;
  }
};

// The algorithm of issue 17 in double, written from its pseudocode without blocks.
struct Naive {
  std::vector<int64_t> shape;
  std::vector<double> p, m, r, c, big_r, big_c, v;

  explicit Naive(const Param& from)
      : shape(from.shape), p(from.p.begin(), from.p.end()), m(p.size()), v(p.size()) {
    r.resize(from.r.size()), c.resize(from.c.size());
    big_r = r, big_c = c;
  }

  void Step(const std::vector<float>& grad, const CameHyper& h) {
    const size_t n = p.size();
    std::vector<double> g(grad.begin(), grad.end()), u(n), q(n);
    for (size_t idx = 0; idx < n; ++idx) q[idx] = g[idx] * g[idx] + h.eps1;
    const bool factored = shape.size() >= 2;
    if (factored) {
      Update(q, h.beta2, &r, &c);
      Approx(r, c, g, &u);
    } else {
      for (size_t idx = 0; idx < n; ++idx) {
        v[idx] = h.beta2 * v[idx] + (1 - h.beta2) * q[idx];
        u[idx] = g[idx] / std::sqrt(v[idx]);
      }
    }
    double squares = 0;
    for (double value : u) squares += value * value;
    const double divisor = std::max(1.0, std::sqrt(squares / double(n)) / h.clip_threshold);
    std::vector<double> res(n), step(n);
    for (size_t idx = 0; idx < n; ++idx) {
      u[idx] /= divisor;
      m[idx] = h.beta1 * m[idx] + (1 - h.beta1) * u[idx];
      res[idx] = (u[idx] - m[idx]) * (u[idx] - m[idx]) + h.eps2;
    }
    if (factored) {
      Update(res, h.beta3, &big_r, &big_c);
      Approx(big_r, big_c, m, &step);
    } else {
      step = m;
    }
    for (size_t idx = 0; idx < n; ++idx) {
      p[idx] -= h.lr * h.weight_decay * p[idx];
      p[idx] -= h.lr * step[idx];
    }
  }

  int64_t Cols() const { return shape.back(); }
  int64_t Rows() const { return shape[shape.size() - 2]; }

  void Update(const std::vector<double>& x, double beta, std::vector<double>* row,
              std::vector<double>* col) const {
    const int64_t rows = Rows(), cols = Cols(), batches = int64_t(x.size()) / (rows * cols);
    for (int64_t b = 0; b < batches; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < cols; ++j) sum += x[size_t((b * rows + i) * cols + j)];
        (*row)[size_t(b * rows + i)] =
            beta * (*row)[size_t(b * rows + i)] + (1 - beta) * sum / cols;
      }
      for (int64_t j = 0; j < cols; ++j) {
        double sum = 0;
        for (int64_t i = 0; i < rows; ++i) sum += x[size_t((b * rows + i) * cols + j)];
        (*col)[size_t(b * cols + j)] =
            beta * (*col)[size_t(b * cols + j)] + (1 - beta) * sum / rows;
      }
    }
  }

  void Approx(const std::vector<double>& row, const std::vector<double>& col,
              const std::vector<double>& x, std::vector<double>* out) const {
    const int64_t rows = Rows(), cols = Cols(), batches = int64_t(x.size()) / (rows * cols);
    for (int64_t b = 0; b < batches; ++b) {
      double mean = 0;
      for (int64_t i = 0; i < rows; ++i) mean += row[size_t(b * rows + i)];
      mean /= rows;
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          const size_t at = size_t((b * rows + i) * cols + j);
          (*out)[at] = x[at] / std::sqrt(row[size_t(b * rows + i)] / mean) /
                       std::sqrt(col[size_t(b * cols + j)]);
        }
      }
    }
  }
};

CameHyper Hyper(double lr = 1e-2, double decay = 1e-2) {
  CameHyper h;
  h.lr = lr;
  h.weight_decay = decay;
  return h;
}

// Blocks one at a time, last first, on two threads: a split no serial loop would make.
ParallelFor Scrambled() {
  return [](int64_t count, const std::function<void(int64_t, int64_t)>& body) {
    std::thread odd([&] {
      for (int64_t block = count - 1; block >= 0; --block) {
        if (block % 2 == 1) body(block, block + 1);
      }
    });
    for (int64_t block = count - 1; block >= 0; --block) {
      if (block % 2 == 0) body(block, block + 1);
    }
    odd.join();
  };
}

class CameShapes : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(CameShapes, MatchesTheAlgorithmInDouble) {
  Param param(GetParam());
  Naive naive(param);
  const CameHyper h = Hyper();
  for (uint32_t step = 1; step <= 12; ++step) {
    param.NewGrad(step);
    ASSERT_TRUE(CameStep(h, param.Tensor(), SerialFor()).ok());
    naive.Step(param.g, h);
  }
  // float32 against double: a few ulps of the tensor's largest value (a value that crossed
  // zero is not held to its own size).
  double p_scale = 0, m_scale = 0;
  for (size_t idx = 0; idx < param.p.size(); ++idx) {
    p_scale = std::max(p_scale, std::abs(naive.p[idx]));
    m_scale = std::max(m_scale, std::abs(naive.m[idx]));
  }
  for (size_t idx = 0; idx < param.p.size(); ++idx) {
    ASSERT_NEAR(param.p[idx], naive.p[idx], 2e-6 * p_scale) << idx;
    ASSERT_NEAR(param.m[idx], naive.m[idx], 2e-5 * m_scale) << idx;
  }
}

TEST_P(CameShapes, BitwiseTheSameWhateverRunsTheBlocks) {
  Param serial(GetParam()), scrambled(GetParam());
  for (uint32_t step = 1; step <= 3; ++step) {
    serial.NewGrad(step), scrambled.NewGrad(step);
    ASSERT_TRUE(CameStep(Hyper(), serial.Tensor(), SerialFor()).ok());
    ASSERT_TRUE(CameStep(Hyper(), scrambled.Tensor(), Scrambled()).ok());
  }
  const size_t bytes = serial.p.size() * sizeof(float);
  EXPECT_EQ(std::memcmp(serial.p.data(), scrambled.p.data(), bytes), 0);
  EXPECT_EQ(std::memcmp(serial.m.data(), scrambled.m.data(), bytes), 0);
  EXPECT_EQ(serial.c, scrambled.c);
  EXPECT_EQ(serial.big_c, scrambled.big_c);
}

TEST_P(CameShapes, BothBuildsGiveTheSameBits) {
  if (!HasAvx2Build()) GTEST_SKIP() << "no AVX2 build or CPU here";
  Param generic(GetParam()), avx2(GetParam());
  for (uint32_t step = 1; step <= 3; ++step) {
    generic.NewGrad(step), avx2.NewGrad(step);
    ASSERT_TRUE(CameStepWith(Build::kGeneric, Hyper(), generic.Tensor(), SerialFor()).ok());
    ASSERT_TRUE(CameStepWith(Build::kAvx2, Hyper(), avx2.Tensor(), Scrambled()).ok());
  }
  const size_t bytes = generic.p.size() * sizeof(float);
  EXPECT_EQ(std::memcmp(generic.p.data(), avx2.p.data(), bytes), 0);
  EXPECT_EQ(std::memcmp(generic.m.data(), avx2.m.data(), bytes), 0);
  EXPECT_EQ(generic.r, avx2.r);
  EXPECT_EQ(generic.big_c, avx2.big_c);
  EXPECT_EQ(generic.v, avx2.v);
}

// Matrices of one row or column, several blocks (300x700: 13 blocks of 24 rows, 3 column
// chunks), a batch of matrices, vectors of one and of several blocks, a scalar.
INSTANTIATE_TEST_SUITE_P(Shapes, CameShapes,
                         ::testing::Values(std::vector<int64_t>{5, 7}, std::vector<int64_t>{1, 9},
                                           std::vector<int64_t>{9, 1},
                                           std::vector<int64_t>{300, 700},
                                           std::vector<int64_t>{3, 4, 6},
                                           std::vector<int64_t>{2, 3, 40, 500},
                                           std::vector<int64_t>{13}, std::vector<int64_t>{40000},
                                           std::vector<int64_t>{}));

TEST(Came, BlocksAreCutByShapeAlone) {
  EXPECT_EQ(RowsPerBlock(300, 700), 24);  // ~16K elements a block
  EXPECT_EQ(RowsPerBlock(4096, 4096), 4);
  EXPECT_EQ(RowsPerBlock(3, 100000), 1);
  EXPECT_EQ(RowsPerBlock(8, 4), 8);  // a small matrix is one block
}

// A bfloat16 or float16 parameter with a float32 master copy steps as the float32 parameter
// does; the parameter is the master rounded to nearest.
class CameMaster : public ::testing::TestWithParam<Precision> {};

TEST_P(CameMaster, StepsAsFloat32) {
  const bool bf16 = GetParam() == Precision::kBFloat16;
  auto narrowed = [bf16](float value) {
    return bf16 ? FloatToBFloat16(value) : FloatToFloat16(value);
  };
  Param wide({6, 10});
  std::vector<float> master = wide.p;
  std::vector<uint16_t> narrow;
  for (float value : master) narrow.push_back(narrowed(value));
  Param state({6, 10});
  for (uint32_t step = 1; step <= 5; ++step) {
    wide.NewGrad(step), state.NewGrad(step);
    ASSERT_TRUE(CameStep(Hyper(), wide.Tensor(), SerialFor()).ok());
    CameTensor t = state.Tensor();
    t.param = narrow.data();
    t.param_precision = GetParam();
    t.master = master.data();
    ASSERT_TRUE(CameStep(Hyper(), t, SerialFor()).ok());
  }
  for (size_t idx = 0; idx < master.size(); ++idx) {
    ASSERT_EQ(master[idx], wide.p[idx]) << idx;
    ASSERT_EQ(narrow[idx], narrowed(wide.p[idx])) << idx;
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, CameMaster,
                         ::testing::Values(Precision::kBFloat16, Precision::kFloat16));

// A float16 gradient is widened exactly: the step is the float32 gradient's.
TEST(Came, Float16GradientIsWidened) {
  Param wide({5, 9}), narrow_grad({5, 9});
  wide.NewGrad(1);
  std::vector<uint16_t> half;
  for (float& value : wide.g) {
    half.push_back(FloatToFloat16(value));
    value = Float16ToFloat(half.back());  // the float32 run sees the same values
  }
  ASSERT_TRUE(CameStep(Hyper(), wide.Tensor(), SerialFor()).ok());
  CameTensor t = narrow_grad.Tensor();
  t.grad = half.data();
  t.grad_precision = Precision::kFloat16;
  ASSERT_TRUE(CameStep(Hyper(), t, SerialFor()).ok());
  EXPECT_EQ(wide.p, narrow_grad.p);
}

// An update far below a bfloat16 ulp vanishes rounded to nearest; rounded stochastically the
// parameters move by it on average, and the same seed gives the same bits.
TEST(Came, StochasticRoundingKeepsSmallUpdates) {
  const int64_t n = 200000;
  std::vector<uint16_t> nearest(size_t(n), FloatToBFloat16(1.0f));
  std::vector<uint16_t> stochastic = nearest, again = nearest;
  Param state_a({n}), state_b({n}), state_c({n});
  const CameHyper h = Hyper(/*lr=*/1e-4, /*decay=*/0);  // |step| <= ~1: 1e-4 << ulp 2^-7
  for (Param* state : {&state_a, &state_b, &state_c}) {
    std::fill(state->g.begin(), state->g.end(), 1.0f);  // every element steps by -lr*u
  }
  auto run = [&](Param& state, std::vector<uint16_t>& param, bool stochastic_rounding) {
    CameTensor t = state.Tensor();
    t.param = param.data();
    t.param_precision = Precision::kBFloat16;
    t.grad = state.g.data();
    t.stochastic = stochastic_rounding;
    t.seed = 42;
    ASSERT_TRUE(CameStep(h, t, SerialFor()).ok());
  };
  run(state_a, nearest, false);
  run(state_b, stochastic, true);
  run(state_c, again, true);
  EXPECT_EQ(nearest, std::vector<uint16_t>(size_t(n), FloatToBFloat16(1.0f)));
  EXPECT_EQ(stochastic, again);
  double mean = 0;
  for (uint16_t value : stochastic) mean += BFloat16ToFloat(value);
  mean /= double(n);
  // u = g / sqrt(v) = 1 / sqrt(0.001) ~ 31.6, clipped to RMS 1: m = 0.1, step = lr * 0.1.
  EXPECT_NEAR(mean, 1.0 - 1e-5, 2.5e-6);  // 1 - 1e-5 rounds down 1 time in 390: sd 4e-7
}

TEST(Came, BadArgumentsNamed) {
  Param param({4, 4});
  CameTensor t = param.Tensor();
  CameHyper h = Hyper();
  h.lr = 0;
  EXPECT_NE(CameStep(h, t, SerialFor()).message().find("lr must be a positive number"),
            std::string::npos);
  t.r = nullptr;
  EXPECT_NE(CameStep(Hyper(), t, SerialFor()).message().find("factored state"), std::string::npos);
  t = param.Tensor();
  t.stochastic = true;  // a float32 parameter
  EXPECT_NE(CameStep(Hyper(), t, SerialFor()).message().find("stochastic rounding"),
            std::string::npos);
  Param empty({0, 3});
  EXPECT_TRUE(CameStep(Hyper(), empty.Tensor(), SerialFor()).ok());
}

}  // namespace
}  // namespace upguard::optim

// CAME against the authors' implementation: tests/data/came/ holds its parameters after 20
// steps on closed-form inputs and the sums it printed (README there has the formulas).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "optim/came.h"

namespace upguard::optim {
namespace {

double X(int k, int64_t i, int t) {
  return std::sin(0.37 * double(i) + 1.3 * t + 0.71 * k) +
         0.25 * std::cos(0.113 * double(i) * (k + 1) - 0.5 * t);
}

struct RefParam {
  int k;
  std::vector<int64_t> shape;
  double lr, decay;
  std::vector<float> p, g, m, r, c, big_r, big_c, v;

  RefParam(int index, std::vector<int64_t> dims, double rate, double wd)
      : k(index), shape(std::move(dims)), lr(rate), decay(wd) {
    int64_t n = 1;
    for (int64_t size : shape) n *= size;
    for (int64_t i = 0; i < n; ++i) p.push_back(float(0.1 * X(k, i, 0)));
    g.resize(size_t(n));
    m.assign(size_t(n), 0.0f);
    if (shape.size() >= 2) {
      r.assign(size_t(n / shape.back()), 0.0f), big_r = r;
      c.assign(size_t(n / shape[shape.size() - 2]), 0.0f), big_c = c;
    } else {
      v.assign(size_t(n), 0.0f);
    }
  }

  void Step(int t) {
    const int64_t cols = shape.empty() ? 1 : shape.back();
    for (int64_t i = 0; i < int64_t(p.size()); ++i) {
      const double scale = 1.0 + double((i / cols) % 7) / 3.0;
      const double target = 0.05 * X(k + 3, i, 0);
      g[size_t(i)] = float(scale * (0.5 * (double(p[size_t(i)]) - target) + 0.1 * X(k, i, t)));
    }
    CameTensor tensor;
    tensor.shape = shape;
    tensor.param = p.data(), tensor.grad = g.data(), tensor.m = m.data();
    tensor.r = r.empty() ? nullptr : r.data(), tensor.c = c.empty() ? nullptr : c.data();
    tensor.big_r = big_r.empty() ? nullptr : big_r.data();
    tensor.big_c = big_c.empty() ? nullptr : big_c.data();
    tensor.v = v.empty() ? nullptr : v.data();
    CameHyper hyper;
    hyper.lr = lr, hyper.weight_decay = decay;
    ASSERT_TRUE(CameStep(hyper, tensor, SerialFor()).ok());
  }

  double Sum() const {
    double sum = 0;
    for (float value : p) sum += value;
    return sum;
  }
};

std::vector<float> Reference() {
  const std::string path =
      std::string(UPGUARD_SOURCE_DIR) + "/tests/data/came/official_params_after_20_steps.f32";
  std::ifstream in(path, std::ios::binary);
  std::vector<float> values(2592);
  in.read(reinterpret_cast<char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
  EXPECT_TRUE(in) << path;
  return values;
}

TEST(CameReference, TwentyStepsMatchTheAuthorsImplementation) {
  std::vector<RefParam> params;
  params.emplace_back(0, std::vector<int64_t>{64, 32}, 1e-2, 1e-2);
  params.emplace_back(1, std::vector<int64_t>{32}, 1e-2, 1e-2);
  params.emplace_back(2, std::vector<int64_t>{16, 8, 4}, 5e-3, 0.0);
  // The sums the reference printed (float64 sums of the float32 values).
  const std::vector<std::pair<int, std::vector<double>>> printed = {
      {1, {+3.863416016e-01, +6.361593911e-02, +1.018139925e-01}},
      {2, {+5.104701996e-01, +6.113619683e-02, +3.519880632e-02}},
      {10, {-7.466029315e-01, +3.778692102e-02, -1.200689597e-01}},
      {20, {-2.959952867e-01, -1.851104130e-02, -1.504153494e-01}}};
  size_t next = 0;
  for (int t = 1; t <= 20; ++t) {
    for (RefParam& param : params) param.Step(t);
    if (next < printed.size() && printed[next].first == t) {
      for (size_t k = 0; k < params.size(); ++k) {
        // Printed to 10 digits; the values are float32 (an ulp of 0.1 is 7e-9).
        EXPECT_NEAR(params[k].Sum(), printed[next].second[k], 2e-8) << "step " << t << " p" << k;
      }
      ++next;
    }
  }
  // The 1-D regression: the older release scaled 1-D momentum by lr (p1's sum +4.9356e-02).
  EXPECT_GT(std::abs(params[1].Sum() - 4.935638711e-02), 1e-2);
  const std::vector<float> reference = Reference();
  size_t at = 0;
  double worst = 0;
  size_t same = 0;
  for (const RefParam& param : params) {
    for (float value : param.p) {
      const double expected = reference[at++];
      const double rel = std::abs(double(value) - expected) / std::max(std::abs(expected), 1e-9);
      same += double(value) == expected;
      worst = std::max(worst, rel);
    }
  }
  EXPECT_EQ(at, reference.size());
  EXPECT_LE(worst, 1e-6) << "max relative error";
  std::printf(
      "CAME vs the reference after 20 steps: max relative error %.3g, %zu of %zu values "
      "the same bits\n",
      worst, same, reference.size());
}

}  // namespace
}  // namespace upguard::optim

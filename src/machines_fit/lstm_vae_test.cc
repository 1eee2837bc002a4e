#include "machines_fit/lstm_vae.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "machines/machine_model.h"

namespace upguard::machines {
namespace {

// Windows of 8 points: a level that moves slowly from window to window (as a healthy metric
// does over a run) plus noise, from a fixed LCG.
std::vector<float> HealthyWindows(size_t count, uint64_t seed) {
  std::vector<float> out;
  uint64_t state = seed;
  auto noise = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<float>(static_cast<double>(state >> 11) / double(1ULL << 53) - 0.5);
  };
  for (size_t row = 0; row < count; ++row) {
    const float level = 0.3f + 0.4f * static_cast<float>(row % 50) / 50.0f;
    for (size_t t = 0; t < 8; ++t) out.push_back(level + 0.06f * noise());
  }
  return out;
}

double Distance(const std::vector<float>& a, size_t i, const std::vector<float>& b, size_t j,
                size_t dims) {
  double sum = 0;
  for (size_t d = 0; d < dims; ++d) {
    const double diff = a[i * dims + d] - b[j * dims + d];
    sum += diff * diff;
  }
  return std::sqrt(sum);
}

class LstmVaeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    TrainOptions options;
    options.steps = 400;
    StatusOr<TrainedDenoiser> trained = TrainDenoiser(HealthyWindows(2000, 7), 8, options);
    ASSERT_TRUE(trained.ok()) << trained.status().message();
    trained_ = new TrainedDenoiser(std::move(*trained));
  }
  static void TearDownTestSuite() { delete trained_; }
  static TrainedDenoiser* trained_;
};
TrainedDenoiser* LstmVaeTest::trained_ = nullptr;

TEST_F(LstmVaeTest, PlainForwardMatchesLibtorch) {
  const Denoiser& d = trained_->denoiser;
  ASSERT_TRUE(d.Check("test").ok());
  const std::vector<float> windows = HealthyWindows(37, 99);  // not a multiple of the block
  std::vector<float> plain(37 * d.latent);
  d.EmbedBatch(windows.data(), 37, 8, plain.data());
  const std::vector<float> torch = TorchEmbed(d, windows, 8);
  ASSERT_EQ(torch.size(), plain.size());
  for (size_t idx = 0; idx < plain.size(); ++idx) EXPECT_NEAR(plain[idx], torch[idx], 2e-4);
}

TEST_F(LstmVaeTest, ItLearnsTheLevelAndLeavesTheNoise) {
  EXPECT_LT(trained_->reconstruction_rmse, 0.05);  // the noise itself is 0.017 RMS
  const Denoiser& d = trained_->denoiser;
  // Two windows at one level with different noise embed close; a window 0.2 lower far.
  std::vector<float> windows = HealthyWindows(3, 5);
  for (size_t t = 0; t < 8; ++t) {
    windows[8 + t] = windows[t] + (t % 2 ? 0.03f : -0.03f);
    windows[16 + t] = windows[t] - 0.2f;
  }
  std::vector<float> mu(3 * d.latent);
  d.EmbedBatch(windows.data(), 3, 8, mu.data());
  const double same = Distance(mu, 0, mu, 1, d.latent);
  const double shifted = Distance(mu, 0, mu, 2, d.latent);
  EXPECT_GT(shifted, 4 * same) << "same level " << same << ", shifted " << shifted;
}

TEST_F(LstmVaeTest, TheModelFileRoundTripsTheWeightsExactly) {
  MachineModel model;
  Denoiser d = trained_->denoiser;
  d.lo = 0.1;
  d.hi = 0.9;
  model.metrics.emplace("cpu_util", d);
  model.priority = {"cpu_util"};
  const std::string path = ::testing::TempDir() + "/model.json";
  ASSERT_TRUE(WriteMachineModel(model, path).ok());
  StatusOr<MachineModel> read = ReadMachineModel(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const Denoiser* back = read->Find("cpu_util.eth0");  // falls back on the base name
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->w_hh, d.w_hh);
  EXPECT_EQ(back->b_mu, d.b_mu);
  EXPECT_EQ(back->lo, 0.1);
  std::remove(path.c_str());
}

TEST(LstmVaeTrainTest, TooFewWindowsIsAClearError) {
  StatusOr<TrainedDenoiser> trained = TrainDenoiser(std::vector<float>(8 * 5, 0.5f), 8, {});
  ASSERT_FALSE(trained.ok());
  EXPECT_NE(trained.status().message().find("too few healthy windows"), std::string::npos);
}

}  // namespace
}  // namespace upguard::machines

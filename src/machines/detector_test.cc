#include "machines/detector.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace upguard::machines {
namespace {

// A deterministic uniform noise in [-1, 1) (a fixed LCG: the same on every platform).
class Noise {
 public:
  explicit Noise(uint64_t seed) : state_(seed) {}
  double Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state_ >> 11) / static_cast<double>(1ULL << 52) - 1.0;
  }

 private:
  uint64_t state_;
};

// `machines` machines, metrics "cpu" (around 0.5) and "net" (around 100), one point a second
// with noise; from `fault_at` on, machine `faulty`'s cpu is `shift` higher.
Grid Cluster(size_t machines, size_t length, int faulty, size_t fault_at, double shift,
             uint64_t seed = 1) {
  Grid grid;
  grid.length = length;
  grid.metrics = {"net", "cpu"};
  for (size_t machine = 0; machine < machines; ++machine) {
    grid.machines.push_back("node-" + std::to_string(machine));
  }
  grid.values.resize(grid.metrics.size() * machines * length);
  Noise noise(seed);
  for (size_t machine = 0; machine < machines; ++machine) {
    for (size_t point = 0; point < length; ++point) {
      const double wave = 0.1 * ((point / 30) % 2);  // every machine steps together
      double cpu = 0.5 + wave + 0.03 * noise.Next();
      if (static_cast<int>(machine) == faulty && point >= fault_at) cpu += shift;
      grid.values[(1 * machines + machine) * length + point] = cpu;
      grid.values[(0 * machines + machine) * length + point] = 100 + 5 * noise.Next();
    }
  }
  return grid;
}

TEST(DetectorTest, NamesTheMachineMetricAndTimeOfAShift) {
  const Grid grid = Cluster(8, 400, /*faulty=*/5, /*fault_at=*/200, /*shift=*/0.3);
  DetectOptions options;
  const DetectResult result = Detect(grid, RangesOf(grid), options);
  ASSERT_EQ(result.detections.size(), 1u);
  const Detection& found = result.detections[0];
  EXPECT_EQ(found.machine, 5u);
  EXPECT_EQ(found.metrics, std::vector<size_t>{1});  // cpu, though net is tried first
  EXPECT_GE(found.first_point, 200u);
  EXPECT_LE(found.first_point, 200u + options.window);
  EXPECT_EQ(found.alert_point, found.first_point + options.continuity - 1);
  EXPECT_EQ(found.last_point, 399u);
}

TEST(DetectorTest, HealthyClustersRaiseNothing) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    for (size_t machines : {4u, 8u, 32u}) {
      const Grid grid = Cluster(machines, 600, /*faulty=*/-1, 0, 0, seed);
      const DetectResult result = Detect(grid, RangesOf(grid), DetectOptions{});
      EXPECT_TRUE(result.detections.empty()) << machines << " machines, seed " << seed;
    }
  }
}

TEST(DetectorTest, FourMachinesAreEnough) {
  const Grid grid = Cluster(4, 300, /*faulty=*/0, /*fault_at=*/100, /*shift=*/0.3);
  const DetectResult result = Detect(grid, RangesOf(grid), DetectOptions{});
  ASSERT_EQ(result.detections.size(), 1u);
  EXPECT_EQ(result.detections[0].machine, 0u);
}

TEST(DetectorTest, AOneSampleBlipIsNoFlagAFaultOfTwoIs) {
  // A one-point spike of node-3's cpu sits in `window` windows (8), enough for any continuity
  // check up to 8, but in each it is one point carrying all of the machine's departure: no flag.
  Grid grid = Cluster(8, 100, /*faulty=*/-1, 0, 0);
  grid.values[(1 * 8 + 3) * 100 + 50] += 0.6;
  DetectOptions options;
  options.continuity = 1;
  DetectResult result = Detect(grid, RangesOf(grid), options);
  EXPECT_TRUE(result.flags.empty());
  EXPECT_TRUE(result.detections.empty());
  // The same spike lasting from point 50 on is flagged from its second point.
  for (size_t point = 51; point < 100; ++point) grid.values[(1 * 8 + 3) * 100 + point] += 0.6;
  result = Detect(grid, RangesOf(grid), options);
  ASSERT_FALSE(result.detections.empty());
  EXPECT_EQ(result.detections[0].machine, 3u);
  EXPECT_EQ(result.detections[0].metrics, std::vector<size_t>{1});
  EXPECT_LE(result.detections[0].first_point, 52u);
}

TEST(DetectorTest, AnIntermittentFaultIsFlaggedOnceASecondPointDeparts) {
  // A rank stopped every other second: node-3's cpu drops fully in one sample and by a third as
  // much in the next (stopped part of that second), then again two samples later. With the
  // first sample left out the second still stands apart: flagged by the window ending there.
  Grid grid = Cluster(8, 100, /*faulty=*/-1, 0, 0);
  for (size_t point = 50; point < 100; point += 3) {
    grid.values[(1 * 8 + 3) * 100 + point] -= 0.6;
    if (point + 1 < 100) grid.values[(1 * 8 + 3) * 100 + point + 1] -= 0.2;
  }
  DetectOptions options;
  options.continuity = 1;
  const DetectResult result = Detect(grid, RangesOf(grid), options);
  ASSERT_FALSE(result.detections.empty());
  EXPECT_EQ(result.detections[0].machine, 3u);
  EXPECT_EQ(result.detections[0].first_point, 51u);
}

TEST(DetectorTest, WithoutALearnedPriorityTheStrongestFlagWins) {
  // From point 200 node-2's net sits a little above its peers and node-5's cpu far above. The
  // grid's order tries net first; only a priority learned from labels lets it take the window.
  Grid grid = Cluster(8, 400, /*faulty=*/5, /*fault_at=*/200, /*shift=*/1.5);
  for (size_t point = 200; point < 400; ++point) grid.values[(0 * 8 + 2) * 400 + point] += 15;
  DetectOptions options;
  DetectResult result = Detect(grid, RangesOf(grid), options);
  ASSERT_EQ(result.detections.size(), 1u);
  EXPECT_EQ(result.detections[0].machine, 5u);
  EXPECT_EQ(result.detections[0].metrics, std::vector<size_t>{1});
  options.metric_order = {0, 1};
  options.priority_learned = true;
  result = Detect(grid, RangesOf(grid), options);
  ASSERT_FALSE(result.detections.empty());
  EXPECT_EQ(result.detections[0].machine, 2u);
  EXPECT_EQ(result.detections[0].metrics, std::vector<size_t>{0});
}

TEST(DetectorTest, MachinesWithGapsSitOutTheirWindows) {
  Grid grid = Cluster(6, 200, /*faulty=*/2, /*fault_at=*/100, /*shift=*/0.3);
  for (size_t point = 0; point < 200; ++point) {
    grid.values[(1 * 6 + 4) * 200 + point] = std::nan("");  // node-4 has no cpu at all
  }
  const DetectResult result = Detect(grid, RangesOf(grid), DetectOptions{});
  ASSERT_EQ(result.detections.size(), 1u);
  EXPECT_EQ(result.detections[0].machine, 2u);
}

TEST(DetectorTest, MahalanobisBaselineFindsALargeShift) {
  const Grid grid = Cluster(8, 300, /*faulty=*/6, /*fault_at=*/150, /*shift=*/0.4);
  DetectOptions options;
  options.distance = Distance::kMahalanobis;
  const DetectResult result = Detect(grid, RangesOf(grid), options);
  ASSERT_FALSE(result.detections.empty());
  EXPECT_EQ(result.detections[0].machine, 6u);
}

// A denoiser whose encoder is a plain, monotone function of the window (every gate reads the
// input alike): enough to compare embeddings by, with no fit.
Denoiser PlainDenoiser(double lo, double hi, double score_limit) {
  Denoiser d;
  d.lo = lo;
  d.hi = hi;
  d.w_ih.assign(4 * d.hidden, 1.0f);
  d.w_hh.assign(4 * d.hidden * d.hidden, 0.0f);
  d.b.assign(4 * d.hidden, 0.0f);
  d.w_mu.assign(d.latent * d.hidden, 0.0f);
  for (size_t row = 0; row < d.latent; ++row) d.w_mu[row * d.hidden + row % d.hidden] = 1.0f;
  d.b_mu.assign(d.latent, 0.0f);
  d.score_limit = score_limit;
  return d;
}

// Six machines, one metric `name`, 60 points of value(machine, point).
template <typename Value>
Grid OneMetric(const std::string& name, Value value) {
  Grid grid;
  grid.length = 60;
  grid.metrics = {name};
  for (size_t machine = 0; machine < 6; ++machine) {
    grid.machines.push_back("node-" + std::to_string(machine));
    for (size_t point = 0; point < grid.length; ++point) {
      grid.values.push_back(value(machine, point));
    }
  }
  return grid;
}

TEST(DetectorTest, WhatTheDenoiserCallsFarMustBeFarEnoughRaw) {
  // Memory hardly moved in the fit, so its learned score limit is ~0: node-2 sitting 2 % of the
  // range above its peers is an offset, not a fault, nor is 15 % of the range when that is 2.7 %
  // of the level (a range of 20 around 100); 9 % of the level is.
  MachineModel model;
  model.metrics["mem"] = PlainDenoiser(90, 110, /*score_limit=*/1e-6);
  ASSERT_TRUE(model.metrics["mem"].Check("mem").ok());
  for (const double offset : {0.4, 3.0, 9.0}) {
    const Grid grid = OneMetric("mem", [offset](size_t machine, size_t point) {
      const double wave = 0.5 * static_cast<double>((point / 10) % 2);
      return 100 + wave + (machine == 2 && point >= 20 ? offset : 0.0);
    });
    DetectOptions options;
    options.model = &model;
    const DetectResult result = Detect(grid, RangesOf(grid), options);
    if (offset < 5) {
      EXPECT_TRUE(result.flags.empty()) << "offset " << offset;
    } else {
      ASSERT_EQ(result.detections.size(), 1u);
      EXPECT_EQ(result.detections[0].machine, 2u);
    }
  }
}

TEST(DetectorTest, AByteRateMustDepartByAMegabyteASecond) {
  // Healthy disks write 8 KB/s in whole pages; node-2 writing two pages a second more is a
  // logger, not a fault, by the raw distance or by a denoiser fit on 4-12 KB/s; 50 MB/s more is
  // a fault by either, though the encoder's clamp holds it a few ranges out.
  MachineModel model;
  model.metrics["disk_write_bytes_per_second"] = PlainDenoiser(4096, 12288, /*score_limit=*/1e-6);
  for (const double offset : {8192.0, 50e6}) {
    const Grid grid =
        OneMetric("disk_write_bytes_per_second", [offset](size_t machine, size_t point) {
          return 8192 + (machine == 2 && point >= 20 ? offset : 0.0);
        });
    for (const MachineModel* with : std::vector<const MachineModel*>{nullptr, &model}) {
      DetectOptions options;
      options.model = with;
      const DetectResult result = Detect(grid, RangesOf(grid), options);
      if (offset < kLeastBytesPerSecond) {
        EXPECT_TRUE(result.flags.empty()) << "offset " << offset << " model " << (with != nullptr);
      } else {
        ASSERT_EQ(result.detections.size(), 1u) << "model " << (with != nullptr);
        EXPECT_EQ(result.detections[0].machine, 2u);
        EXPECT_EQ(result.detections[0].first_point, 21u);  // the window with a second point out
      }
    }
  }
  EXPECT_EQ(LeastMeaningfulDeparture("network_receive_bytes_per_second.eth0"), 1 << 20);
  EXPECT_EQ(LeastMeaningfulDeparture("network_receive_packets_per_second.eth0"), 0.0);
}

TEST(DetectorTest, AWholeJobStallIsNoMachinesFault) {
  // Every machine's step time grows to 20 s while the whole job hangs; node-2's reads 0.02 s
  // more (the healthy range's width) and it resumes one sample before the others. Far outside the
  // healthy range every machine is alike "far out" (the encoder's clamp), so nothing flags; taken
  // unclamped, node-2 would be 1 range apart.
  MachineModel model;
  model.metrics["step"] = PlainDenoiser(0.03, 0.05, /*score_limit=*/1e-6);
  const Grid grid = OneMetric("step", [](size_t machine, size_t point) {
    const size_t resume = machine == 2 ? 40 : 41;
    if (point >= 20 && point < resume) {
      return 1.0 + static_cast<double>(point - 20) + (machine == 2 ? 0.02 : 0.0);
    }
    return 0.04 + 0.001 * static_cast<double>((point + machine) % 3);
  });
  DetectOptions options;
  options.model = &model;
  const DetectResult result = Detect(grid, RangesOf(grid), options);
  EXPECT_TRUE(result.flags.empty());
}

}  // namespace
}  // namespace upguard::machines

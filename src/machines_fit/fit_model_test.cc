#include "machines_fit/fit_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "machines/detector.h"

namespace upguard::machines {
namespace {

// `machines` machines, metrics "net" (noise around 100), "cpu" (0.5 plus a shared wave and
// noise) and "disk" (noise around 20); from `fault_at` on, machine `faulty`'s cpu drops by 0.3
// (a CPU quota cut) and its disk moves by a little (a bystander metric).
Grid Cluster(size_t machines, size_t length, int faulty, size_t fault_at, uint64_t seed) {
  Grid grid;
  grid.start = 1000;
  grid.length = length;
  grid.metrics = {"net", "cpu", "disk"};
  for (size_t m = 0; m < machines; ++m) grid.machines.push_back("node-" + std::to_string(m));
  grid.values.resize(grid.metrics.size() * machines * length);
  uint64_t state = seed;
  auto noise = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / double(1ULL << 52) - 1.0;
  };
  for (size_t m = 0; m < machines; ++m) {
    for (size_t p = 0; p < length; ++p) {
      const bool fault = static_cast<int>(m) == faulty && p >= fault_at;
      const double wave = 0.1 * std::sin(static_cast<double>(p) / 20.0);
      grid.values[(0 * machines + m) * length + p] = 100 + 5 * noise();
      grid.values[(1 * machines + m) * length + p] =
          0.5 + wave + 0.03 * noise() - (fault ? 0.3 : 0.0);
      grid.values[(2 * machines + m) * length + p] = 20 + 2 * noise() + (fault ? 0.5 : 0.0);
    }
  }
  return grid;
}

MachineModel Fit(const Grid& grid, const std::vector<FaultLabel>& labels) {
  FitOptions options;
  options.train.steps = 300;
  StatusOr<MachineModel> model = FitMachineModel(grid, labels, options, nullptr);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? *model : MachineModel{};
}

TEST(FitModelTest, MinderNamesTheFaultyMachineAndStaysQuietWhenHealthy) {
  const MachineModel model = Fit(Cluster(6, 500, -1, 0, 1), {});
  ASSERT_EQ(model.metrics.size(), 3u);
  EXPECT_EQ(model.priority_source, "default");
  for (const auto& [name, d] : model.metrics) EXPECT_GT(d.score_limit, 0) << name;
  DetectOptions options;
  options.model = &model;
  const Grid faulty = Cluster(6, 400, /*faulty=*/4, /*fault_at=*/200, 2);
  options.metric_order = PriorityOrder(faulty, model);
  DetectResult result = Detect(faulty, RangesOf(faulty), options);
  ASSERT_EQ(result.detections.size(), 1u);
  EXPECT_EQ(result.detections[0].machine, 4u);
  EXPECT_EQ(result.detections[0].metrics[0], 1u);  // cpu
  EXPECT_GE(result.detections[0].first_point, 200u);
  EXPECT_LE(result.detections[0].alert_point, 200u + 10);
  for (uint64_t seed = 3; seed < 6; ++seed) {
    const Grid healthy = Cluster(6, 400, -1, 0, seed);
    result = Detect(healthy, RangesOf(healthy), options);
    EXPECT_TRUE(result.detections.empty()) << "seed " << seed;
  }
}

TEST(FitModelTest, LabelsTeachThePriorityAndStayOutOfTheDenoisers) {
  const Grid history = Cluster(6, 500, /*faulty=*/2, /*fault_at=*/300, 7);
  const std::vector<FaultLabel> labels{{"node-2", 1300, 1499, "cpu_quota"}};
  const MachineModel model = Fit(history, labels);
  EXPECT_EQ(model.priority_source, "labels");
  ASSERT_EQ(model.priority.size(), 3u);
  EXPECT_EQ(model.priority[0], "cpu");
  // The labelled points are not in the cpu range: the cut would have pulled its 1st percentile
  // down to about 0.1.
  EXPECT_GT(model.metrics.at("cpu").lo, 0.3);
}

TEST(FitModelTest, FewerThanThreeMachinesIsAClearError) {
  StatusOr<MachineModel> model = FitMachineModel(Cluster(2, 100, -1, 0, 1), {}, {}, nullptr);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("at least 3 machines"), std::string::npos);
}

}  // namespace
}  // namespace upguard::machines

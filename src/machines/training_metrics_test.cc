#include "machines/training_metrics.h"

#include <gtest/gtest.h>

#include <map>

namespace upguard::machines {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

std::map<std::string, double> ByName(const std::vector<MetricValue>& metrics) {
  std::map<std::string, double> out;
  for (const MetricValue& metric : metrics) out[metric.CsvName()] = metric.value;
  return out;
}

TEST(CoveredFraction, UnionOfOverlappingSpansClippedToTheInterval) {
  // (10, 20]: [8, 12) clipped to 2 s, [11, 14) adds 2 s, [13, 13.5) nothing new, [16, ...) in
  // flight adds 4 s: 8 of 10 s.
  const std::vector<CollectiveSpan> spans = {{8 * kSecond, 12 * kSecond},
                                             {11 * kSecond, 14 * kSecond},
                                             {13 * kSecond, 13 * kSecond + kSecond / 2},
                                             {16 * kSecond, 0},
                                             {2 * kSecond, 5 * kSecond}};
  EXPECT_DOUBLE_EQ(CoveredFraction(10 * kSecond, 20 * kSecond, spans), 0.8);
  EXPECT_DOUBLE_EQ(CoveredFraction(10 * kSecond, 20 * kSecond, {}), 0);
  EXPECT_DOUBLE_EQ(CoveredFraction(10 * kSecond, 20 * kSecond, {{0, 0}}), 1);
}

TEST(TrainingMetrics, StepTimeIsTheMeanOfTheStepsThatEndedAndGrowsWhileOneHangs) {
  TrainingMetrics training;
  // First sight: steps 3 done, the third ended at 0.9 s. Nothing to say yet.
  EXPECT_TRUE(training.Update(1 * kSecond, {{0, 3, kSecond * 9 / 10, {}}}).empty());
  // Three steps more, the last ending at 1.8 s: 0.3 s each.
  auto second = ByName(training.Update(2 * kSecond, {{0, 6, kSecond * 18 / 10, {}}}));
  EXPECT_NEAR(second["training_step_seconds"], 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(second["collective_wait_fraction"], 0);
  // No step ended; the one under way has taken 0.2 s: the last value holds.
  auto held = ByName(training.Update(2 * kSecond, {{0, 6, kSecond * 18 / 10, {}}}));
  EXPECT_NEAR(held["training_step_seconds"], 0.3, 1e-12);
  // Still none 2.2 s after the last end: the step takes at least that long.
  auto hung = ByName(training.Update(4 * kSecond, {{0, 6, kSecond * 18 / 10, {}}}));
  EXPECT_NEAR(hung["training_step_seconds"], 2.2, 1e-12);
}

TEST(TrainingMetrics, SlowestRankAndMeanWait) {
  TrainingMetrics training;
  training.Update(10 * kSecond, {{0, 1, 10 * kSecond, {}}, {1, 1, 10 * kSecond, {}}});
  // Rank 0 (the straggler) steps in 0.5 s and waits 0.2 s; rank 1 also steps in 0.5 s but
  // waits 0.6 s for it. Rank 2 appears: no step time yet, and its wait counts.
  auto metrics = ByName(training.Update(
      11 * kSecond, {{0, 3, 11 * kSecond, {{10 * kSecond, 10 * kSecond + kSecond / 5}}},
                     {1, 3, 11 * kSecond, {{10 * kSecond, 10 * kSecond + kSecond * 6 / 10}}},
                     {2, 0, 0, {{10 * kSecond, 10 * kSecond + kSecond * 4 / 10}}}}));
  EXPECT_NEAR(metrics["training_step_seconds"], 0.5, 1e-12);
  EXPECT_NEAR(metrics["collective_wait_fraction"], (0.2 + 0.6 + 0.4) / 3, 1e-12);
}

TEST(TrainingMetrics, FewerStepsIsANewRunAndStartsAgain) {
  TrainingMetrics training;
  training.Update(1 * kSecond, {{0, 10, kSecond, {}}});
  EXPECT_EQ(
      ByName(training.Update(2 * kSecond, {{0, 12, 2 * kSecond, {}}}))["training_step_seconds"],
      0.5);
  // The ring was made again by a new run: its first step says nothing of the old run's.
  EXPECT_EQ(ByName(training.Update(3 * kSecond, {{0, 1, 3 * kSecond, {}}}))
                .count("training_step_seconds"),
            0u);
  EXPECT_NEAR(
      ByName(training.Update(4 * kSecond, {{0, 3, 4 * kSecond, {}}}))["training_step_seconds"], 0.5,
      1e-12);
}

}  // namespace
}  // namespace upguard::machines

#include "diff/setup_check.h"

#include <gtest/gtest.h>

namespace upguard {
namespace {

TEST(SetupCheckTest, EnvironmentDifferencesInAFixedOrder) {
  const nlohmann::json a = nlohmann::json::parse(R"({
    "torch_version": "1.13.0", "intra_op_threads": 1, "deterministic_algorithms": false,
    "hostname": "x", "argv": ["a"],
    "env": {"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}})");
  const nlohmann::json b = nlohmann::json::parse(R"({
    "torch_version": "1.13.0", "intra_op_threads": 2, "deterministic_algorithms": true,
    "hostname": "y", "argv": ["b"],
    "env": {"OMP_NUM_THREADS": "2", "MKL_CBWR": "AVX2"}})");
  std::vector<std::string> texts;
  for (const EnvironmentDifference& d : CompareEnvironment(a, b)) texts.push_back(d.Text());
  // hostname and argv are not numerics; env variables by name, unset spelled out.
  EXPECT_EQ(texts, (std::vector<std::string>{"intra_op_threads 1 vs 2",
                                             "deterministic_algorithms false vs true",
                                             "MKL_CBWR (unset) vs AVX2", "OMP_NUM_THREADS 1 vs 2",
                                             "PYTHONHASHSEED 0 vs (unset)"}));
  EXPECT_TRUE(CompareEnvironment(a, a).empty());
  EXPECT_TRUE(CompareEnvironment(nlohmann::json::object(), nlohmann::json::object()).empty());
}

}  // namespace
}  // namespace upguard

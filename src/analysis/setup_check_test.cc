#include "analysis/setup_check.h"

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

TEST(SetupCheckTest, BackendFlagsNamedByTheirTorchSpelling) {
  const nlohmann::json a = nlohmann::json::parse(R"json({
    "deterministic_algorithms": false, "cudnn_deterministic": false,
    "backend_flags": {"torch.backends.mkldnn.enabled": "True", "flush_denormal": "False",
                      "torch.are_deterministic_algorithms_enabled()": "False",
                      "torch.get_float32_matmul_precision()": "highest"},
    "backend_flags_at_start": {"torch.backends.mkldnn.enabled": "True",
                               "flush_denormal": "False",
                               "torch.are_deterministic_algorithms_enabled()": "False",
                               "torch.get_float32_matmul_precision()": "highest"},
    "env": {"OMP_NUM_THREADS": "1"}})json");
  const nlohmann::json b = nlohmann::json::parse(R"json({
    "deterministic_algorithms": true, "cudnn_deterministic": false,
    "backend_flags": {"torch.backends.mkldnn.enabled": "False", "flush_denormal": "False",
                      "torch.are_deterministic_algorithms_enabled()": "True"},
    "backend_flags_at_start": {"torch.backends.mkldnn.enabled": "False",
                               "flush_denormal": "True",
                               "torch.are_deterministic_algorithms_enabled()": "True"},
    "env": {"OMP_NUM_THREADS": "1"}})json");
  std::vector<std::string> texts;
  for (const EnvironmentDifference& d : CompareEnvironment(a, b)) texts.push_back(d.Text());
  // By name; a flag one torch lacks is unset; a flag equal at the end but set differently as
  // step 0 began says when; deterministic_algorithms is named once, as the flag.
  EXPECT_EQ(texts, (std::vector<std::string>{
                       "flush_denormal False vs False (run B: True at start, False at end)",
                       "torch.are_deterministic_algorithms_enabled() False vs True",
                       "torch.backends.mkldnn.enabled True vs False",
                       "torch.get_float32_matmul_precision() highest vs (unset)"}));
  EXPECT_TRUE(CompareEnvironment(a, a).empty());
}

TEST(SetupCheckTest, BackendFlagChangedDuringARunSaysBothReadings) {
  const nlohmann::json a = nlohmann::json::parse(R"json({
    "backend_flags": {"torch.backends.mkldnn.enabled": "True"}})json");
  const nlohmann::json b = nlohmann::json::parse(R"json({
    "backend_flags": {"torch.backends.mkldnn.enabled": "False"},
    "backend_flags_at_start": {"torch.backends.mkldnn.enabled": "True"}})json");
  const std::vector<EnvironmentDifference> diffs = CompareEnvironment(a, b);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].Text(),
            "torch.backends.mkldnn.enabled True vs False (run B: True at start, False at end)");
  std::vector<std::string> texts;
  for (const EnvironmentDifference& d : CompareEnvironment(b, b)) texts.push_back(d.Text());
  EXPECT_TRUE(texts.empty());
  texts.clear();
  for (const EnvironmentDifference& d : CompareEnvironment(b, a)) texts.push_back(d.Text());
  EXPECT_EQ(texts, (std::vector<std::string>{"torch.backends.mkldnn.enabled False vs True "
                                             "(run A: True at start, False at end)"}));
}

TEST(SetupCheckTest, ARunWithoutBackendFlagsKeepsTheOlderKeys) {
  // Recorded by an older upguard: no backend flags, so none is named, and the top-level
  // deterministic flag is compared as before.
  const nlohmann::json a = nlohmann::json::parse(R"json({"deterministic_algorithms": false})json");
  const nlohmann::json b = nlohmann::json::parse(R"json({"deterministic_algorithms": true,
    "backend_flags": {"torch.backends.mkldnn.enabled": "True"}})json");
  std::vector<std::string> texts;
  for (const EnvironmentDifference& d : CompareEnvironment(a, b)) texts.push_back(d.Text());
  EXPECT_EQ(texts, (std::vector<std::string>{"deterministic_algorithms false vs true"}));
}

}  // namespace
}  // namespace upguard

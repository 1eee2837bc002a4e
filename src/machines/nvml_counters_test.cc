#include "machines/nvml_counters.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>

namespace upguard::machines {
namespace {

// The stand-in libnvidia-ml (fake_nvml.cc), built beside this binary by src/machines.
std::string FakeNvml() {
  char self[PATH_MAX] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) return "";
  return (std::filesystem::path(self).parent_path() / "testdata/libupguard_fake_nvml.so").string();
}

std::map<std::string, double> ByCsvName(const std::vector<MetricValue>& metrics) {
  std::map<std::string, double> out;
  for (const MetricValue& metric : metrics) out[metric.CsvName()] = metric.value;
  return out;
}

TEST(NvmlCounters, ReadsEveryGpuThroughTheLoadedLibrary) {
  ASSERT_TRUE(std::filesystem::exists(FakeNvml())) << FakeNvml();
  StatusOr<std::unique_ptr<NvmlCounters>> gpus = NvmlCounters::Open(FakeNvml());
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  EXPECT_EQ((*gpus)->gpu_count(), 2u);

  std::map<std::string, double> first = ByCsvName((*gpus)->Sample(0));
  EXPECT_EQ(first.size(), 8u);
  EXPECT_DOUBLE_EQ(first["gpu_utilization.gpu0"], 0.37);
  EXPECT_DOUBLE_EQ(first["gpu_power_watts.gpu0"], 123.456);
  EXPECT_DOUBLE_EQ(first["gpu_memory_used_bytes.gpu0"], 5.0 * (1 << 30));
  EXPECT_EQ(first["gpu_xid_errors.gpu0"], 0);
  EXPECT_DOUBLE_EQ(first["gpu_utilization.gpu1"], 1.0);
  EXPECT_DOUBLE_EQ(first["gpu_power_watts.gpu1"], 300);
  // The two XID events waiting on gpu1 are counted once and kept: a count since start.
  EXPECT_EQ(first["gpu_xid_errors.gpu1"], 2);
  std::map<std::string, double> second = ByCsvName((*gpus)->Sample(1));
  EXPECT_EQ(second["gpu_xid_errors.gpu1"], 2);
  // The stand-in refuses gpu1's power on its third reading: that reading is left out.
  std::map<std::string, double> third = ByCsvName((*gpus)->Sample(2));
  EXPECT_EQ(third.count("gpu_power_watts.gpu1"), 0u);
  EXPECT_EQ(third.count("gpu_power_watts.gpu0"), 1u);
}

TEST(NvmlCounters, AbsentLibraryIsNotFoundAndNamed) {
  StatusOr<std::unique_ptr<NvmlCounters>> gpus =
      NvmlCounters::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kNotFound);
  EXPECT_NE(gpus.status().message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST(NvmlCounters, LibraryWithoutNvmlIsNotFound) {
  StatusOr<std::unique_ptr<NvmlCounters>> gpus = NvmlCounters::Open("libm.so.6");
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kNotFound);
  EXPECT_NE(gpus.status().message().find("not libnvidia-ml"), std::string::npos);
}

TEST(NvmlCounters, LibraryFromTheEnvironment) {
  unsetenv("UPGUARD_NVML_LIBRARY");
  EXPECT_EQ(NvmlLibrary(), "libnvidia-ml.so.1");
  setenv("UPGUARD_NVML_LIBRARY", "/opt/fake/libnvidia-ml.so", 1);
  EXPECT_EQ(NvmlLibrary(), "/opt/fake/libnvidia-ml.so");
  unsetenv("UPGUARD_NVML_LIBRARY");
}

}  // namespace
}  // namespace upguard::machines

#include "machines/process_io.h"

#include <gtest/gtest.h>

namespace upguard::machines {
namespace {

// Reading a cgroup's processes is tested through the agent's counters (host_counters_test.cc).
TEST(ProcessIo, GrowthOfTheLiveAllOfTheNewNothingOfTheEnded) {
  const CgroupIo before = {{11, {100, 1000}}, {12, {200, 2000}}};
  const CgroupIo after = {{11, {150, 1500}}, {14, {7, 70}}};
  const ProcessIo moved = IoBetween(before, after);
  EXPECT_EQ(moved.read_bytes, 50u + 7u);
  EXPECT_EQ(moved.write_bytes, 500u + 70u);
  EXPECT_FALSE(ReadCgroupIo("/proc", "/nonexistent/cgroup").ok());
}

}  // namespace
}  // namespace upguard::machines

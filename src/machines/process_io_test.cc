#include "machines/process_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

TEST(ProcessIo, AReapedChildsBytesAreNotCountedTwice) {
  // 12 (a child of 11) had written 300 and writes 200 more before it ends; 11 reaps it and its
  // counters take 12's 500 beside its own 1000 + 50 new.
  const CgroupIo before = {{11, {0, 1000, 1}}, {12, {0, 300, 11}}, {13, {0, 40, 1}}};
  const CgroupIo after = {{11, {0, 1550, 1}}};
  EXPECT_EQ(IoBetween(before, after).write_bytes, 200u + 50u);
}

// The real /proc: this process, listed in a cgroup.procs of a directory made for the test.
TEST(ProcessIo, ThisProcessAndItsParent) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("upguard_pio_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "cgroup.procs") << getpid() << "\n";
  StatusOr<CgroupIo> io = ReadCgroupIo("/proc", dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(io.ok()) << io.status().message();
  ASSERT_EQ(io->count(getpid()), 1u);
  EXPECT_EQ(io->at(getpid()).parent, getppid());
}

}  // namespace
}  // namespace upguard::machines

// The run directory's lock: created exclusively and whole, read back, broken only while it is
// the stale one; a process's identity tells a dead pid (or a reused one) from a live one.
#include "rundir/run_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "base/file.h"
#include "rundir/entries.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("upguard_lock_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

TEST(RunLockTest, OnlyTheFirstCreatesTheLockAndItReadsBackWhole) {
  const std::string dir = TempDir("create");
  const RunLockInfo mine{ThisProcess(), "job-1", ".upguard-record-1", 1700000000};
  EXPECT_TRUE(CreateRunLock(dir, mine).value());
  RunLockInfo other = mine;
  other.owner.pid += 1;
  EXPECT_FALSE(CreateRunLock(dir, other).value());
  std::optional<RunLockInfo> read = ReadRunLock(dir).value();
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->ToJson(), mine.ToJson());
  EXPECT_NE(read->Describe().find("pid " + std::to_string(getpid()) + " on host " + HostName() +
                                  " since "),
            std::string::npos);
  EXPECT_NE(read->Describe().find("(job job-1)"), std::string::npos);
  // Nothing but the lock is left: its temporary files are gone.
  std::vector<std::string> names = ListDirectory(dir).value();
  EXPECT_EQ(names, std::vector<std::string>{kLockName});
}

TEST(RunLockTest, ABrokenLockIsOnlyTheStaleOne) {
  const std::string dir = TempDir("break");
  const RunLockInfo stale{ProcessIdentity{1, "elsewhere", ""}, "", ".upguard-record-1", 1};
  ASSERT_TRUE(CreateRunLock(dir, stale).value());
  const RunLockInfo newer{ThisProcess(), "", ".upguard-record-2", 2};
  EXPECT_FALSE(BreakRunLock(dir, newer).value());  // not the one judged stale: put back
  EXPECT_EQ(ReadRunLock(dir).value()->ToJson(), stale.ToJson());
  EXPECT_TRUE(BreakRunLock(dir, stale).value());
  EXPECT_FALSE(ReadRunLock(dir).value().has_value());
  Status damaged = WriteFileAtomically(dir + "/" + kLockName, "{");
  ASSERT_TRUE(damaged.ok());
  EXPECT_NE(ReadRunLock(dir).status().message().find("is not a lock upguard can read"),
            std::string::npos);
}

TEST(ProcessIdentityTest, ADeadOrReusedPidIsDeadAndAnotherHostsMayLive) {
  EXPECT_TRUE(MayBeAlive(ThisProcess()));
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(MayBeAlive(ProcessIdentity{child, HostName(), ""}));
  ProcessIdentity reused = ThisProcess();
  reused.start = "another-boot:1";
  EXPECT_FALSE(MayBeAlive(reused));
  EXPECT_TRUE(MayBeAlive(ProcessIdentity{child, HostName() + "-other", ""}));
  std::optional<ProcessIdentity> parsed = ProcessIdentity::FromJson(ThisProcess().ToJson());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->ToJson(), ThisProcess().ToJson());
  EXPECT_FALSE(ProcessIdentity::FromJson(nlohmann::json{{"pid", "12"}}).has_value());
}

}  // namespace
}  // namespace upguard

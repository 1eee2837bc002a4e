// A recording never loses a run: the new one is staged and moved in only when finished, a run
// DIR holds is refused without overwrite, only upguard's own files are replaced, one recording
// (or one job) writes into DIR at a time, and a killed one stays findable and recoverable.
#include "rundir/run_staging.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/file.h"
#include "rundir/entries.h"
#include "rundir/hidden_runs.h"
#include "rundir/members.h"
#include "rundir/run_lock.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

constexpr char kUpguardMeta[] = R"({"upguard_version":"0.1.0","argv":["python3","a.py"]})";

std::string TempDir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::temp_directory_path() /
                       ("upguard_staging_test_" + std::to_string(::getpid())) /
                       (std::string(info->name()) + "." + name);
  fs::remove_all(dir);
  return dir.string();
}

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string Read(const std::string& path) { return ReadFileToString(path).value(); }

StagingOptions Options(bool overwrite, const std::string& job = "") {
  StagingOptions options;
  options.overwrite = overwrite;
  options.job = job;
  return options;
}

std::string OwnStaging(const std::string& dir) {
  return dir + "/.upguard-record-" + std::to_string(getpid());
}

// DIR holding an earlier run, its captures and explain re-run, and the user's own files.
std::string OldRunWithUserFiles(const std::string& name) {
  const std::string dir = TempDir(name);
  Write(dir + "/rank0.ugt", "UPGTRACE old trace 0");
  Write(dir + "/rank1.ugt", "UPGTRACE old trace 1");
  Write(dir + "/meta.json", kUpguardMeta);
  Write(dir + "/online.json", "{}");
  Write(dir + "/online.rank1.json", "{}");
  Write(dir + "/captures/rank0.step2.op7.safetensors", "old capture");
  Write(dir + "/explain/rank0.ugt", "UPGTRACE old explain trace");
  Write(dir + "/explain/meta.json", kUpguardMeta);
  Write(dir + "/explain/stderr.txt", "old stderr");
  Write(dir + "/explain/captures/rank0.step2.op7.safetensors", "old capture");
  Write(dir + "/notes.txt", "mine");
  Write(dir + "/captures_mine/a.txt", "mine");
  Write(dir + "/online_notes/b.txt", "mine");
  Write(dir + "/rank0.ugt.bak", "mine");
  return dir;
}

TEST(RunStagingTest, RecognizesOnlyUpguardEntries) {
  const std::string dir = OldRunWithUserFiles("entries");
  for (const char* name : {"rank0.ugt", "rank1.ugt", "meta.json", "online.json",
                           "online.rank1.json", "captures", "explain"}) {
    EXPECT_TRUE(IsUpguardRunEntry(dir, name)) << name;
  }
  for (const char* name : {"notes.txt", "captures_mine", "online_notes", "rank0.ugt.bak"}) {
    EXPECT_FALSE(IsUpguardRunEntry(dir, name)) << name;
  }
  Write(dir + "/captures/mine.txt", "a user file among the captures");
  EXPECT_FALSE(IsUpguardRunEntry(dir, "captures"));
  Write(dir + "/meta.json", R"({"dataset":"not upguard's"})");
  EXPECT_FALSE(IsUpguardRunEntry(dir, "meta.json"));
  Write(dir + "/rank2.ugt", "not a trace");  // named like one, but no upguard trace
  EXPECT_FALSE(IsUpguardRunEntry(dir, "rank2.ugt"));
  Write(dir + "/rank3.ugt", "UPG");  // a header cut short by a killed recorder: upguard's
  EXPECT_TRUE(IsUpguardRunEntry(dir, "rank3.ugt"));
  EXPECT_TRUE(IsRankTraceName("rank12.ugt"));
  EXPECT_FALSE(IsRankTraceName("rank.ugt"));
  EXPECT_FALSE(IsRankTraceName("rank1x.ugt"));
}

TEST(RunStagingTest, RefusesADirectoryHoldingARunWithoutOverwrite) {
  const std::string dir = OldRunWithUserFiles("refuse");
  StatusOr<std::unique_ptr<RunStaging>> staging = RunStaging::Begin(dir, Options(false));
  ASSERT_FALSE(staging.ok());
  EXPECT_NE(staging.status().message().find(dir + " already holds a run"), std::string::npos);
  EXPECT_NE(staging.status().message().find("--overwrite"), std::string::npos);
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "UPGTRACE old trace 0");
  EXPECT_FALSE(fs::exists(OwnStaging(dir)));
  EXPECT_FALSE(fs::exists(dir + "/" + kLockName));
}

TEST(RunStagingTest, RefusesAMetaJsonUpguardDidNotWriteEvenWithOverwrite) {
  const std::string dir = TempDir("foreign");
  Write(dir + "/meta.json", R"({"dataset":"mine"})");
  StatusOr<std::unique_ptr<RunStaging>> staging = RunStaging::Begin(dir, Options(true));
  ASSERT_FALSE(staging.ok());
  EXPECT_NE(staging.status().message().find(dir + "/meta.json was not written by upguard"),
            std::string::npos);
  EXPECT_EQ(Read(dir + "/meta.json"), R"({"dataset":"mine"})");
}

TEST(RunStagingTest, NothingCommittedLeavesTheDirectoryAsItWas) {
  const std::string dir = OldRunWithUserFiles("discard");
  {
    std::unique_ptr<RunStaging> staging = RunStaging::Begin(dir, Options(true)).value();
    EXPECT_EQ(staging->path(), OwnStaging(dir));
    Write(staging->path() + "/stderr.txt", "a command that never imported torch");
  }
  EXPECT_FALSE(fs::exists(OwnStaging(dir)));
  EXPECT_FALSE(fs::exists(dir + "/" + kLockName));
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "UPGTRACE old trace 0");
  EXPECT_EQ(Read(dir + "/meta.json"), kUpguardMeta);
  EXPECT_EQ(Read(dir + "/captures/rank0.step2.op7.safetensors"), "old capture");

  // A directory Begin created (and its parents) goes again.
  const std::string fresh = TempDir("fresh") + "/runs/a";
  { std::unique_ptr<RunStaging> staging = RunStaging::Begin(fresh, Options(false)).value(); }
  EXPECT_FALSE(fs::exists(fs::path(fresh).parent_path().parent_path()));
}

TEST(RunStagingTest, OverwriteReplacesOnlyUpguardFiles) {
  const std::string dir = OldRunWithUserFiles("overwrite");
  std::unique_ptr<RunStaging> staging = RunStaging::Begin(dir, Options(true)).value();
  // While the command runs, the old run is still there.
  EXPECT_EQ(Read(dir + "/rank1.ugt"), "UPGTRACE old trace 1");
  Write(staging->path() + "/rank0.ugt", "UPGTRACE new trace 0");
  Write(staging->path() + "/meta.json", kUpguardMeta);
  Write(staging->path() + "/captures/rank0.step3.op1.safetensors", "new capture");
  ASSERT_TRUE(staging->Finish().ok());
  staging.reset();

  EXPECT_EQ(Read(dir + "/rank0.ugt"), "UPGTRACE new trace 0");
  EXPECT_FALSE(fs::exists(dir + "/rank1.ugt"));  // the old run had two ranks
  EXPECT_FALSE(fs::exists(dir + "/online.json"));
  EXPECT_FALSE(fs::exists(dir + "/online.rank1.json"));
  EXPECT_FALSE(fs::exists(dir + "/explain"));
  EXPECT_FALSE(fs::exists(dir + "/captures/rank0.step2.op7.safetensors"));
  EXPECT_EQ(Read(dir + "/captures/rank0.step3.op1.safetensors"), "new capture");
  EXPECT_FALSE(fs::exists(OwnStaging(dir)));
  EXPECT_FALSE(fs::exists(dir + "/" + kLockName));
  EXPECT_EQ(Read(dir + "/notes.txt"), "mine");
  EXPECT_EQ(Read(dir + "/captures_mine/a.txt"), "mine");
  EXPECT_EQ(Read(dir + "/online_notes/b.txt"), "mine");
  EXPECT_EQ(Read(dir + "/rank0.ugt.bak"), "mine");
}

TEST(RunStagingTest, FoldersHoldingUserFilesAreLeftAndMergedInto) {
  const std::string dir = TempDir("merge");
  Write(dir + "/captures/rank0.step2.op7.safetensors", "old capture");
  Write(dir + "/captures/README", "mine");
  Write(dir + "/explain/notes.txt", "mine");
  Write(dir + "/explain/rank0.ugt", "UPGTRACE old explain trace");
  std::unique_ptr<RunStaging> staging = RunStaging::Begin(dir, Options(false)).value();
  Write(staging->path() + "/rank0.ugt", "UPGTRACE new trace 0");
  Write(staging->path() + "/captures/rank0.step3.op1.safetensors", "new capture");
  ASSERT_TRUE(staging->Finish().ok());
  EXPECT_EQ(Read(dir + "/captures/README"), "mine");
  EXPECT_EQ(Read(dir + "/captures/rank0.step2.op7.safetensors"), "old capture");
  EXPECT_EQ(Read(dir + "/captures/rank0.step3.op1.safetensors"), "new capture");
  EXPECT_EQ(Read(dir + "/explain/notes.txt"), "mine");
  EXPECT_EQ(Read(dir + "/explain/rank0.ugt"), "UPGTRACE old explain trace");
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "UPGTRACE new trace 0");
}

TEST(RunStagingTest, AFileInDirsPlaceIsRefused) {
  const std::string dir = TempDir("file");
  Write(dir, "a file");
  StatusOr<std::unique_ptr<RunStaging>> staging = RunStaging::Begin(dir, Options(true));
  ASSERT_FALSE(staging.ok());
  EXPECT_NE(staging.status().message().find("not a directory"), std::string::npos);
}

// The pid of a process that ran and is gone (reaped): what a killed recorder leaves behind.
int64_t DeadPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

// DIR as `upguard record` leaves it when it was killed with its training: the lock and the
// staging directory with a trace, its member file naming a process that no longer runs.
std::string KilledRecording(const std::string& dir, int64_t pid) {
  const std::string staging = dir + "/.upguard-record-" + std::to_string(pid);
  Write(staging + "/rank0.ugt", "UPGTRACE interrupted trace");
  Write(staging + "/meta.json", kUpguardMeta);
  ProcessIdentity dead{pid, HostName(), ""};
  EXPECT_TRUE(AddMember(staging, dead, "upguard record").ok());
  EXPECT_TRUE(CreateRunLock(dir, RunLockInfo{dead, "", fs::path(staging).filename(), 1}).value());
  return staging;
}

TEST(RunStagingTest, ASecondRecordingIsRefusedNamingTheFirst) {
  const std::string dir = TempDir("busy");
  std::unique_ptr<RunStaging> first = RunStaging::Begin(dir, Options(false)).value();
  for (bool overwrite : {false, true}) {
    StatusOr<std::unique_ptr<RunStaging>> second = RunStaging::Begin(dir, Options(overwrite));
    ASSERT_FALSE(second.ok());
    const std::string message = second.status().message();
    EXPECT_NE(message.find(dir + " is being recorded into by pid " + std::to_string(getpid()) +
                           " on host " + HostName()),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("--job"), std::string::npos) << message;
  }
  // The refused ones took nothing away from the first.
  EXPECT_TRUE(fs::is_directory(first->path()));
  Write(first->path() + "/rank0.ugt", "UPGTRACE first");
  ASSERT_TRUE(first->Finish().ok());
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "UPGTRACE first");
  EXPECT_FALSE(fs::exists(dir + "/" + kLockName));
}

// Two processes of one job (here a forked child, the job's second host or rank) share the
// staging directory; the one that finishes last moves both ranks in.
TEST(RunStagingTest, TheProcessesOfOneJobRecordIntoOneDirectory) {
  const std::string dir = TempDir("job");
  std::unique_ptr<RunStaging> first = RunStaging::Begin(dir, Options(false, "job-7")).value();
  Write(first->path() + "/rank0.ugt", "UPGTRACE rank 0");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    StatusOr<std::unique_ptr<RunStaging>> joined = RunStaging::Begin(dir, Options(false, "job-7"));
    if (!joined.ok() || (*joined)->path() != first->path()) _exit(3);
    Write((*joined)->path() + "/rank1.ugt", "UPGTRACE rank 1");
    StatusOr<FinishOutcome> done = (*joined)->Finish();
    const bool left = done.ok() && done->result == FinishOutcome::Result::kLeftToOthers;
    (void)!write(pipe_fds[1], "x", 1);
    _exit(left ? 0 : 4);
  }
  char byte;
  ASSERT_EQ(read(pipe_fds[0], &byte, 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(dir + "/rank1.ugt"));  // not before the job is done
  StatusOr<FinishOutcome> done = first->Finish();
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->result, FinishOutcome::Result::kCommitted);
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "UPGTRACE rank 0");
  EXPECT_EQ(Read(dir + "/rank1.ugt"), "UPGTRACE rank 1");
  EXPECT_FALSE(fs::exists(dir + "/" + kLockName));
  // Another job is refused while one records; a finished job's name admits nobody.
  std::unique_ptr<RunStaging> again = RunStaging::Begin(dir, Options(true, "job-8")).value();
  EXPECT_FALSE(RunStaging::Begin(dir, Options(true, "job-9")).ok());
}

TEST(RunStagingTest, WithAWorldSizeTheRunWaitsForEveryRank) {
  const std::string dir = TempDir("ranks");
  StagingOptions options = Options(false, "job");
  options.world_size = 2;
  std::unique_ptr<RunStaging> staging = RunStaging::Begin(dir, options).value();
  Write(staging->path() + "/rank0.ugt", "UPGTRACE rank 0");
  StatusOr<FinishOutcome> done = staging->Finish();
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->result, FinishOutcome::Result::kIncomplete);
  EXPECT_EQ(done->detail, "rank1.ugt");
  EXPECT_FALSE(fs::exists(dir + "/rank0.ugt"));
  EXPECT_NE(DescribeHiddenRecordings(dir).find(dir + " holds an interrupted recording in " +
                                               staging->path()),
            std::string::npos);
}

TEST(RunStagingTest, AKilledRecordingIsFoundRefusedAndRecovered) {
  const std::string dir = TempDir("killed");
  const int64_t pid = DeadPid();
  const std::string staging = KilledRecording(dir, pid);
  const std::string hidden = DescribeHiddenRecordings(dir);
  EXPECT_NE(hidden.find(dir + " holds an interrupted recording in " + staging +
                        " (rank0.ugt; its recorder, pid " + std::to_string(pid) + " on host " +
                        HostName() + " (upguard record), no longer runs): `upguard recover " + dir +
                        "` moves it into place"),
            std::string::npos)
      << hidden;
  // The dead recorder's lock is taken over; its run is never recorded over without overwrite.
  StatusOr<std::unique_ptr<RunStaging>> refused = RunStaging::Begin(dir, Options(false));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("holds an interrupted recording in " + staging),
            std::string::npos)
      << refused.status().message();
  EXPECT_EQ(Read(staging + "/rank0.ugt"), "UPGTRACE interrupted trace");

  std::unique_ptr<RunStaging> adopted =
      RunStaging::Adopt(dir, fs::path(staging).filename(), Options(false), false).value();
  ASSERT_TRUE(adopted->Finish().ok());
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "UPGTRACE interrupted trace");
  EXPECT_FALSE(fs::exists(staging));
  EXPECT_FALSE(fs::exists(dir + "/" + kLockName));
  EXPECT_EQ(DescribeHiddenRecordings(dir), "");
}

TEST(RunStagingTest, OverwriteReplacesAKilledRecordingOnceTheNewRunIsComplete) {
  const std::string dir = TempDir("killed_overwrite");
  const std::string staging = KilledRecording(dir, DeadPid());
  std::unique_ptr<RunStaging> next = RunStaging::Begin(dir, Options(true)).value();
  EXPECT_EQ(Read(staging + "/rank0.ugt"), "UPGTRACE interrupted trace");
  Write(next->path() + "/rank0.ugt", "UPGTRACE new trace");
  ASSERT_TRUE(next->Finish().ok());
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "UPGTRACE new trace");
  EXPECT_FALSE(fs::exists(staging));
}

TEST(RunStagingTest, ARecordingInProgressIsNotRecovered) {
  const std::string dir = TempDir("live");
  std::unique_ptr<RunStaging> live = RunStaging::Begin(dir, Options(false)).value();
  Write(live->path() + "/rank0.ugt", "UPGTRACE being written");
  EXPECT_NE(DescribeHiddenRecordings(dir).find("holds a recording in progress in " + live->path()),
            std::string::npos);
  StatusOr<std::unique_ptr<RunStaging>> adopted =
      RunStaging::Adopt(dir, fs::path(live->path()).filename(), Options(false), true);
  ASSERT_FALSE(adopted.ok());
  EXPECT_NE(
      adopted.status().message().find("is still being written by pid " + std::to_string(getpid())),
      std::string::npos)
      << adopted.status().message();
}

TEST(RunStagingTest, TheStagingDirectoryOfALockIsRecognized) {
  const std::string dir = TempDir("locked");
  std::unique_ptr<RunStaging> staging = RunStaging::Begin(dir, Options(false)).value();
  EXPECT_TRUE(IsLockedStagingDirectory(staging->path()));
  EXPECT_FALSE(IsLockedStagingDirectory(dir));
  Write(dir + "/.upguard-record-1/x", "");
  EXPECT_FALSE(IsLockedStagingDirectory(dir + "/.upguard-record-1"));
}

}  // namespace
}  // namespace upguard

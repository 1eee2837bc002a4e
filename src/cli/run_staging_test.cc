// `record -o DIR` never loses a run: the new one is staged and moved in only when committed,
// a run DIR holds is refused without --overwrite, and only upguard's own files are replaced.
#include "cli/run_staging.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/file.h"

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

// DIR holding an earlier run, its captures and explain re-run, and the user's own files.
std::string OldRunWithUserFiles(const std::string& name) {
  const std::string dir = TempDir(name);
  Write(dir + "/rank0.ugt", "old trace 0");
  Write(dir + "/rank1.ugt", "old trace 1");
  Write(dir + "/meta.json", kUpguardMeta);
  Write(dir + "/online.json", "{}");
  Write(dir + "/online.rank1.json", "{}");
  Write(dir + "/captures/rank0.step2.op7.safetensors", "old capture");
  Write(dir + "/explain/rank0.ugt", "old explain trace");
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
  EXPECT_TRUE(IsRankTraceName("rank12.ugt"));
  EXPECT_FALSE(IsRankTraceName("rank.ugt"));
  EXPECT_FALSE(IsRankTraceName("rank1x.ugt"));
}

TEST(RunStagingTest, RefusesADirectoryHoldingARunWithoutOverwrite) {
  const std::string dir = OldRunWithUserFiles("refuse");
  StatusOr<std::unique_ptr<RunStaging>> staging = RunStaging::Begin(dir, /*overwrite=*/false);
  ASSERT_FALSE(staging.ok());
  EXPECT_NE(staging.status().message().find(dir + " already holds a run"), std::string::npos);
  EXPECT_NE(staging.status().message().find("--overwrite"), std::string::npos);
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "old trace 0");
  EXPECT_FALSE(fs::exists(dir + "/.upguard-record-" + std::to_string(getpid())));
}

TEST(RunStagingTest, RefusesAMetaJsonUpguardDidNotWriteEvenWithOverwrite) {
  const std::string dir = TempDir("foreign");
  Write(dir + "/meta.json", R"({"dataset":"mine"})");
  StatusOr<std::unique_ptr<RunStaging>> staging = RunStaging::Begin(dir, /*overwrite=*/true);
  ASSERT_FALSE(staging.ok());
  EXPECT_NE(staging.status().message().find(dir + "/meta.json was not written by upguard"),
            std::string::npos);
  EXPECT_EQ(Read(dir + "/meta.json"), R"({"dataset":"mine"})");
}

TEST(RunStagingTest, NothingCommittedLeavesTheDirectoryAsItWas) {
  const std::string dir = OldRunWithUserFiles("discard");
  {
    std::unique_ptr<RunStaging> staging = RunStaging::Begin(dir, /*overwrite=*/true).value();
    EXPECT_EQ(staging->path(), dir + "/.upguard-record-" + std::to_string(getpid()));
    Write(staging->path() + "/stderr.txt", "a command that never imported torch");
  }
  EXPECT_FALSE(fs::exists(dir + "/.upguard-record-" + std::to_string(getpid())));
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "old trace 0");
  EXPECT_EQ(Read(dir + "/meta.json"), kUpguardMeta);
  EXPECT_EQ(Read(dir + "/captures/rank0.step2.op7.safetensors"), "old capture");

  // A directory Begin created (and its parents) goes again.
  const std::string fresh = TempDir("fresh") + "/runs/a";
  { std::unique_ptr<RunStaging> staging = RunStaging::Begin(fresh, false).value(); }
  EXPECT_FALSE(fs::exists(fs::path(fresh).parent_path().parent_path()));
}

TEST(RunStagingTest, OverwriteReplacesOnlyUpguardFiles) {
  const std::string dir = OldRunWithUserFiles("overwrite");
  std::unique_ptr<RunStaging> staging = RunStaging::Begin(dir, /*overwrite=*/true).value();
  // While the command runs, the old run is still there.
  EXPECT_EQ(Read(dir + "/rank1.ugt"), "old trace 1");
  Write(staging->path() + "/rank0.ugt", "new trace 0");
  Write(staging->path() + "/meta.json", kUpguardMeta);
  Write(staging->path() + "/captures/rank0.step3.op1.safetensors", "new capture");
  ASSERT_TRUE(staging->Commit().ok());
  staging.reset();

  EXPECT_EQ(Read(dir + "/rank0.ugt"), "new trace 0");
  EXPECT_FALSE(fs::exists(dir + "/rank1.ugt"));  // the old run had two ranks
  EXPECT_FALSE(fs::exists(dir + "/online.json"));
  EXPECT_FALSE(fs::exists(dir + "/online.rank1.json"));
  EXPECT_FALSE(fs::exists(dir + "/explain"));
  EXPECT_FALSE(fs::exists(dir + "/captures/rank0.step2.op7.safetensors"));
  EXPECT_EQ(Read(dir + "/captures/rank0.step3.op1.safetensors"), "new capture");
  EXPECT_FALSE(fs::exists(dir + "/.upguard-record-" + std::to_string(getpid())));
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
  Write(dir + "/explain/rank0.ugt", "old explain trace");
  std::unique_ptr<RunStaging> staging = RunStaging::Begin(dir, /*overwrite=*/false).value();
  Write(staging->path() + "/rank0.ugt", "new trace 0");
  Write(staging->path() + "/captures/rank0.step3.op1.safetensors", "new capture");
  ASSERT_TRUE(staging->Commit().ok());
  EXPECT_EQ(Read(dir + "/captures/README"), "mine");
  EXPECT_EQ(Read(dir + "/captures/rank0.step2.op7.safetensors"), "old capture");
  EXPECT_EQ(Read(dir + "/captures/rank0.step3.op1.safetensors"), "new capture");
  EXPECT_EQ(Read(dir + "/explain/notes.txt"), "mine");
  EXPECT_EQ(Read(dir + "/explain/rank0.ugt"), "old explain trace");
  EXPECT_EQ(Read(dir + "/rank0.ugt"), "new trace 0");
}

TEST(RunStagingTest, AFileInDirsPlaceIsRefused) {
  const std::string dir = TempDir("file");
  Write(dir, "a file");
  StatusOr<std::unique_ptr<RunStaging>> staging = RunStaging::Begin(dir, true);
  ASSERT_FALSE(staging.ok());
  EXPECT_NE(staging.status().message().find("not a directory"), std::string::npos);
}

}  // namespace
}  // namespace upguard

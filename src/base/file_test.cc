#include "base/file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <filesystem>

namespace upguard {
namespace {

std::string TempDir() {
  auto dir =
      std::filesystem::temp_directory_path() /
      ("upguard_file_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(FileTest, WrittenIsReadBack) {
  const std::string path = TempDir() + "/a.bin";
  ASSERT_TRUE(WriteFileAtomically(path, std::string("a\0b", 3)).ok());
  StatusOr<std::string> read = ReadFileToString(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, std::string("a\0b", 3));
}

TEST(FileTest, MissingFileIsNotFoundAndNamesThePath) {
  StatusOr<std::string> read = ReadFileToString("/nonexistent/upguard/x");
  EXPECT_EQ(read.status().code(), StatusCode::kNotFound);
  EXPECT_NE(read.status().message().find("/nonexistent/upguard/x"), std::string::npos);
}

TEST(FileTest, OutputFileBuffersLargeAndSmallWrites) {
  const std::string path = TempDir() + "/out.bin";
  std::string big(3 << 20, 'x');
  {
    auto out = OutputFile::Create(path);
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE((*out)->Write("head", 4).ok());
    ASSERT_TRUE((*out)->Write(big.data(), big.size()).ok());
    ASSERT_TRUE((*out)->Write("tail", 4).ok());
    EXPECT_EQ((*out)->bytes_written(), big.size() + 8);
    ASSERT_TRUE((*out)->Close().ok());
  }
  EXPECT_EQ(*ReadFileToString(path), "head" + big + "tail");
}

// A write that the file system refuses (here: the process's file size limit, as `ulimit -f`
// sets it; a full disk fails the same way) is an error, and the file keeps its old contents.
// The contents are smaller than a stream's buffer, so the bytes reach the file only when it is
// flushed or closed: that failure counts too.
TEST(FileTest, AtomicWriteThatTheFileSystemRefusesFailsAndKeepsTheOldFile) {
  const std::string path = TempDir() + "/meta.json";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  void (*const old_handler)(int) = signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  rlimit small = saved;
  small.rlim_cur = 16;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const Status written = WriteFileAtomically(path, std::string(1000, 'n'));
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(written.ok());
  EXPECT_NE(written.message().find(path), std::string::npos) << written.message();
  EXPECT_EQ(*ReadFileToString(path), "old");
  for (const auto& entry : std::filesystem::directory_iterator(TempDir())) {
    EXPECT_EQ(entry.path().filename().string().find("meta.json.tmp"), std::string::npos)
        << "a temporary file was left: " << entry.path();
  }
}

}  // namespace
}  // namespace upguard

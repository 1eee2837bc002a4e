#include "base/file.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace upguard

// For the CLI's tests: a fresh, empty directory per test, under the system's temp directory.
//
//   const std::string dir = FreshTestDir("upguard_probe_test");  // .../<prefix>_<pid>/<test>
//   const ScopedTestDir temp("upguard_consent_test");  // the same, removed at the scope's end
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace upguard {

inline std::string FreshTestDir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    (prefix + "_" + std::to_string(::getpid())) / info->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// FreshTestDir, removed with what the test wrote there when it goes out of scope.
struct ScopedTestDir {
  explicit ScopedTestDir(const std::string& prefix) : path(FreshTestDir(prefix)) {}
  ~ScopedTestDir() {
    std::error_code error;
    std::filesystem::remove_all(path, error);
  }
  ScopedTestDir(const ScopedTestDir&) = delete;
  ScopedTestDir& operator=(const ScopedTestDir&) = delete;
  std::string path;
};

}  // namespace upguard

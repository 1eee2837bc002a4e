#include "cli/paths.h"

#include <cstdlib>
#include <filesystem>

namespace upguard {
namespace {

std::string ExecutableDir() {
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "" : exe.parent_path().string();
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : fallback;
}

}  // namespace

std::string PythonPackageDir() {
  std::string next_to_binary = ExecutableDir() + "/python";
  if (std::filesystem::exists(next_to_binary + "/upguard/__init__.py")) {
    return EnvOr("UPGUARD_PYTHONPATH", next_to_binary);
  }
  return EnvOr("UPGUARD_PYTHONPATH", UPGUARD_BUILD_PYTHON_DIR);
}

std::string ExamplesDir() { return EnvOr("UPGUARD_EXAMPLES", UPGUARD_SOURCE_DIR "/examples"); }

std::string PythonInterpreter() { return EnvOr("UPGUARD_PYTHON", UPGUARD_PYTHON_PATH); }

}  // namespace upguard

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

std::vector<std::string> OwnPythonPackageDirs() {
  std::vector<std::string> dirs = {ExecutableDir() + "/python"};
  if (std::string installed = UPGUARD_INSTALLED_PYTHON_DIR; !installed.empty()) {
    dirs.push_back(ExecutableDir() + "/" + installed);
  }
  dirs.push_back(UPGUARD_BUILD_PYTHON_DIR);
  return dirs;
}

std::string PythonPackageDir() {
  for (const std::string& dir : OwnPythonPackageDirs()) {
    if (std::filesystem::exists(dir + "/upguard/__init__.py")) {
      return EnvOr("UPGUARD_PYTHONPATH", dir);
    }
  }
  return EnvOr("UPGUARD_PYTHONPATH", UPGUARD_BUILD_PYTHON_DIR);
}

std::string SourceDir() { return UPGUARD_SOURCE_DIR; }

std::string ExamplesDir() { return EnvOr("UPGUARD_EXAMPLES", UPGUARD_SOURCE_DIR "/examples"); }

std::string PythonInterpreter() { return EnvOr("UPGUARD_PYTHON", UPGUARD_PYTHON_PATH); }

}  // namespace upguard

#include "cli/adapter_select.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "cli/paths.h"
#include "upguard/version.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

std::string StringField(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool HasCompiledModule(const std::string& package_dir) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(package_dir + "/upguard", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("_C.", 0) == 0 && name.size() > 3 && name.substr(name.size() - 3) == ".so") {
      return true;
    }
  }
  return false;
}

std::string Normal(const std::string& dir) { return fs::absolute(dir).lexically_normal().string(); }

void AddOnce(std::vector<std::string>& dirs, const std::string& dir) {
  if (dir.empty()) return;
  const std::string normal = Normal(dir);
  if (std::find(dirs.begin(), dirs.end(), normal) == dirs.end()) dirs.push_back(normal);
}

std::string Shown(const std::string& dir) {
  std::error_code error;
  fs::path relative = fs::relative(dir, fs::current_path(), error);
  return error || relative.empty() || relative.string().rfind("..", 0) == 0 ? dir
                                                                            : relative.string();
}

}  // namespace

StatusOr<AdapterBuild> ParseAdapterBuild(const std::string& json_text,
                                         const std::string& package_dir) {
  const nlohmann::json info = nlohmann::json::parse(json_text, nullptr, false);
  const std::string path = package_dir + "/upguard/_build_info.json";
  if (!info.is_object()) return DataLoss(path + ": not a JSON object; rebuild the adapter");
  AdapterBuild build;
  build.package_dir = package_dir;
  build.upguard_version = StringField(info, "upguard_version");
  build.torch_version = StringField(info, "torch_version");
  build.torch_dist_version = StringField(info, "torch_dist_version");
  build.python = StringField(info, "python");
  build.python_soabi = StringField(info, "python_soabi");
  if (build.torch_version.empty() || build.python_soabi.empty()) {
    return DataLoss(path + ": no torch_version or python_soabi; rebuild the adapter");
  }
  return build;
}

StatusOr<AdapterBuild> ReadAdapterBuild(const std::string& package_dir) {
  const std::string path = package_dir + "/upguard/_build_info.json";
  if (!IsRegularFile(path)) return NotFound(path + " is missing");
  if (!HasCompiledModule(package_dir)) {
    return NotFound(package_dir + "/upguard holds no compiled _C; finish its build");
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseAdapterBuild(text, package_dir);
}

bool AdapterFits(const AdapterBuild& build, const InterpreterFacts& facts) {
  const std::string& built =
      facts.torch_from_metadata ? build.torch_dist_version : build.torch_version;
  return build.upguard_version == kUpguardVersion && build.python_soabi == facts.soabi &&
         !built.empty() && built == facts.torch_version;
}

std::vector<std::string> AdapterCandidates(const std::vector<std::string>& own_dirs,
                                           const std::string& interpreter_upguard_dir) {
  std::vector<std::string> dirs;
  for (const std::string& dir : own_dirs) AddOnce(dirs, dir);
  // Build trees beside the own ones: <builds>/<name>/python.
  for (const std::string& own : own_dirs) {
    if (own.empty() || fs::path(Normal(own)).filename() != "python") continue;
    const fs::path builds = fs::path(Normal(own)).parent_path().parent_path();
    std::error_code error;
    std::vector<std::string> siblings;
    for (const auto& entry : fs::directory_iterator(builds, error)) {
      if (IsRegularFile((entry.path() / "python/upguard/_build_info.json").string())) {
        siblings.push_back((entry.path() / "python").string());
      }
    }
    std::sort(siblings.begin(), siblings.end());
    for (const std::string& dir : siblings) AddOnce(dirs, dir);
  }
  AddOnce(dirs, interpreter_upguard_dir);
  return dirs;
}

std::string AdapterMismatchMessage(const InterpreterFacts& facts,
                                   const std::vector<AdapterBuild>& found,
                                   const std::string& source_dir) {
  std::string message = facts.python + " runs torch " + facts.torch_version + " (" + facts.soabi +
                        "), but this upguard has no adapter built for it";
  if (found.empty()) {
    message += " (none found)";
  } else {
    message += " (found: ";
    for (size_t idx = 0; idx < found.size(); ++idx) {
      const AdapterBuild& build = found[idx];
      message += (idx == 0 ? "" : "; ") + std::string("torch ") + build.torch_version + " for " +
                 build.python + " in " + Shown(build.package_dir);
      if (build.upguard_version != kUpguardVersion) {
        message += " (upguard " + build.upguard_version + ", this is " + kUpguardVersion + ")";
      }
    }
    message += ")";
  }
  if (const char* forced = std::getenv("UPGUARD_PYTHONPATH"); forced != nullptr && *forced) {
    message += "; UPGUARD_PYTHONPATH=" + std::string(forced) + " is the only one tried: unset it";
  }
  return message + "; build one for it: make -C " + source_dir + " build PYTHON=" + facts.python +
         "  (or, in that venv: pip install --no-build-isolation " + source_dir + ")";
}

StatusOr<std::string> SelectAdapter(const std::vector<std::string>& command,
                                    const std::string& cwd) {
  const char* path_env = std::getenv("PATH");
  const std::string path_list = path_env != nullptr ? path_env : "/usr/bin:/bin";
  std::vector<std::string> resolved = command;  // relative paths are the command's cwd's
  for (std::string& word : resolved) {
    if (!cwd.empty() && word.find('/') != std::string::npos && word[0] != '/') {
      word = cwd + "/" + word;
    }
  }
  const std::string interpreter = FindOnPath(CommandInterpreter(resolved, path_list), path_list);
  // Not a Python command we can see into (a shell script...): the bootstrap checks instead.
  if (interpreter.empty()) return PythonPackageDir();
  StatusOr<InterpreterFacts> facts = ProbeInterpreter(Normal(interpreter));
  if (!facts.ok() || facts->torch_version.empty()) return PythonPackageDir();

  std::vector<std::string> dirs;
  if (const char* forced = std::getenv("UPGUARD_PYTHONPATH"); forced != nullptr && *forced) {
    // Named by the user: used as it is when it carries no build info (a source tree).
    if (!ReadAdapterBuild(forced).ok()) return std::string(forced);
    dirs = {forced};
  } else {
    dirs = AdapterCandidates(OwnPythonPackageDirs(), facts->upguard_dir);
  }
  std::vector<AdapterBuild> found;
  for (const std::string& dir : dirs) {
    StatusOr<AdapterBuild> build = ReadAdapterBuild(dir);
    if (!build.ok()) continue;
    if (AdapterFits(*build, *facts)) return dir;
    found.push_back(*build);
  }
  return FailedPrecondition(AdapterMismatchMessage(*facts, found, SourceDir()));
}

}  // namespace upguard

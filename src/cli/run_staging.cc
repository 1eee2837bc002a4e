#include "cli/run_staging.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/file.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

// Consumes `prefix` from the front of `text`.
bool Eat(std::string_view* text, std::string_view prefix) {
  if (text->substr(0, prefix.size()) != prefix) return false;
  text->remove_prefix(prefix.size());
  return true;
}

// Consumes one or more decimal digits (at most 9) from the front of `text`.
bool EatNumber(std::string_view* text) {
  size_t count = 0;
  while (count < text->size() && (*text)[count] >= '0' && (*text)[count] <= '9') ++count;
  if (count == 0 || count > 9) return false;
  text->remove_prefix(count);
  return true;
}

bool IsOnlineName(std::string_view name) {
  if (name == "online.json" || name == "online.ranks.json") return true;
  return Eat(&name, "online.rank") && EatNumber(&name) && name == ".json";
}

// rank<R>.step<S>.op<I>.safetensors, or the ".tmp" the writer renames from.
bool IsCaptureName(std::string_view name) {
  return Eat(&name, "rank") && EatNumber(&name) && Eat(&name, ".step") && EatNumber(&name) &&
         Eat(&name, ".op") && EatNumber(&name) &&
         (name == ".safetensors" || name == ".safetensors.tmp");
}

fs::file_status StatusOf(const std::string& path) {
  std::error_code error;
  return fs::symlink_status(path, error);  // a link is never taken for what it points to
}

bool IsUpguardMeta(const std::string& path) {
  if (!fs::is_regular_file(StatusOf(path))) return false;
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return false;
  const nlohmann::json meta = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return meta.is_object() && meta.contains("upguard_version");
}

// A real directory (not a link) every entry of which `owned(dir, name)` accepts.
template <typename Owned>
bool IsOwnedDirectory(const std::string& dir, Owned owned) {
  if (!fs::is_directory(StatusOf(dir))) return false;
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return false;
  return std::all_of(names->begin(), names->end(),
                     [&](const std::string& name) { return owned(dir, name); });
}

// Refuses a DIR whose run would be replaced without --overwrite, or whose meta.json is not
// upguard's (the new run's would replace it).
Status CheckTarget(const std::string& dir, bool overwrite) {
  const std::string meta = dir + "/meta.json";
  const bool has_meta = fs::exists(StatusOf(meta));
  const bool upguard_meta = has_meta && IsUpguardMeta(meta);
  if (has_meta && !upguard_meta) {
    return FailedPrecondition(meta +
                              " was not written by upguard (it has no \"upguard_version\"), and "
                              "the new run's meta.json would replace it: record into another "
                              "directory (-o), or move the file away");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(dir));
  std::vector<std::string> run_files;
  for (const std::string& name : names) {
    if (IsRankTraceName(name) && fs::is_regular_file(StatusOf(dir + "/" + name))) {
      run_files.push_back(name);
    }
  }
  if (upguard_meta) run_files.push_back("meta.json");
  if (run_files.empty() || overwrite) return Status::Ok();
  std::string listed;
  for (size_t idx = 0; idx < run_files.size() && idx < 3; ++idx) {
    listed += (idx == 0 ? "" : ", ") + run_files[idx];
  }
  if (run_files.size() > 3) listed += ", ...";
  return FailedPrecondition(dir + " already holds a run (" + listed +
                            "); upguard record does not replace it: pass --overwrite to replace "
                            "it (only the files upguard wrote there are removed), or record into "
                            "another directory");
}

// The directories that MakeDirectories(dir) would create, the deepest first.
std::vector<std::string> MissingDirectories(const std::string& dir) {
  std::vector<std::string> missing;
  fs::path path = fs::absolute(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "runs/a/"
  std::error_code error;
  while (!path.empty() && !fs::exists(path, error) && path != path.parent_path()) {
    missing.push_back(path.string());
    path = path.parent_path();
  }
  return missing;
}

// Renames every entry of `from` into `to`, merging a folder that is in both (captures/ left in
// DIR because it held the user's files). meta.json goes last.
Status MoveEntries(const std::string& from, const std::string& to) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(from));
  std::stable_partition(names.begin(), names.end(),
                        [](const std::string& name) { return name != "meta.json"; });
  for (const std::string& name : names) {
    const std::string source = from + "/" + name, target = to + "/" + name;
    const fs::file_status source_status = StatusOf(source), target_status = StatusOf(target);
    std::error_code error;
    if (fs::is_directory(source_status) && fs::is_directory(target_status)) {
      RETURN_IF_ERROR(MoveEntries(source, target));
      fs::remove(source, error);
    } else if (fs::exists(target_status) &&
               fs::is_directory(source_status) != fs::is_directory(target_status)) {
      return IoError("cannot move " + source + " to " + target +
                     ": something of another kind is in the way");
    } else {
      fs::rename(source, target, error);
    }
    if (error) return IoError("cannot move " + source + " to " + target + ": " + error.message());
  }
  return Status::Ok();
}

}  // namespace

bool IsRankTraceName(const std::string& name) {
  std::string_view rest = name;
  return Eat(&rest, "rank") && EatNumber(&rest) && rest == ".ugt";
}

bool IsUpguardRunEntry(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  if (IsRankTraceName(name) || IsOnlineName(name)) return fs::is_regular_file(StatusOf(path));
  if (name == "meta.json") return IsUpguardMeta(path);
  if (name == "captures") {
    return IsOwnedDirectory(path, [](const std::string& captures, const std::string& entry) {
      return IsCaptureName(entry) && fs::is_regular_file(StatusOf(captures + "/" + entry));
    });
  }
  if (name == "alerts.jsonl") return fs::is_regular_file(StatusOf(path));  // record --watch
  if (name == "watch") {
    return IsOwnedDirectory(path, [](const std::string& watch, const std::string& entry) {
      return entry.rfind("rank", 0) == 0 && entry.size() > 5 &&
             entry.compare(entry.size() - 5, 5, ".ring") == 0 &&
             fs::is_regular_file(StatusOf(watch + "/" + entry));
    });
  }
  if (name == "explain") {
    return IsOwnedDirectory(path, [](const std::string& explain, const std::string& entry) {
      if (entry == "stderr.txt") return fs::is_regular_file(StatusOf(explain + "/" + entry));
      return IsUpguardRunEntry(explain, entry);
    });
  }
  return false;
}

StatusOr<std::unique_ptr<RunStaging>> RunStaging::Begin(const std::string& dir, bool overwrite) {
  std::error_code error;
  const fs::file_status status = fs::status(dir, error);  // DIR may be a link to a directory
  if (fs::exists(status) && !fs::is_directory(status)) {
    return InvalidArgument("-o " + dir +
                           ": not a directory; pass the directory to record the run into, e.g. "
                           "-o runs/a");
  }
  std::vector<std::string> created;
  if (fs::exists(status)) {
    RETURN_IF_ERROR(CheckTarget(dir, overwrite));
  } else {
    created = MissingDirectories(dir);
  }
  std::unique_ptr<RunStaging> staging(
      new RunStaging(dir, dir + "/.upguard-record-" + std::to_string(getpid()), created));
  fs::remove_all(staging->path_, error);  // left by an earlier upguard that had this pid
  RETURN_IF_ERROR(MakeDirectories(staging->path_));
  return staging;
}

RunStaging::~RunStaging() {
  std::error_code error;
  if (!keep_) fs::remove_all(path_, error);
  for (const std::string& dir : created_) fs::remove(dir, error);  // only while empty
}

Status RunStaging::Commit() {
  keep_ = true;
  const std::string where =
      "; the new run is in " + path_ + ": move its files into " + dir_ + " yourself";
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(dir_));
  const std::string staging_name = fs::path(path_).filename().string();
  for (const std::string& name : names) {
    if (name == staging_name || !IsUpguardRunEntry(dir_, name)) continue;
    std::error_code error;
    fs::remove_all(dir_ + "/" + name, error);
    if (error) {
      return IoError("cannot remove the earlier run's " + dir_ + "/" + name + ": " +
                     error.message() + where);
    }
  }
  const Status moved = MoveEntries(path_, dir_);
  if (!moved.ok()) return IoError(moved.message() + where);
  std::error_code error;
  fs::remove(path_, error);
  keep_ = false;
  return Status::Ok();
}

}  // namespace upguard

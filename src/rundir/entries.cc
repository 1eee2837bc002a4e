#include "rundir/entries.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

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

// A real directory (not a link) every entry of which `owned(dir, name)` accepts.
template <typename Owned>
bool IsOwnedDirectory(const std::string& dir, Owned owned) {
  if (!fs::is_directory(StatusOf(dir))) return false;
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return false;
  return std::all_of(names->begin(), names->end(),
                     [&](const std::string& name) { return owned(dir, name); });
}

}  // namespace

bool IsRankTraceName(const std::string& name) {
  std::string_view rest = name;
  return Eat(&rest, "rank") && EatNumber(&rest) && rest == ".ugt";
}

bool IsStagingName(const std::string& name) {
  std::string_view rest = name;
  return Eat(&rest, kStagingPrefix) && !rest.empty();
}

bool IsBookkeepingName(const std::string& name) {
  return name.rfind(".upguard-", 0) == 0 && !IsStagingName(name);
}

bool IsUpguardMeta(const std::string& path) {
  if (!fs::is_regular_file(StatusOf(path))) return false;
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return false;
  const nlohmann::json meta = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return meta.is_object() && meta.contains("upguard_version");
}

bool IsUpguardTrace(const std::string& path) {
  if (!fs::is_regular_file(StatusOf(path))) return false;
  static constexpr char kMagic[] = "UPGTRACE";  // docs/formats/trace.md §3
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, sizeof(head));
  const std::streamsize got = in.gcount();
  return std::string_view(head, static_cast<size_t>(got)) ==
         std::string_view(kMagic, static_cast<size_t>(got));
}

bool IsUpguardRunEntry(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  if (IsRankTraceName(name)) return IsUpguardTrace(path);
  if (IsOnlineName(name)) return fs::is_regular_file(StatusOf(path));
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

}  // namespace upguard

#include "cli/rerun_request.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace upguard {
namespace {

std::string JoinOps(const nlohmann::json& ops) {
  std::string text;
  if (!ops.is_array()) return text;
  for (const nlohmann::json& op : ops) {
    if (op.is_string()) text += (text.empty() ? "" : ",") + op.get<std::string>();
  }
  return text;
}

bool IsNumericsEnv(const std::string& name) {
  return std::find(std::begin(kNumericsEnv), std::end(kNumericsEnv), name) !=
         std::end(kNumericsEnv);
}

}  // namespace

StatusOr<RecordRequest> RerunRequest(const Run& run, const char* side, const char* purpose,
                                     const std::string& out_dir, RerunConsent& consent) {
  const nlohmann::json& meta = run.Meta();
  // Several ranks: the command that launched them (torchrun's), not a worker's.
  const char* key = meta.contains("launcher_argv") && meta["launcher_argv"].is_array() &&
                            !meta["launcher_argv"].empty()
                        ? "launcher_argv"
                        : "argv";
  if (!meta.contains(key) || !meta[key].is_array() || meta[key].empty()) {
    return FailedPrecondition(run.dir + "/meta.json has no argv: run " + side +
                              " cannot be re-run " + purpose +
                              "; record it again with `upguard record`");
  }
  RecordRequest request;
  request.run_dir = out_dir;
  for (const nlohmann::json& arg : meta[key]) {
    if (!arg.is_string()) {
      return FailedPrecondition(run.dir + "/meta.json: " + key + " holds a non-string");
    }
    request.command.push_back(arg.get<std::string>());
  }
  if (meta.contains("cwd") && meta["cwd"].is_string()) request.cwd = meta["cwd"].get<std::string>();
  std::vector<std::string> dropped;
  if (meta.contains("env") && meta["env"].is_object()) {
    for (const auto& [name, value] : meta["env"].items()) {
      if (!value.is_string()) continue;
      if (IsNumericsEnv(name)) {
        request.env.emplace_back(name, value.get<std::string>());
      } else {
        dropped.push_back(name);
      }
    }
  }
  const nlohmann::json options = meta.value("record_options", nlohmann::json::object());
  request.max_depth = options.value("max_depth", -1);
  request.ops = JoinOps(options.value("ops", nlohmann::json::array()));
  request.stats = options.value("stats", true);
  request.quiet = true;
  RETURN_IF_ERROR(consent.Allow(run, request, dropped, side, purpose));
  return request;
}

}  // namespace upguard

#include "recorder/run_meta.h"

#include <unistd.h>

#include <chrono>
#include <string>

#include "base/identity.h"
#include "digest/digest.h"
#include "trace/format.h"
#include "upguard/version.h"

namespace upguard {
namespace {

nlohmann::json RecordOptionsJson(const RecorderOptions& options) {
  nlohmann::json steps = {{"first", options.steps.first}};
  steps["last"] =
      options.steps.last < 0 ? nlohmann::json(nullptr) : nlohmann::json(options.steps.last);
  return {{"steps", steps},
          {"fingerprint", options.fingerprint},
          {"max_depth", options.max_depth},
          {"ops", options.ops},
          {"stats", options.stats}};
}

}  // namespace

StatusOr<nlohmann::json> RecordingMeta(const RecorderOptions& options) {
  nlohmann::json meta = nlohmann::json::parse(options.engine_meta_json, nullptr, false);
  if (!meta.is_object()) {
    return InvalidArgument("recorder engine metadata is not a JSON object: " +
                           options.engine_meta_json.substr(0, 80));
  }
  meta["upguard_version"] = kUpguardVersion;
  meta["trace_version"] = kTraceVersion;
  // Which §6.1 lanes the statistics of this trace use (digest.md); the digests are the same
  // in every version, only the last bits of mean and l2 can differ.
  meta["stats_version"] = kStatsVersionLatest;
  meta["rank"] = options.rank;
  meta["world_size"] = options.world_size;
  // Who and where: a re-run of this command (diff --explain, --zoom, record --against) runs
  // without asking only for the same user on the same host (cli/rerun_consent.h); the engine
  // adds the real path of its working directory (cwd_real, python/upguard/_meta.py).
  meta["hostname"] = HostName();  // "" when unknown: then never the same host
  const uid_t uid = getuid();
  meta["uid"] = static_cast<int64_t>(uid);
  meta["user"] = UserName(uid);
  meta["pid"] = static_cast<int64_t>(getpid());
  meta["record_options"] = RecordOptionsJson(options);
  meta["start_time"] = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  return meta;
}

}  // namespace upguard

#include "trace/shared_stats.h"

#include <string>

namespace upguard {

bool SharedStats::Share(const ArgRecord& arg) {
  auto [it, added] = stats_.try_emplace(arg.digest, arg.stats);
  if (added) return false;
  it->second = arg.stats;  // the latest one (equal anyway, short of a digest collision)
  return true;
}

bool SharedStats::ResolveArg(const char* side, size_t arg_idx, ArgRecord* arg, RecordError* error) {
  if (arg->kind != ArgKind::kTensor || !arg->has_stats) return true;
  if (!arg->stats_shared) {
    stats_.insert_or_assign(arg->digest, arg->stats);
    return true;
  }
  const auto it = stats_.find(arg->digest);
  if (it == stats_.end()) {
    error->reason = "shared statistics without an earlier tensor";
    error->detail = std::string(side) + " " + std::to_string(arg_idx) + ": no earlier argument " +
                    "of this step has digest " + arg->digest.Hex();
    return false;
  }
  arg->stats = it->second;
  arg->stats_shared = false;
  return true;
}

bool SharedStats::Resolve(OpRecord* op, RecordError* error) {
  for (size_t arg_idx = 0; arg_idx < op->inputs.size(); ++arg_idx) {
    if (!ResolveArg("input", arg_idx, &op->inputs[arg_idx], error)) return false;
  }
  for (size_t arg_idx = 0; arg_idx < op->outputs.size(); ++arg_idx) {
    if (!ResolveArg("output", arg_idx, &op->outputs[arg_idx], error)) return false;
  }
  return true;
}

}  // namespace upguard

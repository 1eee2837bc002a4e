// The watch's report of a job at one look: the findings and each rank's state, as text for
// people and as JSON (schema upguard.watch/1, docs/cli.md). Live at the end of `upguard watch`,
// post mortem for `upguard watch --analyze`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "watch/alert.h"
#include "watch/analyzer.h"

namespace upguard::watch {

std::string RenderWatchText(const std::vector<Alert>& findings, const std::vector<RankLook>& ranks,
                            uint64_t now_ns);
nlohmann::ordered_json WatchToJson(const std::string& dir, const std::vector<Alert>& findings,
                                   const std::vector<RankLook>& ranks, uint64_t now_ns);

}  // namespace upguard::watch

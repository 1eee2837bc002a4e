// `upguard watch --html FILE`: the watch's report (schema upguard.watch/1, with each rank's
// `recent` collectives) as one self-contained page: each finding as a card (trigger, cause,
// ranks, the collective, the detail, the culprit's Python stack), and a timeline per rank of
// its recent collectives before the look, the finding's collective in red and the rank it names
// highlighted, so a rank that never arrived is the row without the red bar.
//
//   std::string page = RenderWatchHtml(WatchToJson(dir, findings, ranks, now_ns));
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace upguard::watch {

std::string RenderWatchHtml(const nlohmann::ordered_json& report);

}  // namespace upguard::watch

#include "recorder/online_report.h"

namespace upguard {

nlohmann::json OnlineReport(const OnlineDivergence& d, const OpEvent& op, const OpObserver& checker,
                            int rank, double seconds) {
  return {{"reference", checker.reference_dir()},
          {"rank", rank},
          {"kind", d.kind},
          {"step", d.step},
          {"index", d.index},
          {"op", d.op},
          {"reference_op", d.reference_op},
          {"detail", d.detail},
          {"module", std::string(op.module)},
          {"call_site", std::string(op.call_site)},
          {"phase", std::string(PhaseName(op.phase))},
          {"seconds_since_start", seconds},
          {"notes", checker.notes()}};
}

std::string OnlineReportName(int rank) {
  return rank == 0 ? "online.json" : "online.rank" + std::to_string(rank) + ".json";
}

}  // namespace upguard

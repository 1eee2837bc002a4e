// The report `record --against` writes where a run first parts from its reference:
// online.json (online.rank<N>.json beyond rank 0) in the run directory, read back by
// `upguard record` (docs/cli.md).
//
//   nlohmann::json report = OnlineReport(divergence, op, *checker, rank, seconds);
//   WriteFileAtomically(run_dir + "/" + OnlineReportName(rank), report.dump(2) + "\n");
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "recorder/op_observer.h"
#include "upguard/recorder.h"

namespace upguard {

// `seconds`: since recording started.
nlohmann::json OnlineReport(const OnlineDivergence& d, const OpEvent& op, const OpObserver& checker,
                            int rank, double seconds);
std::string OnlineReportName(int rank);

}  // namespace upguard

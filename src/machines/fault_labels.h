// Labelled faults: which machine was faulty when, as a fault injector or an incident log says
// (`upguard machines fit --labels`, the evaluation's scoring). A CSV with a header line:
//
//   machine,start,end,kind
//   node-3,1733331200,1733331260,cpu_quota
//
// times as in the metrics CSV (Unix seconds or ISO 8601); `kind` is optional free text.
#pragma once

#include <string>
#include <vector>

#include "upguard/status.h"

namespace upguard::machines {

struct FaultLabel {
  std::string machine;
  double start = 0;
  double end = 0;
  std::string kind;
};

StatusOr<std::vector<FaultLabel>> ReadFaultLabels(const std::string& path);

// Whether `machine` is labelled faulty at any time in [from, to].
bool LabelledFaulty(const std::vector<FaultLabel>& labels, const std::string& machine, double from,
                    double to);

}  // namespace upguard::machines

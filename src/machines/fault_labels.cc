#include "machines/fault_labels.h"

#include <fstream>
#include <sstream>

#include "machines/metrics_csv.h"

namespace upguard::machines {
namespace {

std::vector<std::string> SplitComma(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(field);
  return fields;
}

}  // namespace

StatusOr<std::vector<FaultLabel>> ReadFaultLabels(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open the labels");
  std::string line;
  size_t number = 0;
  std::vector<FaultLabel> labels;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(number);
    if (number == 1) {
      if (line.rfind("machine,start,end", 0) != 0) {
        return InvalidArgument(where + ": the header must be machine,start,end[,kind]");
      }
      continue;
    }
    const std::vector<std::string> fields = SplitComma(line);
    if (fields.size() < 3 || fields.size() > 4) {
      return InvalidArgument(where + ": expected machine,start,end[,kind]");
    }
    FaultLabel label;
    label.machine = fields[0];
    TimeForm form;
    if (!ValidMachineName(label.machine)) {
      return InvalidArgument(where + ": \"" + label.machine + "\" is not a machine name");
    }
    if (!ParseTime(fields[1], &label.start, &form) || !ParseTime(fields[2], &label.end, &form) ||
        label.end < label.start) {
      return InvalidArgument(where + ": start and end must be times (Unix seconds or ISO 8601), " +
                             "end not before start");
    }
    if (fields.size() == 4) label.kind = fields[3];
    labels.push_back(std::move(label));
  }
  return labels;
}

bool LabelledFaulty(const std::vector<FaultLabel>& labels, const std::string& machine, double from,
                    double to) {
  for (const FaultLabel& label : labels) {
    if (label.machine == machine && label.start <= to && label.end >= from) return true;
  }
  return false;
}

}  // namespace upguard::machines

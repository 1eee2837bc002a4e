#include "machines/exposition.h"

#include <cstdio>
#include <set>

namespace upguard::machines {
namespace {

// A label value with Prometheus' escapes (backslash, double quote, line feed).
std::string Escaped(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string RenderExposition(const std::string& machine, const std::vector<MetricValue>& metrics) {
  std::string out;
  std::set<std::string> typed;
  for (const MetricValue& metric : metrics) {
    const std::string series = kSeriesPrefix + metric.name;
    if (typed.insert(series).second) out += "# TYPE " + series + " gauge\n";
    out += series + "{machine=\"" + Escaped(machine) + "\"";
    if (!metric.label.empty()) out += ",interface=\"" + Escaped(metric.label) + "\"";
    char value[64];
    std::snprintf(value, sizeof(value), "} %.17g\n", metric.value);
    out += value;
  }
  return out;
}

std::string MetricFromSeries(const std::string& series, const std::string& interface) {
  const std::string prefix = kSeriesPrefix;
  if (series.rfind(prefix, 0) != 0 || series.size() == prefix.size()) return "";
  const std::string name = series.substr(prefix.size());
  return interface.empty() ? name : name + "." + interface;
}

}  // namespace upguard::machines

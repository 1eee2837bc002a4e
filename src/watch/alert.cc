#include "watch/alert.h"

#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>

namespace upguard::watch {

std::string IsoTime(uint64_t realtime_ns) {
  const time_t seconds = time_t(realtime_ns / 1000000000ull);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  const size_t used = strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(text + used, sizeof(text) - used, ".%03uZ", unsigned((realtime_ns / 1000000ull) % 1000));
  return text;
}

std::string AlertJson(const Alert& alert) {
  nlohmann::ordered_json out;
  out["time"] = IsoTime(alert.time_ns);
  out["trigger"] = alert.trigger;
  out["ranks"] = alert.ranks;
  out["cause"] = alert.cause;
  out["collective"] = alert.collective;
  out["detail"] = alert.detail;
  if (!alert.stack.empty()) out["stack"] = alert.stack;
  return out.dump();
}

std::string AlertLine(const Alert& alert) {
  std::ostringstream line;
  line << "upguard watch: ";
  for (char c : alert.trigger) line << char(std::toupper(static_cast<unsigned char>(c)));
  line << (alert.ranks.size() == 1 ? " rank " : " ranks ");
  for (size_t idx = 0; idx < alert.ranks.size(); ++idx) {
    line << (idx ? "," : "") << alert.ranks[idx];
  }
  line << " (" << alert.cause << "): " << alert.detail;
  if (!alert.collective.empty()) line << " [" << alert.collective << "]";
  return line.str();
}

}  // namespace upguard::watch

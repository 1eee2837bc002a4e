#include "machines/time_spec.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <string>

#include "machines/metrics_csv.h"

namespace upguard::machines {
namespace {

bool ParseDecimal(std::string_view text, double* value) {
  if (text.empty() || text.front() == '+' || text.front() == '-') return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && std::isfinite(*value);
}

// "15m" -> 900.
bool ParseDuration(std::string_view text, double* seconds) {
  if (text.size() < 2) return false;
  double unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      return false;
  }
  double count = 0;
  if (!ParseDecimal(text.substr(0, text.size() - 1), &count)) return false;
  *seconds = count * unit;
  return true;
}

// RFC 3339: YYYY-MM-DD(T|t| )HH:MM:SS[.fff](Z|z|+HH:MM|-HH:MM).
bool ParseRfc3339(std::string_view text, double* seconds) {
  if (text.size() < 20) return false;
  std::string utc(text.substr(0, 19));
  if (utc[10] == 't' || utc[10] == ' ') utc[10] = 'T';
  std::string_view rest = text.substr(19);
  size_t zone = rest.find_first_of("Zz+-");
  if (zone == std::string_view::npos) return false;
  utc += std::string(rest.substr(0, zone)) + "Z";  // the seconds' fraction, then Z
  std::string_view offset = rest.substr(zone);
  double shift = 0;
  if (offset != "Z" && offset != "z") {
    double hours = 0, minutes = 0;
    if (offset.size() != 6 || offset[3] != ':' || !ParseDecimal(offset.substr(1, 2), &hours) ||
        !ParseDecimal(offset.substr(4, 2), &minutes) || hours > 23 || minutes > 59) {
      return false;
    }
    shift = (hours * 3600 + minutes * 60) * (offset[0] == '-' ? -1 : 1);
  }
  TimeForm form = TimeForm::kSeconds;
  if (!ParseTime(utc, seconds, &form) || form != TimeForm::kIso8601) return false;
  *seconds -= shift;
  return true;
}

}  // namespace

StatusOr<double> ParseTimeSpec(std::string_view text, double now) {
  double seconds = 0;
  if (text == "now") return now;
  std::string_view relative = text;
  if (relative.substr(0, 3) == "now") relative.remove_prefix(3);
  if (!relative.empty() && relative.front() == '-' && ParseDuration(relative.substr(1), &seconds)) {
    return now - seconds;
  }
  if (ParseDecimal(text, &seconds) || ParseRfc3339(text, &seconds)) return seconds;
  return InvalidArgument("time \"" + std::string(text) +
                         "\": use seconds since the epoch (1733331200), RFC 3339 "
                         "(2024-12-04T17:33:20Z, 2024-12-04T18:33:20+01:00), now, or a time "
                         "before now (-15m, -2h, -1d; units s m h d w)");
}

double WallClockSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace upguard::machines

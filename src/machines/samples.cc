#include "machines/samples.h"

#include <cmath>
#include <cstdio>

namespace upguard::machines {

uint32_t MetricSamples::Intern(std::string_view name, std::vector<std::string>* names,
                               std::unordered_map<std::string, uint32_t>* index) {
  auto [found, added] = index->emplace(std::string(name), static_cast<uint32_t>(names->size()));
  if (added) names->emplace_back(name);
  return found->second;
}

namespace {

// The civil date of a day count since 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
void CivilFromDays(int64_t days, int64_t* year, unsigned* month, unsigned* day) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *day = doy - (153 * mp + 2) / 5 + 1;
  *month = mp < 10 ? mp + 3 : mp - 9;
  *year = static_cast<int64_t>(yoe) + era * 400 + (*month <= 2 ? 1 : 0);
}

}  // namespace

std::string FormatTime(double seconds, TimeForm form) {
  char text[64];
  if (form == TimeForm::kSeconds) {
    std::snprintf(text, sizeof(text), "%.15g", seconds);
    return text;
  }
  const double whole = std::floor(seconds);
  const auto total = static_cast<int64_t>(whole);
  const int64_t days = (total >= 0 ? total : total - 86399) / 86400;
  const int64_t in_day = total - days * 86400;
  int64_t year = 0;
  unsigned month = 0;
  unsigned day = 0;
  CivilFromDays(days, &year, &month, &day);
  const int millis = static_cast<int>(std::lround((seconds - whole) * 1000));
  std::snprintf(text, sizeof(text), "%04lld-%02u-%02uT%02lld:%02lld:%02lld",
                static_cast<long long>(year), month, day, static_cast<long long>(in_day / 3600),
                static_cast<long long>(in_day / 60 % 60), static_cast<long long>(in_day % 60));
  std::string out = text;
  if (millis > 0 && millis < 1000) {
    std::snprintf(text, sizeof(text), ".%03d", millis);
    out += text;
  }
  return out + "Z";
}

}  // namespace upguard::machines

#include "machines/metrics_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <tuple>
#include <vector>

#include "base/file.h"

namespace upguard::machines {
namespace {

bool ParseNumber(std::string_view text, double* value) {
  if (text.empty() || text.front() == '+') return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end;
}

bool ParseDigits(std::string_view text, int64_t* value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t year, int64_t month, int64_t day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t yoe = year - era * 400;
  const int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool ParseIso(std::string_view text, double* seconds) {
  // YYYY-MM-DDTHH:MM:SS[.fff]Z
  if (text.size() < 20 || text.back() != 'Z' || text[4] != '-' || text[7] != '-' ||
      text[10] != 'T' || text[13] != ':' || text[16] != ':') {
    return false;
  }
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0;
  double second = 0;
  if (!ParseDigits(text.substr(0, 4), &year) || !ParseDigits(text.substr(5, 2), &month) ||
      !ParseDigits(text.substr(8, 2), &day) || !ParseDigits(text.substr(11, 2), &hour) ||
      !ParseDigits(text.substr(14, 2), &minute) ||
      !ParseNumber(text.substr(17, text.size() - 18), &second)) {
    return false;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second < 0 ||
      second >= 61) {
    return false;
  }
  *seconds =
      static_cast<double>(DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60) +
      second;
  return true;
}

bool ValidName(std::string_view name, bool machine) {  // see ValidMachineName
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [machine](char c) {
    const bool common = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':';
    return common || (machine && c == '-');
  });
}

std::string Where(std::string_view source, size_t line) {
  return std::string(source) + ":" + std::to_string(line);
}

struct ParsedLine {
  double time = 0;
  TimeForm form = TimeForm::kSeconds;
  std::string_view machine;
  std::string_view metric;
  double value = 0;
};

// One sample line; errors begin with `where` ("m.csv:3").
StatusOr<ParsedLine> ParseSampleLine(std::string_view line, const std::string& where) {
  std::vector<std::string_view> fields;
  for (size_t start = 0;;) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (fields.size() != 4) {
    return InvalidArgument(where + ": expected 4 fields (time,machine,metric,value), got " +
                           std::to_string(fields.size()));
  }
  ParsedLine out;
  if (!ParseTime(fields[0], &out.time, &out.form)) {
    return InvalidArgument(where + ": time \"" + std::string(fields[0]) +
                           "\" is neither seconds since the epoch nor YYYY-MM-DDTHH:MM:SSZ");
  }
  if (!ValidName(fields[1], /*machine=*/true)) {
    return InvalidArgument(where + ": machine \"" + std::string(fields[1]) +
                           "\" must be 1-128 characters of A-Z a-z 0-9 . _ : -");
  }
  if (!ValidName(fields[2], /*machine=*/false)) {
    return InvalidArgument(where + ": metric \"" + std::string(fields[2]) +
                           "\" must be 1-128 characters of A-Z a-z 0-9 _ : .");
  }
  if (!ParseNumber(fields[3], &out.value) || !std::isfinite(out.value)) {
    return InvalidArgument(where + ": value \"" + std::string(fields[3]) +
                           "\" is not a finite number (leave a gap out instead of writing NaN)");
  }
  out.machine = fields[1];
  out.metric = fields[2];
  return out;
}

}  // namespace

bool ValidMachineName(std::string_view name) { return ValidName(name, /*machine=*/true); }

bool ParseTime(std::string_view text, double* seconds, TimeForm* form) {
  if (ParseNumber(text, seconds) && std::isfinite(*seconds)) {
    *form = TimeForm::kSeconds;
    return true;
  }
  if (ParseIso(text, seconds)) {
    *form = TimeForm::kIso8601;
    return true;
  }
  return false;
}

StatusOr<MetricSamples> ParseMetricsCsv(std::string_view text, std::string_view source) {
  MetricSamples out;
  std::vector<size_t> lines;  // the line of each sample, for the duplicate check's message
  size_t line_no = 0;
  bool header_seen = false;
  bool form_seen = false;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!header_seen) {
      if (line != kMetricsCsvHeader) {
        return InvalidArgument(Where(source, line_no) + ": the first line must be \"" +
                               std::string(kMetricsCsvHeader) + "\" (machine metrics CSV, " +
                               "docs/formats/machine-metrics-csv.md), not \"" +
                               std::string(line.substr(0, 80)) + "\"");
      }
      header_seen = true;
      continue;
    }
    if (line.empty()) continue;
    const std::string where = Where(source, line_no);
    StatusOr<ParsedLine> parsed = ParseSampleLine(line, where);
    if (!parsed.ok() && newline == std::string_view::npos) {
      // A last line without its end that is no whole sample: a write torn by a crash (an agent
      // killed mid-line, §1). It costs that line only.
      out.warnings.push_back(where + ": skipped a torn last line (" +
                             parsed.status().message().substr(where.size() + 2) +
                             "; no line end: its writer was killed while writing it?)");
      break;
    }
    if (!parsed.ok()) return parsed.status();
    if (form_seen && parsed->form != out.time_form) {
      return InvalidArgument(where +
                             ": times mix seconds and ISO 8601 forms; use one form per file");
    }
    out.time_form = parsed->form;
    form_seen = true;
    Sample sample;
    sample.time = parsed->time;
    sample.value = parsed->value;
    sample.machine = out.MachineIndex(parsed->machine);
    sample.metric = out.MetricIndex(parsed->metric);
    out.samples.push_back(sample);
    lines.push_back(line_no);
  }
  if (!header_seen) {
    return InvalidArgument(std::string(source) + ": empty; a machine metrics CSV starts with \"" +
                           std::string(kMetricsCsvHeader) + "\"");
  }
  std::vector<size_t> order(out.samples.size());
  std::iota(order.begin(), order.end(), 0);
  const auto key = [&out](size_t idx) {
    const Sample& s = out.samples[idx];
    return std::tuple(s.machine, s.metric, s.time);
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  for (size_t idx = 1; idx < order.size(); ++idx) {
    if (key(order[idx - 1]) != key(order[idx])) continue;
    const Sample& s = out.samples[order[idx]];
    return InvalidArgument(Where(source, std::max(lines[order[idx - 1]], lines[order[idx]])) +
                           ": a second sample of " + out.machines[s.machine] + " " +
                           out.metrics[s.metric] + " at the same time (line " +
                           std::to_string(std::min(lines[order[idx - 1]], lines[order[idx]])) +
                           "); was the file concatenated twice?");
  }
  return out;
}

StatusOr<MetricSamples> ReadMetricsCsv(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseMetricsCsv(text, path);
}

}  // namespace upguard::machines

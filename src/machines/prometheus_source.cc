#include "machines/prometheus_source.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "machines/exposition.h"
#include "machines/http_client.h"

namespace upguard::machines {
namespace {

std::string Seconds(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f", value);
  return text;
}

std::string LabelOr(const nlohmann::json& labels, const std::string& name) {
  const auto found = labels.find(name);
  return found != labels.end() && found->is_string() ? found->get<std::string>() : "";
}

// A value as Prometheus writes it ("0.5", "NaN", "+Inf"); false for anything not finite.
bool FiniteValue(const nlohmann::json& value, double* out) {
  if (!value.is_string()) return false;
  const std::string& text = value.get_ref<const std::string&>();
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && std::isfinite(*out);
}

}  // namespace

std::vector<std::pair<double, double>> SplitRange(double start, double end, double step,
                                                  size_t max_points) {
  std::vector<std::pair<double, double>> pieces;
  if (!(step > 0) || end < start || max_points == 0) return pieces;
  const double points = std::floor((end - start) / step + 1e-9) + 1;
  const double per_piece = static_cast<double>(max_points);
  for (double first = 0; first < points; first += per_piece) {
    const double last = std::min(points, first + per_piece) - 1;
    pieces.emplace_back(start + first * step, start + last * step);
  }
  return pieces;
}

Status AppendQueryRange(std::string_view json, const std::string& machine_label,
                        const std::string& where, MetricSamples* out, size_t* skipped) {
  const nlohmann::json reply = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded() || !reply.is_object()) {
    return DataLoss(where + ": the reply is not JSON (is this Prometheus' address? it starts \"" +
                    std::string(json.substr(0, 60)) + "\")");
  }
  if (LabelOr(reply, "status") == "error") {
    return InvalidArgument(where + ": Prometheus answered " + LabelOr(reply, "errorType") + ": " +
                           LabelOr(reply, "error"));
  }
  const auto data = reply.find("data");
  if (LabelOr(reply, "status") != "success" || data == reply.end() || !data->is_object() ||
      LabelOr(*data, "resultType") != "matrix" || !data->contains("result") ||
      !(*data)["result"].is_array()) {
    return DataLoss(where +
                    ": not a query_range reply (expected \"status\":\"success\" and a "
                    "matrix result; is the URL Prometheus' own, without /api/v1?)");
  }
  for (const nlohmann::json& series : (*data)["result"]) {
    const auto labels = series.find("metric");
    const auto values = series.find("values");
    if (labels == series.end() || !labels->is_object() || values == series.end() ||
        !values->is_array()) {
      return DataLoss(where + ": a result without \"metric\" and \"values\"");
    }
    const std::string metric =
        MetricFromSeries(LabelOr(*labels, "__name__"), LabelOr(*labels, "interface"));
    const std::string machine = LabelOr(*labels, machine_label);
    if (metric.empty() || machine.empty()) {
      if (skipped != nullptr) ++*skipped;
      continue;
    }
    const uint32_t machine_idx = out->MachineIndex(machine);
    const uint32_t metric_idx = out->MetricIndex(metric);
    for (const nlohmann::json& point : *values) {
      Sample sample{0, machine_idx, metric_idx, 0};
      if (!point.is_array() || point.size() != 2 || !point[0].is_number()) {
        return DataLoss(where + ": a point of " + machine + " " + metric +
                        " is not [time, \"value\"]");
      }
      sample.time = point[0].get<double>();
      if (!FiniteValue(point[1], &sample.value)) continue;  // NaN is a gap
      out->samples.push_back(sample);
    }
  }
  return Status::Ok();
}

StatusOr<MetricSamples> ReadPrometheus(const std::string& url_text, const PrometheusQuery& query) {
  ASSIGN_OR_RETURN(const HttpUrl url, ParseHttpUrl(url_text));
  if (!(query.step > 0) || !(query.end >= query.start)) {
    return InvalidArgument(url_text + ": the range must have start <= end and a positive step");
  }
  MetricSamples out;
  size_t skipped = 0;
  for (const auto& [start, end] : SplitRange(query.start, query.end, query.step)) {
    const std::string target = "/api/v1/query_range?query=" + UrlEncode(kUpguardSeriesSelector) +
                               "&start=" + Seconds(start) + "&end=" + Seconds(end) +
                               "&step=" + Seconds(query.step);
    const std::string where = "http://" + url.host + ":" + std::to_string(url.port) + url.prefix +
                              "/api/v1/query_range (" + Seconds(start) + " to " + Seconds(end) +
                              ")";
    ASSIGN_OR_RETURN(const HttpResponse reply, HttpGet(url, target, query.timeout));
    const bool json = !reply.body.empty() && reply.body.front() == '{';
    if (reply.status != 200 && !json) {
      return IoError(where + ": HTTP " + std::to_string(reply.status) + " \"" +
                     reply.body.substr(0, 200) +
                     "\" (is this Prometheus' address, with its --web.route-prefix if any?)");
    }
    RETURN_IF_ERROR(AppendQueryRange(reply.body, query.machine_label, where, &out, &skipped));
  }
  if (out.samples.empty()) {
    const std::string seen = skipped > 0
                                 ? "; " + std::to_string(skipped) +
                                       " upguard series lacked the label \"" + query.machine_label +
                                       "\" (set --machine-label to the one naming the "
                                       "machine, e.g. instance)"
                                 : "";
    return NotFound(url.text + ": no upguard_* series from " + Seconds(query.start) + " to " +
                    Seconds(query.end) + seen +
                    " (does Prometheus scrape the agents? see its /targets page; is the range "
                    "right (--start/--end)? for node_exporter, load "
                    "examples/prometheus-upguard-rules.yml)");
  }
  return out;
}

}  // namespace upguard::machines

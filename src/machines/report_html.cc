#include "machines/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "base/html.h"

namespace upguard::machines {
namespace {

constexpr double kWidth = 760, kHeight = 200, kLeft = 70, kRight = 10, kTop = 10, kBottom = 30;

using html::Escape;

std::string Number(double value) { return html::Number(value); }

// Per point of [from, to): the peers' 10th, 50th and 90th percentiles (NaN without peers).
struct Band {
  std::vector<double> low, median, high;
};

Band PeersBand(const Grid& grid, size_t metric, size_t machine, size_t from, size_t to) {
  Band band;
  std::vector<double> values;
  for (size_t point = from; point < to; ++point) {
    values.clear();
    for (size_t other = 0; other < grid.machines.size(); ++other) {
      const double v = grid.At(metric, other, point);
      if (other != machine && std::isfinite(v)) values.push_back(v);
    }
    std::sort(values.begin(), values.end());
    auto at = [&](double f) {
      return values.empty()
                 ? std::nan("")
                 : values[static_cast<size_t>(f * static_cast<double>(values.size() - 1))];
    };
    band.low.push_back(at(0.1));
    band.median.push_back(at(0.5));
    band.high.push_back(at(0.9));
  }
  return band;
}

// A polyline's points attribute for `values` (gaps break nothing: NaN points are skipped).
std::string Points(const std::vector<double>& values, double (*x)(size_t, size_t), size_t count,
                   double lo, double hi) {
  std::string out;
  for (size_t idx = 0; idx < values.size(); ++idx) {
    if (!std::isfinite(values[idx])) continue;
    const double y = kTop + (kHeight - kTop - kBottom) * (1 - (values[idx] - lo) / (hi - lo));
    out += Number(x(idx, count)) + "," + Number(y) + " ";
  }
  return out;
}

double XOf(size_t idx, size_t count) {
  return kLeft + (kWidth - kLeft - kRight) * static_cast<double>(idx) /
                     static_cast<double>(std::max<size_t>(count - 1, 1));
}

std::string Chart(const Grid& grid, const Detection& found, size_t metric, size_t window) {
  const size_t margin = std::max<size_t>(60, 8 * window);
  const size_t from =
      found.first_point + 1 >= window + margin ? found.first_point + 1 - window - margin : 0;
  const size_t to = std::min(grid.length, found.last_point + margin / 2 + 1);
  const size_t count = to - from;
  const Band band = PeersBand(grid, metric, found.machine, from, to);
  std::vector<double> own;  // the machine itself
  for (size_t point = from; point < to; ++point)
    own.push_back(grid.At(metric, found.machine, point));
  double lo = INFINITY, hi = -INFINITY;
  const std::vector<const std::vector<double>*> drawn{&band.low, &band.high, &own};
  for (const std::vector<double>* series : drawn) {
    for (double v : *series) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (!(hi > lo)) {
    lo = std::isfinite(lo) ? lo - 1 : 0;
    hi = lo + 2;
  }
  std::string upper = Points(band.high, XOf, count, lo, hi);
  std::vector<double> low_reversed(band.low.rbegin(), band.low.rend());
  // The band: along the 90th percentile, back along the 10th.
  std::string polygon = upper;
  for (size_t idx = 0; idx < low_reversed.size(); ++idx) {
    const double v = low_reversed[idx];
    if (!std::isfinite(v)) continue;
    const double y = kTop + (kHeight - kTop - kBottom) * (1 - (v - lo) / (hi - lo));
    polygon += Number(XOf(count - 1 - idx, count)) + "," + Number(y) + " ";
  }
  const double shade_from = XOf(found.first_point + 1 - window - from, count);
  const double shade_to = XOf(found.last_point - from, count);
  const double alert = XOf(found.alert_point - from, count);
  std::string svg = "<svg width=\"" + Number(kWidth) + "\" height=\"" + Number(kHeight) +
                    "\" role=\"img\" aria-label=\"" + Escape(grid.metrics[metric]) + "\">\n";
  svg += "<rect x=\"" + Number(shade_from) + "\" y=\"" + Number(kTop) + "\" width=\"" +
         Number(std::max(1.0, shade_to - shade_from)) + "\" height=\"" +
         Number(kHeight - kTop - kBottom) + "\" fill=\"#fde2e2\"/>\n";
  svg += "<polygon class=\"band\" points=\"" + polygon + "\" fill=\"#cfd8e3\"/>\n";
  svg += "<polyline class=\"median\" points=\"" + Points(band.median, XOf, count, lo, hi) +
         "\" fill=\"none\" stroke=\"#4a5a70\" stroke-width=\"1\"/>\n";
  svg += "<polyline class=\"machine\" points=\"" + Points(own, XOf, count, lo, hi) +
         "\" fill=\"none\" stroke=\"#c62828\" stroke-width=\"1.6\"/>\n";
  svg += "<line x1=\"" + Number(alert) + "\" x2=\"" + Number(alert) + "\" y1=\"" + Number(kTop) +
         "\" y2=\"" + Number(kHeight - kBottom) +
         "\" stroke=\"#c62828\" stroke-dasharray=\"4 3\"/>\n";
  svg += "<text x=\"" + Number(kLeft - 6) + "\" y=\"" + Number(kTop + 10) +
         "\" text-anchor=\"end\">" + Number(hi) + "</text>\n";
  svg += "<text x=\"" + Number(kLeft - 6) + "\" y=\"" + Number(kHeight - kBottom) +
         "\" text-anchor=\"end\">" + Number(lo) + "</text>\n";
  svg += "<text x=\"" + Number(kLeft) + "\" y=\"" + Number(kHeight - 8) + "\">" +
         Escape(FormatTime(grid.TimeAt(from), grid.time_form)) + "</text>\n";
  svg += "<text x=\"" + Number(kWidth - kRight) + "\" y=\"" + Number(kHeight - 8) +
         "\" text-anchor=\"end\">" + Escape(FormatTime(grid.TimeAt(to - 1), grid.time_form)) +
         "</text>\n</svg>\n";
  return svg;
}

}  // namespace

std::string RenderDetectionsHtml(const Grid& grid, const DetectResult& result,
                                 const ReportContext& context) {
  std::string body = "<h1>upguard machines</h1>\n";
  body += "<p>" + std::to_string(grid.machines.size()) + " machines, " +
          std::to_string(grid.metrics.size()) + " metrics, " + std::to_string(grid.length) +
          " points of " + Number(grid.step) + " s; method: " + Escape(context.method) +
          ", windows of " + std::to_string(context.window) + " points, continuity " +
          std::to_string(context.continuity) + ".</p>\n";
  if (result.detections.empty()) {
    body += "<p class=\"verdict\">No machine parts from its peers.</p>\n";
    return html::Page("upguard machines", body);
  }
  body +=
      "<p class=\"key\"><span style=\"color:#c62828\">&#9632; the machine</span>"
      "<span style=\"color:#4a5a70\">&#9632; its peers' median</span>"
      "<span style=\"color:#9fb0c6\">&#9632; its peers' 10&ndash;90%</span>"
      "<span style=\"color:#e8a0a0\">&#9632; the detection (dashed: the alert)</span></p>\n";
  for (const Detection& found : result.detections) {
    const std::string& machine = grid.machines[found.machine];
    body += "<section class=\"detection\" data-machine=\"" + Escape(machine) + "\">\n<h2>" +
            Escape(machine) + " parts from its " + std::to_string(grid.machines.size() - 1) +
            " peers from " + Escape(FormatTime(grid.TimeAt(found.first_point), grid.time_form)) +
            " to " + Escape(FormatTime(grid.TimeAt(found.last_point), grid.time_form)) +
            " (alert at " + Escape(FormatTime(grid.TimeAt(found.alert_point), grid.time_form)) +
            ", z " + Number(found.score) + ")</h2>\n";
    for (size_t metric : found.metrics) {
      body += "<h3>" + Escape(grid.metrics[metric]) + "</h3>\n" +
              Chart(grid, found, metric, context.window);
    }
    body += "</section>\n";
  }
  return html::Page("upguard machines", body);
}

Status WriteDetectionsHtml(const Grid& grid, const DetectResult& result,
                           const ReportContext& context, const std::string& path) {
  return html::WriteFile(path, RenderDetectionsHtml(grid, result, context), "machines");
}

}  // namespace upguard::machines

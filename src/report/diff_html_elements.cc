#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "base/html.h"
#include "base/svg_plot.h"
#include "report/diff_html_parts.h"

namespace upguard::diff_html {
namespace {

using html::Escape;
using html::Number;
using nlohmann::json;

// A color from light to dark red for a share in [0, 1].
std::string Heat(double share) {
  const double t = std::clamp(share, 0.0, 1.0);
  const int r = int(251 + (183 - 251) * t), g = int(233 + (28 - 233) * t),
            b = int(231 + (28 - 231) * t);
  char color[8];
  std::snprintf(color, sizeof(color), "#%02x%02x%02x", r, g, b);
  return color;
}

// Where the differing elements lie: the tensor as a matrix, each grid cell colored by how many
// differ in it (log scale), empty cells left white.
std::string DiffMap(const json& map, const std::string& name) {
  const int64_t grid_rows = map.value("grid_rows", int64_t{0});
  const int64_t grid_cols = map.value("grid_cols", int64_t{0});
  const json& counts = map["counts"];
  if (grid_rows <= 0 || grid_cols <= 0 || int64_t(counts.size()) != grid_rows * grid_cols) {
    return "";
  }
  const double rows = map.value("rows", 0.0), cols = map.value("cols", 0.0);
  int64_t most = 1;
  for (const json& count : counts) most = std::max(most, count.get<int64_t>());
  const double height = std::clamp(880.0 * double(grid_rows) / double(grid_cols), 120.0, 480.0);
  svg::Plot plot(880, height + 48, {0, cols, false, "column (last dim)"},
                 {0, rows, false, "row (leading dims)"});
  for (int64_t gr = 0; gr < grid_rows; ++gr) {
    for (int64_t gc = 0; gc < grid_cols; ++gc) {
      const int64_t count = counts[size_t(gr * grid_cols + gc)].get<int64_t>();
      if (count == 0) continue;
      const double x0 = cols * double(gc) / double(grid_cols),
                   x1 = cols * double(gc + 1) / double(grid_cols);
      const double y0 = rows * double(gr) / double(grid_rows),
                   y1 = rows * double(gr + 1) / double(grid_rows);
      plot.Cell(x0, x1, rows - y1, rows - y0, "diff-cell",
                Heat(std::log1p(double(count)) / std::log1p(double(most))),
                std::to_string(count) + " differ in rows " + std::to_string(int64_t(y0)) + "-" +
                    std::to_string(int64_t(y1) - 1) + ", columns " + std::to_string(int64_t(x0)) +
                    "-" + std::to_string(int64_t(x1) - 1));
    }
  }
  // Row numbers from the top (the plot's y runs upward).
  plot.YLabels({{rows, "0"}, {rows / 2, Number(std::floor(rows / 2), 9)}, {0, Number(rows, 9)}});
  return "<p class=\"muted\">Where the elements of " + Escape(name) + " differ (" +
         Number(rows, 9) + " rows &times; " + Number(cols, 9) +
         " columns; darker: more in the cell, the first row on top):</p>\n" +
         plot.Svg("where the elements of " + name + " differ");
}

}  // namespace

std::string ElementView(const json& explain) {
  std::string out = "<p>" + Escape(Str(explain, "headline")) + "</p>\n";
  for (const char* side : {"inputs", "outputs"}) {
    if (!Has(explain, side)) continue;
    for (const json& tensor : explain[side]) {
      out += "<h3>" + std::string(side) + " " + std::to_string(tensor.value("index", 0)) + " (" +
             Escape(Str(tensor, "name")) + ")</h3>\n<p>" + Escape(Str(tensor, "summary")) +
             "</p>\n";
      if (!Has(tensor, "ulp_histogram") || tensor["ulp_histogram"].empty()) continue;
      const json& bins = tensor["ulp_histogram"];
      double most = 1;
      for (const json& bin : bins) most = std::max(most, double(bin.value("count", 0)));
      svg::Plot plot(880, 200, {0, double(bins.size()), false, "ULP distance, at most"},
                     {0, most, false, "elements"});
      std::vector<std::pair<double, std::string>> labels;
      for (size_t idx = 0; idx < bins.size(); idx += std::max<size_t>(1, bins.size() / 10)) {
        labels.push_back(
            {double(idx) + 0.5, std::to_string(bins[idx].value("max_ulp", uint64_t{0}))});
      }
      plot.XLabels(std::move(labels));
      for (size_t idx = 0; idx < bins.size(); ++idx) {
        const double count = double(bins[idx].value("count", 0));
        plot.Cell(double(idx) + 0.1, double(idx) + 0.9, 0, count, "ulp-bin", kAccent,
                  "<= " + std::to_string(bins[idx].value("max_ulp", uint64_t{0})) +
                      " ULP: " + std::to_string(int64_t(count)) + " elements");
      }
      out += plot.Svg("ULP distances of " + Str(tensor, "name"));
      if (Has(tensor, "diff_map")) out += DiffMap(tensor["diff_map"], Str(tensor, "name"));
    }
  }
  return out;
}

}  // namespace upguard::diff_html

// A small SVG plot for the HTML reports: a frame with linear or log axes, points, lines,
// bands, cells, markers and labels, drawn in the order they are added. Every mark carries a class
// (and data attributes where given), so a test can count and read them.
//
//   svg::Plot plot(760, 220, {0, 1500, false, "op index"}, {1e-9, 1, true, "rel. difference"});
//   plot.Point(731, 0.02, "op culprit", "#c62828", 4, "aten::gelu");
//   std::string markup = plot.Svg("the first divergent step");
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace upguard::svg {

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;   // a log10 scale (lo > 0)
  std::string label;  // drawn under (x) or beside (y) the frame
};

class Plot {
 public:
  Plot(double width, double height, Axis x, Axis y);

  // Where a value falls, clamped to the frame.
  double X(double value) const;
  double Y(double value) const;

  // A circle at (x, y); `title` shows on hover (and is the mark's accessible name).
  void Point(double x, double y, std::string_view cls, std::string_view color, double radius,
             std::string_view title = {});
  // A line through the points (NaN points are skipped).
  void Line(const std::vector<std::pair<double, double>>& points, std::string_view cls,
            std::string_view color, double stroke_width = 1.5);
  // The area between `low` and `high` (the same x values), drawn under later marks.
  void Band(const std::vector<double>& x, const std::vector<double>& low,
            const std::vector<double>& high, std::string_view cls, std::string_view color);
  // A full-height vertical line at x, dashed or not, labeled at its top.
  void Marker(double x, std::string_view cls, std::string_view color, bool dashed,
              std::string_view label = {});
  // A full-height shaded span [x0, x1].
  void Span(double x0, double x1, std::string_view cls, std::string_view color);
  // A rectangle in value coordinates (a grid cell): [x0, x1] x [y0, y1].
  void Cell(double x0, double x1, double y0, double y1, std::string_view cls,
            std::string_view color, std::string_view title = {});

  // Labels under the x axis at these values instead of numeric ticks (bars of a histogram).
  void XLabels(std::vector<std::pair<double, std::string>> labels) {
    x_labels_ = std::move(labels);
  }
  // Labels beside the y axis at these values instead of numeric ticks (rows: ranks), each with
  // a class ("" for none; a class draws it red and bold: the rank a finding names).
  void YLabels(std::vector<std::pair<double, std::string>> labels,
               std::vector<std::string> classes = {}) {
    y_labels_ = std::move(labels);
    y_label_classes_ = std::move(classes);
  }

  // The <svg> element with its frame, ticks and axis labels.
  std::string Svg(std::string_view aria_label) const;

 private:
  std::vector<double> Ticks(const Axis& axis) const;

  double width_, height_;
  Axis x_, y_;
  double left_ = 64, right_ = 12, top_ = 12, bottom_ = 36;
  std::string marks_;
  std::vector<std::pair<double, std::string>> x_labels_, y_labels_;
  std::vector<std::string> y_label_classes_;
};

}  // namespace upguard::svg

#include "base/svg_plot.h"

#include <algorithm>
#include <cmath>

#include "base/html.h"

namespace upguard::svg {
namespace {

using html::Escape;
using html::Number;

double Scaled(const Axis& axis, double value) {
  if (!axis.log) return (value - axis.lo) / (axis.hi - axis.lo);
  return (std::log10(value) - std::log10(axis.lo)) / (std::log10(axis.hi) - std::log10(axis.lo));
}

std::string Attr(std::string_view name, std::string_view value) {
  return " " + std::string(name) + "=\"" + Escape(value) + "\"";
}

std::string Title(std::string_view title) {
  return title.empty() ? "" : "<title>" + Escape(title) + "</title>";
}

}  // namespace

Plot::Plot(double width, double height, Axis x, Axis y)
    : width_(width), height_(height), x_(std::move(x)), y_(std::move(y)) {
  for (Axis* axis : {&x_, &y_}) {
    if (axis->log && !(axis->lo > 0)) axis->lo = 1e-12;
    if (!(axis->hi > axis->lo)) axis->hi = axis->log ? axis->lo * 10 : axis->lo + 1;
  }
}

double Plot::X(double value) const {
  const double at = std::clamp(Scaled(x_, value), 0.0, 1.0);
  return left_ + (width_ - left_ - right_) * (std::isfinite(at) ? at : 0.0);
}

double Plot::Y(double value) const {
  const double at = std::clamp(Scaled(y_, value), 0.0, 1.0);
  return top_ + (height_ - top_ - bottom_) * (1 - (std::isfinite(at) ? at : 0.0));
}

void Plot::Point(double x, double y, std::string_view cls, std::string_view color, double radius,
                 std::string_view title) {
  marks_ += "<circle" + Attr("class", cls) + Attr("cx", Number(X(x), 6)) +
            Attr("cy", Number(Y(y), 6)) + Attr("r", Number(radius)) + Attr("fill", color) + ">" +
            Title(title) + "</circle>\n";
}

void Plot::Line(const std::vector<std::pair<double, double>>& points, std::string_view cls,
                std::string_view color, double stroke_width) {
  std::string list;
  for (const auto& [x, y] : points) {
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    list += Number(X(x), 6) + "," + Number(Y(y), 6) + " ";
  }
  marks_ += "<polyline" + Attr("class", cls) + Attr("points", list) + Attr("fill", "none") +
            Attr("stroke", color) + Attr("stroke-width", Number(stroke_width)) + "/>\n";
}

void Plot::Band(const std::vector<double>& x, const std::vector<double>& low,
                const std::vector<double>& high, std::string_view cls, std::string_view color) {
  std::string list;
  for (size_t idx = 0; idx < x.size() && idx < high.size(); ++idx) {
    if (std::isfinite(high[idx]))
      list += Number(X(x[idx]), 6) + "," + Number(Y(high[idx]), 6) + " ";
  }
  for (size_t idx = std::min(x.size(), low.size()); idx-- > 0;) {
    if (std::isfinite(low[idx])) list += Number(X(x[idx]), 6) + "," + Number(Y(low[idx]), 6) + " ";
  }
  marks_ += "<polygon" + Attr("class", cls) + Attr("points", list) + Attr("fill", color) + "/>\n";
}

void Plot::Marker(double x, std::string_view cls, std::string_view color, bool dashed,
                  std::string_view label) {
  const std::string at = Number(X(x), 6);
  marks_ += "<line" + Attr("class", cls) + Attr("x1", at) + Attr("x2", at) +
            Attr("y1", Number(top_)) + Attr("y2", Number(height_ - bottom_)) +
            Attr("stroke", color) + (dashed ? Attr("stroke-dasharray", "4 3") : "") + "/>\n";
  if (!label.empty()) {  // right of the line, or left of it near the frame's right edge
    const bool left = X(x) > width_ - right_ - 7.0 * double(label.size());
    marks_ += "<text" + Attr("x", Number(X(x) + (left ? -3 : 3), 6)) +
              Attr("y", Number(top_ + 10)) + (left ? Attr("text-anchor", "end") : "") + ">" +
              Escape(label) + "</text>\n";
  }
}

void Plot::Span(double x0, double x1, std::string_view cls, std::string_view color) {
  marks_ += "<rect" + Attr("class", cls) + Attr("x", Number(X(x0), 6)) + Attr("y", Number(top_)) +
            Attr("width", Number(std::max(1.0, X(x1) - X(x0)), 6)) +
            Attr("height", Number(height_ - top_ - bottom_)) + Attr("fill", color) + "/>\n";
}

void Plot::Cell(double x0, double x1, double y0, double y1, std::string_view cls,
                std::string_view color, std::string_view title) {
  const double top = std::min(Y(y0), Y(y1)), bottom = std::max(Y(y0), Y(y1));
  marks_ += "<rect" + Attr("class", cls) + Attr("x", Number(X(x0), 6)) + Attr("y", Number(top, 6)) +
            Attr("width", Number(std::max(0.5, X(x1) - X(x0)), 6)) +
            Attr("height", Number(std::max(0.5, bottom - top), 6)) + Attr("fill", color) + ">" +
            Title(title) + "</rect>\n";
}

std::vector<double> Plot::Ticks(const Axis& axis) const {
  std::vector<double> ticks;
  if (axis.log) {
    const int first = int(std::ceil(std::log10(axis.lo) - 1e-9));
    const int last = int(std::floor(std::log10(axis.hi) + 1e-9));
    const int stride = std::max(1, (last - first) / 6 + 1);
    for (int power = first; power <= last; power += stride) ticks.push_back(std::pow(10.0, power));
    return ticks;
  }
  const double span = axis.hi - axis.lo;
  const double raw = span / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (magnitude * factor >= raw) {
      step = magnitude * factor;
      break;
    }
  }
  for (double tick = std::ceil(axis.lo / step) * step; tick <= axis.hi + step * 1e-9;
       tick += step) {
    ticks.push_back(std::abs(tick) < step * 1e-9 ? 0.0 : tick);
  }
  return ticks;
}

std::string Plot::Svg(std::string_view aria_label) const {
  std::string out = "<svg" + Attr("viewBox", "0 0 " + Number(width_) + " " + Number(height_)) +
                    Attr("width", Number(width_)) + Attr("height", Number(height_)) +
                    Attr("role", "img") + Attr("aria-label", aria_label) + ">\n";
  const std::string x0 = Number(left_), x1 = Number(width_ - right_);
  const std::string y0 = Number(top_), y1 = Number(height_ - bottom_);
  out += "<rect class=\"frame\" x=\"" + x0 + "\" y=\"" + y0 + "\" width=\"" +
         Number(width_ - left_ - right_) + "\" height=\"" + Number(height_ - top_ - bottom_) +
         "\" fill=\"none\" stroke=\"#d8dde6\"/>\n";
  if (y_labels_.empty()) {
    for (double tick : Ticks(y_)) {
      const std::string y = Number(Y(tick), 6);
      out += "<line class=\"grid\" x1=\"" + x0 + "\" x2=\"" + x1 + "\" y1=\"" + y + "\" y2=\"" + y +
             "\" stroke=\"#eef1f5\"/>\n<text x=\"" + Number(left_ - 6) + "\" y=\"" +
             Number(Y(tick) + 4, 6) + "\" text-anchor=\"end\">" + Number(tick, 3) + "</text>\n";
    }
  }
  for (size_t idx = 0; idx < y_labels_.size(); ++idx) {
    const std::string cls = idx < y_label_classes_.size() ? y_label_classes_[idx] : "";
    out += "<text" + (cls.empty() ? "" : Attr("class", cls)) +
           (cls.empty() ? "" : Attr("style", "fill:#c62828;font-weight:600")) + " x=\"" +
           Number(left_ - 6) + "\" y=\"" + Number(Y(y_labels_[idx].first) + 4, 6) +
           "\" text-anchor=\"end\">" + Escape(y_labels_[idx].second) + "</text>\n";
  }
  std::vector<std::pair<double, std::string>> x_ticks = x_labels_;
  if (x_ticks.empty()) {
    for (double tick : Ticks(x_)) x_ticks.push_back({tick, Number(tick, 6)});
  }
  for (const auto& [at, text] : x_ticks) {
    out += "<text x=\"" + Number(X(at), 6) + "\" y=\"" + Number(height_ - bottom_ + 14) +
           "\" text-anchor=\"middle\">" + Escape(text) + "</text>\n";
  }
  out += marks_;
  if (!x_.label.empty()) {
    out += "<text x=\"" + Number((left_ + width_ - right_) / 2) + "\" y=\"" + Number(height_ - 4) +
           "\" text-anchor=\"middle\">" + Escape(x_.label) + "</text>\n";
  }
  if (!y_.label.empty()) {
    out += "<text transform=\"rotate(-90)\" x=\"" + Number(-(top_ + height_ - bottom_) / 2) +
           "\" y=\"12\" text-anchor=\"middle\">" + Escape(y_.label) + "</text>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace upguard::svg

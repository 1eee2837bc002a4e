#include "base/html.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/svg_plot.h"

namespace upguard {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

TEST(Html, EscapesWhatMarkupReads) {
  EXPECT_EQ(html::Escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  EXPECT_EQ(html::Number(0.000123456), "0.0001235");
  EXPECT_EQ(html::Number(12345678.0, 3), "1.23e+07");
  EXPECT_EQ(html::Number(std::nan("")), "nan");
}

TEST(Html, PageIsSelfContained) {
  const std::string page = html::Page("a <title>", "<p>body</p>");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<title>a &lt;title&gt;</title>"), std::string::npos);
  EXPECT_NE(page.find("<style>"), std::string::npos);
  EXPECT_NE(page.find("@media print"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("http"), std::string::npos);  // nothing fetched
}

TEST(Html, WriteFileNamesThePath) {
  const Status status = html::WriteFile("/nonexistent-dir/r.html", "x", "diff");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/nonexistent-dir/r.html"), std::string::npos);
}

TEST(SvgPlot, LogAxisAndMarks) {
  svg::Plot plot(400, 200, {0, 10, false, "op index"}, {1e-6, 1, true, "difference"});
  EXPECT_DOUBLE_EQ(plot.X(0), 64);
  EXPECT_DOUBLE_EQ(plot.X(10), 400 - 12);
  EXPECT_DOUBLE_EQ(plot.Y(1), 12);
  EXPECT_DOUBLE_EQ(plot.Y(1e-6), 200 - 36);
  EXPECT_DOUBLE_EQ(plot.Y(1e-3), 12 + (200 - 12 - 36) / 2.0);  // halfway in log
  EXPECT_DOUBLE_EQ(plot.Y(1e-20), plot.Y(1e-6));               // clamped to the frame
  for (int idx = 0; idx < 5; ++idx)
    plot.Point(idx, 1e-3, "op", "#000", 2, "op <" + std::to_string(idx) + ">");
  plot.Marker(3, "culprit", "#c00", true, "culprit");
  const std::string svg = plot.Svg("spread");
  EXPECT_EQ(Count(svg, "<circle class=\"op\""), 5u);
  EXPECT_NE(svg.find("<title>op &lt;4&gt;</title>"), std::string::npos);
  EXPECT_NE(svg.find("aria-label=\"spread\""), std::string::npos);
  EXPECT_NE(svg.find(">1e-06<"), std::string::npos);  // a tick of the log axis
}

}  // namespace
}  // namespace upguard

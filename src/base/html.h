// Self-contained HTML pages for upguard's reports (diff, watch, machines): escaping, numbers,
// one shared stylesheet and the page around a body, and writing the file. A page has no script
// and no external file: it works offline, reads on a laptop screen and prints.
//
//   std::string body = "<h1>" + html::Escape(title) + "</h1>" + plot.Svg();
//   RETURN_IF_ERROR(html::WriteFile("report.html", html::Page("upguard diff", body), "diff"));
#pragma once

#include <string>
#include <string_view>

#include "upguard/status.h"

namespace upguard::html {

// Text for an element's content or an attribute's value (&, <, >, " and ' escaped).
std::string Escape(std::string_view text);

// A number in at most `digits` significant digits ("%.4g"); "nan", "inf" as such.
std::string Number(double value, int digits = 4);

// The whole document: doctype, charset, viewport, `title`, the shared stylesheet (screen and
// print), then `body` inside <body><main>.
std::string Page(std::string_view title, std::string_view body);

// Writes `page` to `path`, replacing it; errors name the path and `what` the page is.
Status WriteFile(const std::string& path, const std::string& page, std::string_view what);

}  // namespace upguard::html

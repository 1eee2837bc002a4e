#include "base/html.h"

#include <cmath>
#include <cstdio>
#include <fstream>

namespace upguard::html {

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Number(double value, int digits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[40];
  std::snprintf(text, sizeof(text), "%.*g", digits, value);
  return text;
}

namespace {

// One stylesheet for every report: system fonts, a readable measure, tables and cards that
// print on paper (no dark backgrounds in print), colors that keep their meaning without color
// (each also has a word or a symbol).
constexpr std::string_view kStyle = R"(
:root{--ink:#1d2330;--muted:#5b6475;--line:#d8dde6;--bad:#c62828;--warn:#b26a00;--ok:#2e7d32;
--accent:#1f5fae;--card:#f6f8fb}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);
margin:0;background:#fff}
main{max-width:72em;margin:0 auto;padding:1.5em 2em 3em}
h1{font-size:1.4em;margin:.2em 0 .6em}h2{font-size:1.15em;margin:1.8em 0 .5em;
border-bottom:1px solid var(--line);padding-bottom:.2em}h3{font-size:1em;margin:1.2em 0 .4em}
code,.mono{font:12.5px/1.4 ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace}
.card{background:var(--card);border:1px solid var(--line);border-left:6px solid var(--accent);
border-radius:6px;padding:1em 1.2em;margin:1em 0}
.card.bad{border-left-color:var(--bad)}.card.warn{border-left-color:var(--warn)}
.card.ok{border-left-color:var(--ok)}
.badge{display:inline-block;font-weight:600;letter-spacing:.04em;text-transform:uppercase;
padding:.1em .5em;border-radius:4px;color:#fff;background:var(--accent);margin-right:.5em}
.badge.bad{background:var(--bad)}.badge.warn{background:var(--warn)}.badge.ok{background:var(--ok)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;margin:.6em 0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
table{border-collapse:collapse;margin:.5em 0;width:100%}
th,td{text-align:left;padding:.25em .6em;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.differs{color:var(--bad);font-weight:600}.same{color:var(--ok)}.muted{color:var(--muted)}
svg{display:block;max-width:100%;height:auto;margin:.4em 0 1em}
svg text{font:11px system-ui,sans-serif;fill:#333}
details{margin:.2em 0}summary{cursor:pointer}
ul.tree{list-style:none;padding-left:1.2em;margin:.1em 0}
.key span{margin-right:1.5em;white-space:nowrap}
@media print{main{max-width:none;padding:0}.card{break-inside:avoid}
details{display:block}details>*{display:block}}
)";

}  // namespace

std::string Page(std::string_view title, std::string_view body) {
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  page += Escape(title);
  page += "</title>\n<style>";
  page += kStyle;
  page += "</style>\n</head><body><main>\n";
  page += body;
  page += "</main></body></html>\n";
  return page;
}

Status WriteFile(const std::string& path, const std::string& page, std::string_view what) {
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  if (!out) {
    return IoError(path + ": cannot write the " + std::string(what) +
                   " HTML report (is its directory there and writable?)");
  }
  out << page;
  out.close();
  if (!out) return IoError(path + ": writing the " + std::string(what) + " HTML report failed");
  return Status::Ok();
}

}  // namespace upguard::html

#include "report/term_color.h"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>

namespace upguard {
namespace {

constexpr std::string_view kReset = "\033[0m";
constexpr std::string_view kBoldRed = "\033[1;31m";
constexpr std::string_view kBoldYellow = "\033[1;33m";
constexpr std::string_view kBoldGreen = "\033[1;32m";
constexpr std::string_view kRed = "\033[31m";
constexpr std::string_view kGreen = "\033[32m";

constexpr std::array<std::string_view, 9> kDiverged = {"CULPRIT",      "PROPAGATED", "STRUCTURAL",
                                                       "RNG",          "DATA",       "LATENT",
                                                       "UNATTRIBUTED", "STATE",      "STEP"};

std::string Paint(std::string_view text, std::string_view color) {
  return std::string(color) + std::string(text) + std::string(kReset);
}

// Every ` word ` in `line` painted (the spaces kept).
std::string PaintWord(const std::string& line, std::string_view word, std::string_view color) {
  const std::string padded = " " + std::string(word) + " ";
  std::string out;
  size_t from = 0;
  for (size_t at = line.find(padded); at != std::string::npos; at = line.find(padded, from)) {
    out += line.substr(from, at + 1 - from) + Paint(word, color) + " ";
    from = at + padded.size();
  }
  return out + line.substr(from);
}

std::string ColorLine(const std::string& line) {
  if (line.rfind("  IDENTICAL:", 0) == 0)
    return "  " + Paint("IDENTICAL", kBoldGreen) + line.substr(11);
  if (line.rfind("result: ", 0) == 0) {
    return Paint(line, line == "result: identical" ? kBoldGreen : kBoldRed);
  }
  for (std::string_view word : kDiverged) {
    const std::string head = "  " + std::string(word) + "  ";
    if (line.rfind(head, 0) == 0) {
      const bool numeric = word == "CULPRIT" || word == "PROPAGATED";
      return "  " + Paint(word, numeric ? kBoldRed : kBoldYellow) + line.substr(2 + word.size());
    }
  }
  std::string out = PaintWord(line, "DIFFERS", kRed);
  if (line.rfind("      ", 0) == 0) out = PaintWord(out, "identical", kGreen);  // slot lines
  return out;
}

}  // namespace

bool ColorWanted(std::FILE* stream) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return isatty(fileno(stream)) == 1;
}

std::string ColorizeDiffText(std::string_view text) {
  std::string out;
  size_t from = 0;
  while (from < text.size()) {
    const size_t end = text.find('\n', from);
    const std::string line(
        text.substr(from, end == std::string_view::npos ? text.npos : end - from));
    out += ColorLine(line);
    if (end == std::string_view::npos) break;
    out += '\n';
    from = end + 1;
  }
  return out;
}

}  // namespace upguard

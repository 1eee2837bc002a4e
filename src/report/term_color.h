// Color for the diff report on a terminal: the verdict word bold (red for a numerical culprit or
// propagation, yellow for the rest that diverged, green when identical), DIFFERS red, identical
// green, the result line bold. Applied by the CLI to the rendered text only when stdout is a
// terminal and NO_COLOR is not set (no-color.org), so the plain text stays what tests and pipes
// read.
//
//   std::string text = RenderConclusionText(conclusion, a, b);
//   if (ColorWanted(stdout)) text = ColorizeDiffText(text);
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace upguard {

// stdout (or `stream`) is a terminal, not TERM=dumb, and NO_COLOR is unset or empty.
bool ColorWanted(std::FILE* stream);

std::string ColorizeDiffText(std::string_view text);

}  // namespace upguard

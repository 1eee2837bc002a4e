// Renders a DiffResult for people (text) and for programs (JSON, schema in docs/cli.md).
//
//   std::cout << RenderDiffText(result, a, b);
//   std::cout << DiffToJson(result, a, b).dump(2);
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "diff/diff.h"

namespace upguard {

std::string RenderDiffText(const DiffResult& result, const Run& a, const Run& b);
nlohmann::json DiffToJson(const DiffResult& result, const Run& a, const Run& b);

}  // namespace upguard

// Glob patterns over names: '*' matches any run of characters, '?' any one character.
// Used for op and module filters (record --ops, --capture op=, tolerance policies).
//
//   GlobMatch("aten::*mm*", "aten::addmm")  // true
#pragma once

#include <string_view>

namespace upguard {

// True if `name` matches `pattern` as a whole.
bool GlobMatch(std::string_view pattern, std::string_view name);

}  // namespace upguard

// Pieces of the diff's page (diff_html.h) shared by its files: the model's accessors, the
// colors, and the element view.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace upguard::diff_html {

inline constexpr const char* kBad = "#c62828";
inline constexpr const char* kWarn = "#b26a00";
inline constexpr const char* kOk = "#2e7d32";
inline constexpr const char* kQuiet = "#9aa5b5";
inline constexpr const char* kAccent = "#1f5fae";
inline constexpr double kFloor = 1e-12;  // equal ops are drawn on this line of the log scale

// object[key] as a string ("" when absent or not a string).
inline std::string Str(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

// object[key] is there and not null.
inline bool Has(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) && !object[key].is_null();
}

// The element view: each captured tensor's ULP distances and, for 2+ dims, where its elements
// differ (diff --explain's "explain" object).
std::string ElementView(const nlohmann::json& explain);

}  // namespace upguard::diff_html

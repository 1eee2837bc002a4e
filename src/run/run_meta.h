// Checked reads of run metadata (a run's meta.json, a trace's RunMeta record) that never throw.
//
//   RETURN_IF_ERROR(CheckRunMeta(meta, "runs/a/meta.json"));
//   ASSIGN_OR_RETURN(std::optional<int64_t> world_size,
//                    MetaInt(meta, "world_size", "runs/a/meta.json"));
//
// Metadata comes from files that may have been edited by hand or written by another tool, and
// nlohmann's typed accessors (value(), get<T>()) throw on a field of the wrong type. These
// helpers return a Status instead, naming the file, the field, the type upguard expects and
// what it found. CheckRunMeta checks every field upguard writes (python/upguard/_meta.py,
// recorder.cc) wherever it is present; LoadRun calls it on every file, so code that reads a
// loaded run's metadata with value(field, default of the documented type) cannot throw.
// Fields upguard does not know are left alone.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "upguard/status.h"

namespace upguard {

// What a JSON value is, for messages: `a string "0"`, `an array`, `a number 1.5`.
std::string DescribeJsonValue(const nlohmann::json& value);

// `object[field]` as an integer; nullopt when absent. `where` names the file in the message.
StatusOr<std::optional<int64_t>> MetaInt(const nlohmann::json& object, const std::string& field,
                                         const std::string& where);
// `object[field]` as a string; nullopt when absent.
StatusOr<std::optional<std::string>> MetaString(const nlohmann::json& object,
                                                const std::string& field, const std::string& where);

// Checks the type of every field of run metadata that upguard knows, nested ones included
// ("record_options.max_depth"), and that `meta` is an object.
Status CheckRunMeta(const nlohmann::json& meta, const std::string& where);

}  // namespace upguard

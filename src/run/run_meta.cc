#include "run/run_meta.h"

#include <cstddef>
#include <limits>

namespace upguard {
namespace {

using nlohmann::json;

enum class Kind : uint8_t {
  kInteger,
  kIntegerOrNull,
  kIntegerOrString,
  kString,
  kBoolean,
  kStringArray,
  kIntegerArray,
  kStringMap,   // an object whose values are strings
  kObject,      // an object with `fields`
  kObjectArray  // an array of objects with `fields`
};

struct Field {
  const char* name;
  Kind kind;
  const Field* fields = nullptr;  // kObject, kObjectArray: the fields of the object(s)
  size_t field_count = 0;
};

template <size_t N>
constexpr Field WithFields(const char* name, Kind kind, const Field (&fields)[N]) {
  return Field{name, kind, fields, N};
}

constexpr Field kStepsFields[] = {{"first", Kind::kInteger}, {"last", Kind::kIntegerOrNull}};
constexpr Field kRecordOptionsFields[] = {WithFields("steps", Kind::kObject, kStepsFields),
                                          {"max_depth", Kind::kInteger},
                                          {"ops", Kind::kStringArray},
                                          {"stats", Kind::kBoolean}};
constexpr Field kProcessGroupFields[] = {
    {"name", Kind::kString}, {"ranks", Kind::kIntegerArray}, {"backend", Kind::kString}};

// What the recorder (recorder.cc) and the engine (python/upguard/_meta.py) write, and the
// run-directory keys of docs/formats/trace.md §2.
constexpr Field kRunMetaFields[] = {
    {"rank", Kind::kInteger},
    {"world_size", Kind::kInteger},
    {"local_rank", Kind::kInteger},
    {"pid", Kind::kInteger},
    {"trace_version", Kind::kInteger},
    {"stats_version", Kind::kInteger},
    {"start_time", Kind::kIntegerOrString},  // the recorder's seconds; trace.md: ISO 8601
    {"intra_op_threads", Kind::kInteger},
    {"inter_op_threads", Kind::kInteger},
    {"argv", Kind::kStringArray},
    {"launcher_argv", Kind::kStringArray},
    {"executable", Kind::kString},
    {"cwd", Kind::kString},
    {"torch_version", Kind::kString},
    {"python_version", Kind::kString},
    {"upguard_version", Kind::kString},
    {"hostname", Kind::kString},
    {"uid", Kind::kInteger},
    {"user", Kind::kString},
    {"cwd_real", Kind::kString},
    {"against", Kind::kString},
    {"format", Kind::kString},
    {"created", Kind::kString},
    {"ranks", Kind::kStringArray},
    {"deterministic_algorithms", Kind::kBoolean},
    {"cudnn_deterministic", Kind::kBoolean},
    {"complete", Kind::kBoolean},
    {"interrupted", Kind::kBoolean},  // upguard recover moved it into place (trace.md §2)
    {"env", Kind::kStringMap},
    WithFields("record_options", Kind::kObject, kRecordOptionsFields),
    WithFields("process_groups", Kind::kObjectArray, kProcessGroupFields),
};

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kInteger:
      return "an integer";
    case Kind::kIntegerOrNull:
      return "an integer or null";
    case Kind::kIntegerOrString:
      return "an integer or a string";
    case Kind::kString:
      return "a string";
    case Kind::kBoolean:
      return "a boolean";
    case Kind::kStringArray:
      return "an array of strings";
    case Kind::kIntegerArray:
      return "an array of integers";
    case Kind::kStringMap:
      return "an object of strings";
    case Kind::kObject:
      return "an object";
    case Kind::kObjectArray:
      return "an array of objects";
  }
  return "?";
}

Status WrongType(const std::string& where, const std::string& field, const char* expected,
                 const json& found) {
  return DataLoss(where + ": metadata field \"" + field + "\" should be " + expected + ", found " +
                  DescribeJsonValue(found) +
                  "; was it edited by hand? fix the field or record the run again");
}

bool IsInt64(const json& value) {
  if (value.is_number_unsigned()) {
    return value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  }
  return value.is_number_integer();
}

Status CheckFields(const json& object, const Field* fields, size_t count, const std::string& path,
                   const std::string& where);

// `value` (the field at `path`) against `field`'s kind.
Status CheckValue(const json& value, const Field& field, const std::string& path,
                  const std::string& where) {
  const char* expected = KindName(field.kind);
  switch (field.kind) {
    case Kind::kInteger:
      if (!IsInt64(value)) return WrongType(where, path, expected, value);
      return Status::Ok();
    case Kind::kIntegerOrNull:
      if (!value.is_null() && !IsInt64(value)) return WrongType(where, path, expected, value);
      return Status::Ok();
    case Kind::kIntegerOrString:
      if (!value.is_string() && !IsInt64(value)) return WrongType(where, path, expected, value);
      return Status::Ok();
    case Kind::kString:
      if (!value.is_string()) return WrongType(where, path, expected, value);
      return Status::Ok();
    case Kind::kBoolean:
      if (!value.is_boolean()) return WrongType(where, path, expected, value);
      return Status::Ok();
    case Kind::kStringArray:
    case Kind::kIntegerArray:
    case Kind::kObjectArray: {
      if (!value.is_array()) return WrongType(where, path, expected, value);
      for (size_t idx = 0; idx < value.size(); ++idx) {
        const json& item = value[idx];
        const std::string item_path = path + "[" + std::to_string(idx) + "]";
        if (field.kind == Kind::kStringArray && !item.is_string()) {
          return WrongType(where, item_path, "a string", item);
        }
        if (field.kind == Kind::kIntegerArray && !IsInt64(item)) {
          return WrongType(where, item_path, "an integer", item);
        }
        if (field.kind == Kind::kObjectArray) {
          if (!item.is_object()) return WrongType(where, item_path, "an object", item);
          RETURN_IF_ERROR(CheckFields(item, field.fields, field.field_count, item_path, where));
        }
      }
      return Status::Ok();
    }
    case Kind::kStringMap:
      if (!value.is_object()) return WrongType(where, path, expected, value);
      for (const auto& [name, item] : value.items()) {
        if (!item.is_string()) return WrongType(where, path + "." + name, "a string", item);
      }
      return Status::Ok();
    case Kind::kObject:
      if (!value.is_object()) return WrongType(where, path, expected, value);
      return CheckFields(value, field.fields, field.field_count, path, where);
  }
  return Status::Ok();
}

Status CheckFields(const json& object, const Field* fields, size_t count, const std::string& path,
                   const std::string& where) {
  for (size_t idx = 0; idx < count; ++idx) {
    const Field& field = fields[idx];
    auto it = object.find(field.name);
    if (it == object.end()) continue;
    const std::string field_path = path.empty() ? field.name : path + "." + field.name;
    RETURN_IF_ERROR(CheckValue(*it, field, field_path, where));
  }
  return Status::Ok();
}

}  // namespace

std::string DescribeJsonValue(const json& value) {
  constexpr size_t kMaxText = 40;
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return std::string("a boolean ") + (value.get<bool>() ? "true" : "false");
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer " + value.dump();
    case json::value_t::number_float:
      return "a number " + value.dump();
    case json::value_t::string: {
      std::string text = value.dump();
      if (text.size() > kMaxText) text = text.substr(0, kMaxText) + "...";
      return "a string " + text;
    }
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "a value of type " + std::string(value.type_name());
  }
}

StatusOr<std::optional<int64_t>> MetaInt(const json& object, const std::string& field,
                                         const std::string& where) {
  if (!object.is_object()) return WrongType(where, "(the metadata)", "an object", object);
  auto it = object.find(field);
  if (it == object.end()) return std::optional<int64_t>();
  if (!IsInt64(*it)) return WrongType(where, field, "an integer", *it);
  return std::optional<int64_t>(it->get<int64_t>());
}

StatusOr<std::optional<std::string>> MetaString(const json& object, const std::string& field,
                                                const std::string& where) {
  if (!object.is_object()) return WrongType(where, "(the metadata)", "an object", object);
  auto it = object.find(field);
  if (it == object.end()) return std::optional<std::string>();
  if (!it->is_string()) return WrongType(where, field, "a string", *it);
  return std::optional<std::string>(it->get<std::string>());
}

Status CheckRunMeta(const json& meta, const std::string& where) {
  if (!meta.is_object()) {
    return DataLoss(where + ": the metadata should be a JSON object, found " +
                    DescribeJsonValue(meta) +
                    "; was it edited by hand? fix it or record the run again");
  }
  return CheckFields(meta, kRunMetaFields, sizeof(kRunMetaFields) / sizeof(kRunMetaFields[0]), "",
                     where);
}

}  // namespace upguard

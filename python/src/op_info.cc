#include "op_info.h"

#include <algorithm>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace upguard::torch_adapter {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Ops whose results hold no defined values yet.
bool DefinesNoValues(std::string_view name) {
  return StartsWith(name, "aten::empty") || StartsWith(name, "aten::new_empty") ||
         StartsWith(name, "aten::_empty") || name == "aten::resize_" || name == "aten::resize_as_";
}

// In-place ops whose result does not depend on the old contents of `self`.
bool OverwritesSelf(std::string_view name) {
  static constexpr std::string_view kOps[] = {
      "aten::fill_",      "aten::zero_",       "aten::copy_",     "aten::normal_",
      "aten::uniform_",   "aten::random_",     "aten::cauchy_",   "aten::exponential_",
      "aten::geometric_", "aten::log_normal_", "aten::bernoulli_"};
  for (std::string_view op : kOps) {
    if (name == op) return true;
  }
  return false;
}

OpInfo Build(const at::RecordFunction& fn) {
  OpInfo info;
  std::string_view name = fn.name();
  info.name = name;
  info.skip = StartsWith(name, "profiler::");
  info.overwrites_self = OverwritesSelf(name);
  c10::optional<c10::FunctionSchema> schema = fn.operator_schema();
  if (!schema) return info;
  const bool no_values = DefinesNoValues(name);
  const c10::TypePtr optional_generator = c10::OptionalType::create(c10::GeneratorType::get());
  for (const c10::Argument& arg : schema->arguments()) {
    if (info.generator_arg < 0 && arg.type()->isSubtypeOf(*optional_generator)) {
      info.generator_arg = static_cast<int>(info.input_names.size());
    }
    info.input_names.push_back(arg.name());
    info.input_is_out.push_back(arg.is_out());
  }
  for (const c10::Argument& ret : schema->returns()) {
    const c10::AliasInfo* alias = ret.alias_info();
    ResultKind kind = ResultKind::kValue;
    if (no_values) {
      kind = ResultKind::kUninit;
    } else if (alias != nullptr && !alias->isWrite()) {
      kind = ResultKind::kView;
    }
    info.results.push_back(kind);
    info.result_names.push_back(ret.name());
  }
  const bool writes = std::any_of(
      schema->arguments().begin(), schema->arguments().end(), [](const c10::Argument& arg) {
        return arg.alias_info() != nullptr && arg.alias_info()->isWrite();
      });
  info.writes_inputs = writes;
  info.pure_view = !writes && !info.results.empty() &&
                   std::all_of(info.results.begin(), info.results.end(),
                               [](ResultKind kind) { return kind == ResultKind::kView; });
  return info;
}

}  // namespace

const OpInfo& LookupOpInfo(const at::RecordFunction& fn) {
  // Operator names point into their schema and never move, so the name's address finds the
  // op without hashing the string; the strcmp guards names that live in a RecordFunction.
  thread_local std::unordered_map<const char*, const OpInfo*> local;
  const char* name = fn.name();
  auto it = local.find(name);
  if (it != local.end() && it->second->name == name) return *it->second;

  static std::mutex mu;
  static auto* shared = new std::unordered_map<std::string, OpInfo>();  // never freed
  std::lock_guard<std::mutex> lock(mu);
  auto shared_it = shared->find(name);
  if (shared_it == shared->end()) shared_it = shared->emplace(name, Build(fn)).first;
  local[name] = &shared_it->second;
  return shared_it->second;
}

}  // namespace upguard::torch_adapter

#include "op_info.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "undeclared_writes.h"

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
      "aten::fill_", "aten::zero_", "aten::copy_", "aten::normal_", "aten::uniform_",
      "aten::random_", "aten::cauchy_", "aten::exponential_", "aten::geometric_",
      "aten::log_normal_", "aten::bernoulli_",
      // torch 2.x's DDP reducer scopes: the one input they show is the gradient bucket's view
      // they are about to fill (mul_out divides the gradient into it, copy_ copies it); what
      // it held before is the bucket's earlier contents, which identical runs need not share.
      "torch::distributed::reducer::mul_out", "torch::distributed::reducer::copy_"};
  for (std::string_view op : kOps) {
    if (name == op) return true;
  }
  return false;
}

// In-place ops that change a tensor's sizes, strides or storage and write no values: their
// result holds what `self` (or the storage set) held, so it is a view. Digesting it would read
// memory that may not be initialized (as_strided_ on a fresh buffer in sparse kernels).
bool ChangesOnlyMetadata(std::string_view name) {
  static constexpr std::string_view kOps[] = {
      "aten::as_strided_", "aten::set_",           "aten::squeeze_",
      "aten::unsqueeze_",  "aten::transpose_",     "aten::t_",
      "aten::swapdims_",   "aten::swapaxes_",      "aten::detach_",
      "aten::_coalesced_", "aten::sparse_resize_", "aten::sparse_resize_and_clear_"};
  for (std::string_view op : kOps) {
    if (name == op) return true;
  }
  return false;
}

// c10d's schemas name their arguments _0, _1, ...: the names of torch.distributed's API
// instead, the written argument, and whether it is written without being read.
struct CollectiveSchema {
  std::string_view op;
  std::vector<std::string> names;
  int written_arg;
  bool output_only;
};

const CollectiveSchema* FindCollective(std::string_view name) {
  static const auto* schemas = new std::vector<CollectiveSchema>{
      {"c10d::allreduce_", {"tensors", "process_group", "reduce_op", "timeout"}, 0, false},
      {"c10d::broadcast_",
       {"tensors", "process_group", "root_rank", "root_tensor", "timeout"},
       0,
       false},
      {"c10d::reduce_",
       {"tensors", "process_group", "reduce_op", "root_rank", "root_tensor", "timeout"},
       0,
       false},
      {"c10d::allgather_",
       {"output_tensors", "input_tensors", "process_group", "timeout"},
       0,
       true},
      {"c10d::reduce_scatter_",
       {"output_tensors", "input_tensors", "process_group", "reduce_op", "timeout"},
       0,
       true},
      {"c10d::alltoall_", {"output_tensors", "input_tensors", "process_group", "timeout"}, 0, true},
      {"c10d::scatter_",
       {"output_tensors", "input_tensors", "process_group", "root_rank", "timeout"},
       0,
       true},
      {"c10d::gather_",
       {"output_tensors", "input_tensors", "process_group", "root_rank", "timeout"},
       0,
       true},
      {"c10d::send", {"tensors", "process_group", "dst_rank", "tag"}, -1, false},
      {"c10d::recv_", {"tensors", "process_group", "src_rank", "tag"}, 0, true},
      {"c10d::barrier", {"process_group", "device_ids", "timeout"}, -1, false},
      // torch 2.x (FSDP2, all_gather_into_tensor, reduce_scatter_tensor, coalesced calls):
      // their schemas name their arguments.
      {"c10d::_allgather_base_", {}, 0, true},
      {"c10d::_reduce_scatter_base_", {}, 0, true},
      {"c10d::allgather_into_tensor_coalesced_", {}, 0, true},
      {"c10d::reduce_scatter_tensor_coalesced_", {}, 0, true},
      {"c10d::allgather_coalesced_", {}, 0, true},
      {"c10d::allreduce_coalesced_", {}, 0, false},
      {"c10d::alltoall_base_", {}, 0, true},
  };
  for (const CollectiveSchema& schema : *schemas) {
    if (schema.op == name) return &schema;
  }
  return nullptr;
}

// A collective's tensor results are its written arguments, returned: aliases. Its written
// argument counts as written (captures copy it at entry); an output-only one is not read.
void DescribeCollective(const c10::FunctionSchema& schema, OpInfo* info) {
  info->collective = true;
  const CollectiveSchema* known = FindCollective(info->name);
  for (size_t idx = 0; idx < schema.arguments().size(); ++idx) {
    if (schema.arguments()[idx].type()->str().find("ProcessGroup") != std::string::npos) {
      info->collective_group_arg = static_cast<int>(idx);
    }
    // 1.13's schemas name them _0, _1, ...; 2.x's name them (and differ: allreduce_ gained
    // sparse_indices), so only placeholder names are replaced.
    const std::string& given = info->input_names[idx];
    const bool placeholder = given.empty() || (given.size() > 1 && given[0] == '_' &&
                                               std::isdigit(static_cast<unsigned char>(given[1])));
    if (known != nullptr && idx < known->names.size() && placeholder) {
      info->input_names[idx] = known->names[idx];
    }
  }
  if (known != nullptr) {
    info->collective_written_arg = known->written_arg;
    info->overwrites_self = known->output_only;
    info->writes_inputs = known->written_arg >= 0;
    const int written = known->written_arg;
    if (written >= 0 && std::find(info->mutable_inputs.begin(), info->mutable_inputs.end(),
                                  written) == info->mutable_inputs.end()) {
      info->mutable_inputs.push_back(written);  // the schema may not say it (c10d's do not)
    }
  }
  for (ResultKind& kind : info->results) kind = ResultKind::kView;
  info->pure_view = false;
  info->written_inputs.clear();  // recorded at completion (collectives.h)
}

// Functional collectives (torch.distributed._functional_collectives; DTensor, tensor
// parallelism and compiled graphs issue them): each returns the tensors it writes and leaves
// them to be completed by a later wait_tensor. The _c10d_functional_autograd variants wrap
// the same ops in an autograd function.
bool IsFunctionalCollective(std::string_view name) {
  return StartsWith(name, "_c10d_functional::") || StartsWith(name, "_c10d_functional_autograd::");
}

bool IsCollectiveWait(std::string_view name) {
  return name == "_c10d_functional::wait_tensor" || name == "_c10d_functional::wait_tensors";
}

// Its results are what the collective writes: recorded at its completion (the Collective
// record), never at its return, when they are not written yet. An in-place one (all_reduce_)
// writes its argument only through the collective, recorded there too.
void DescribeFunctionalCollective(OpInfo* info) {
  info->collective = true;
  info->collective_functional = true;
  for (size_t idx = 0; idx < info->input_names.size(); ++idx) {
    if (info->input_names[idx] == "group_name") {
      info->collective_group_name_arg = static_cast<int>(idx);
    }
  }
  for (ResultKind& kind : info->results) kind = ResultKind::kView;
  info->pure_view = false;
  info->written_inputs.clear();
}

// wait_tensor returns its argument once the collective writing it is done: a view, whose
// values are the collective's (recorded in its Collective record).
void DescribeCollectiveWait(OpInfo* info) {
  info->collective_wait = true;
  for (ResultKind& kind : info->results) kind = ResultKind::kView;
  info->pure_view = true;
}

OpInfo Build(const at::RecordFunction& fn) {
  OpInfo info;
  std::string_view name = fn.name();
  info.name = name;
  info.skip = StartsWith(name, "profiler::");
  info.overwrites_self = OverwritesSelf(name);
  info.defines_self_values = name == "aten::lift_fresh" || name == "aten::lift";
  c10::optional<c10::FunctionSchema> schema = fn.operator_schema();
  if (!schema) return info;
  info.has_schema = true;
  const bool no_values = DefinesNoValues(name);
  const bool metadata_only = ChangesOnlyMetadata(name);
  const c10::TypePtr optional_generator = c10::OptionalType::create(c10::GeneratorType::get());
  for (const c10::Argument& arg : schema->arguments()) {
    if (info.generator_arg < 0 && arg.type()->isSubtypeOf(*optional_generator)) {
      info.generator_arg = static_cast<int>(info.input_names.size());
    }
    const bool declared = arg.alias_info() != nullptr && arg.alias_info()->isWrite();
    const bool undeclared = !declared && IsUndeclaredWrite(name, arg.name());
    if ((declared && !metadata_only) || undeclared) {
      info.written_inputs.push_back(static_cast<int>(info.input_names.size()));
    }
    if (declared || undeclared) {
      info.mutable_inputs.push_back(static_cast<int>(info.input_names.size()));
    }
    info.undeclared_writes |= undeclared;
    info.input_names.push_back(arg.name());
    info.input_is_out.push_back(arg.is_out());
  }
  for (const c10::Argument& ret : schema->returns()) {
    const c10::AliasInfo* alias = ret.alias_info();
    ResultKind kind = ResultKind::kValue;
    if (no_values) {
      kind = ResultKind::kUninit;
    } else if (alias != nullptr && (!alias->isWrite() || metadata_only)) {
      kind = ResultKind::kView;
    }
    info.results.push_back(kind);
    info.result_names.push_back(ret.name());
  }
  // FSDP2's copy-in returns its `all_gather_output` argument unannotated, after filling only
  // this rank's slice of it (result 0, a view of that slice, holds the values): the rest is
  // uninitialized until the all-gather that follows writes it, recorded at its completion.
  if (name == "fsdp::all_gather_copy_in" && info.results.size() == 2) {
    info.results[1] = ResultKind::kView;
  }
  const bool writes = std::any_of(
      schema->arguments().begin(), schema->arguments().end(), [](const c10::Argument& arg) {
        return arg.alias_info() != nullptr && arg.alias_info()->isWrite();
      });
  info.writes_inputs = (writes && !metadata_only) || info.undeclared_writes;
  info.pure_view = (!writes || metadata_only) && !info.results.empty() &&
                   std::all_of(info.results.begin(), info.results.end(),
                               [](ResultKind kind) { return kind == ResultKind::kView; });
  if (StartsWith(name, "c10d::")) DescribeCollective(*schema, &info);
  if (IsCollectiveWait(name)) {
    DescribeCollectiveWait(&info);
  } else if (IsFunctionalCollective(name)) {
    DescribeFunctionalCollective(&info);
  }
  return info;
}

}  // namespace

const OpInfo& LookupOpInfo(const at::RecordFunction& fn) {
  // Overloads share a name ("aten::mul" is mul.Tensor and mul.out) and differ in their schema;
  // an out= overload has one argument more than its functional one. So an op is found by its
  // name and its argument count: operator names point into their schema and never move, so the
  // name's address finds it without hashing the string; the strcmp guards names that live in a
  // RecordFunction.
  using Key = std::pair<const char*, size_t>;
  struct KeyHash {
    size_t operator()(const Key& key) const {
      return std::hash<const char*>()(key.first) * 31 + key.second;
    }
  };
  thread_local std::unordered_map<Key, const OpInfo*, KeyHash> local;
  const char* name = fn.name();
  const size_t arity = fn.inputs().size();
  auto it = local.find(Key{name, arity});
  if (it != local.end() && it->second->name == name) return *it->second;

  static std::mutex mu;
  static auto* shared = new std::map<std::pair<std::string, size_t>, OpInfo>();  // never freed
  std::lock_guard<std::mutex> lock(mu);
  auto shared_it = shared->find({name, arity});
  if (shared_it == shared->end())
    shared_it = shared->emplace(std::make_pair(name, arity), Build(fn)).first;
  local[Key{name, arity}] = &shared_it->second;
  return shared_it->second;
}

}  // namespace upguard::torch_adapter

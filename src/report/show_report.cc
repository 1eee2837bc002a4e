#include "report/show_report.h"

#include <sstream>

#include "report/format_util.h"

namespace upguard {
namespace {

// Where the table's "op" column starts: after the indent and the #, phase, d and module columns.
constexpr size_t kOpColumn = 2 + 6 + 10 + 3 + 22;

std::string ArgsBrief(const std::vector<ArgRecord>& args, const StringTable& strings) {
  std::string text;
  for (const ArgRecord& arg : args) {
    if (arg.kind == ArgKind::kNone) continue;
    if (!text.empty()) text += ", ";
    text += arg.kind == ArgKind::kScalar ? strings.Get(arg.text) : DescribeArg(arg, strings);
  }
  return text;
}

std::string OutputDigests(const OpRecord& op) {
  std::string text;
  for (const ArgRecord& arg : op.outputs) {
    if (arg.kind != ArgKind::kTensor) continue;
    if (!text.empty()) text += " ";
    text += arg.digest.Short();
  }
  return OrDash(text);
}

// "group 0 [0,1,2] #3 completed +5 ops" (trace.md §5.6); "" for an op that is no collective.
std::string CollectiveBrief(const OpRecord& op, const StringTable& strings) {
  if (op.collective == nullptr) return "";
  const CollectiveInfo& info = *op.collective;
  std::string members;
  for (int32_t rank : info.ranks) members += (members.empty() ? "" : ",") + std::to_string(rank);
  if (info.ranks.empty()) {
    members = "rank " + std::to_string(info.group_rank) + " of " + std::to_string(info.group_size);
  }
  return "  group " + OrDash(strings.Get(info.group)) + " [" + members + "] #" +
         std::to_string(info.seq) + (info.completed ? " completed" : " not completed") + " +" +
         std::to_string(info.ops_before_completion) + " ops";
}

// "self: exp_avg_sq of fc.weight; out0: exp_avg_sq of fc.weight": the arguments the model
// names (Arg::label), by name or "in<K>" / "out<K>" as the diff calls them; "" when none is.
std::string ArgLabels(const OpRecord& op, const StringTable& strings) {
  std::string text;
  for (const auto* args : {&op.inputs, &op.outputs}) {
    for (size_t arg_idx = 0; arg_idx < args->size(); ++arg_idx) {
      const ArgRecord& arg = (*args)[arg_idx];
      if (arg.label == kEmptyString) continue;
      std::string name = strings.Get(arg.name);
      if (name.empty()) name = (args == &op.inputs ? "in" : "out") + std::to_string(arg_idx);
      text += (text.empty() ? "" : "; ") + name + ": " + strings.Get(arg.label);
    }
  }
  return text;
}

bool Shown(const StepInfo& step, const ShowOptions& options) {
  return !options.step || *options.step == step.step;
}

// A Stopped record (trace.md §5.7) as the JSON report gives it.
nlohmann::json StoppedJson(const StoppedRecord& stopped) {
  return nlohmann::json{{"step", stopped.step},
                        {"reason", std::string(StopReasonToken(stopped.reason))},
                        {"message", stopped.message}};
}

const RankTrace* PickRank(const Run& run, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= run.ranks.size()) return nullptr;
  return &run.ranks[rank];
}

}  // namespace

StatusOr<std::string> RenderShowText(const Run& run, const ShowOptions& options) {
  std::ostringstream out;
  const RankTrace* trace = PickRank(run, options.rank);
  if (trace == nullptr) return "no rank " + std::to_string(options.rank) + " in " + run.dir + "\n";
  uint64_t total_ops = 0;
  for (const StepInfo& step : trace->steps()) total_ops += step.op_count;
  out << "run " << run.dir << "  rank " << trace->rank << "  torch "
      << trace->meta.value("torch_version", "?") << "  " << trace->steps().size() << " step(s), "
      << total_ops << " op(s)"
      << (trace->stopped()    ? "  [" + StoppedNote(*trace->stopped()) + "]"
          : trace->complete() ? ""
                              : "  [trace ends early]")
      << "\n";
  bool any = false;
  for (size_t step_idx = 0; step_idx < trace->steps().size(); ++step_idx) {
    if (!Shown(trace->steps()[step_idx], options)) continue;
    ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> step_ops, trace->Ops(step_idx));
    const StepOps& step = *step_ops;
    any = true;
    out << "\nstep " << step.step << "  (" << step.ops.size() << " ops"
        << (step.end ? ", step digest " + step.end->digest.Short() : ", no step end")
        << (IsFingerprintStep(step.end) ? ", a fingerprint" : "") << ")\n";
    out << "  " << Fit("#", 6) << Fit("phase", 10) << Fit("d", 3) << Fit("module", 22)
        << Fit("op", 28) << Fit("inputs -> outputs", 56) << "digest\n";
    for (size_t op_idx = 0; op_idx < step.ops.size(); ++op_idx) {
      const OpRecord& op = step.ops[op_idx];
      if (op.depth > options.max_depth) continue;
      std::string indent(std::min<size_t>(op.depth, 6) * 2, ' ');
      out << "  " << Fit(std::to_string(op_idx), 6) << Fit(std::string(PhaseName(op.phase)), 10)
          << Fit(std::to_string(op.depth), 3) << Fit(OrDash(trace->Str(op.module)), 22)
          << Fit(indent + trace->Str(op.op), 28)
          << Fit(ArgsBrief(op.inputs, trace->strings()) + " -> " +
                     ArgsBrief(op.outputs, trace->strings()),
                 56)
          << OutputDigests(op) << CollectiveBrief(op, trace->strings()) << "\n";
      const std::string labels = ArgLabels(op, trace->strings());
      if (!labels.empty()) out << std::string(kOpColumn, ' ') << indent << labels << "\n";
    }
  }
  if (!any && options.step) out << "\nno step " << *options.step << " in this trace\n";
  if (trace->damage()) out << "\nnote: " << trace->damage()->message << "\n";
  return out.str();
}

StatusOr<nlohmann::json> ShowToJson(const Run& run, const ShowOptions& options) {
  using nlohmann::json;
  const RankTrace* trace = PickRank(run, options.rank);
  json steps = json::array();
  if (trace != nullptr) {
    for (size_t step_idx = 0; step_idx < trace->steps().size(); ++step_idx) {
      if (!Shown(trace->steps()[step_idx], options)) continue;
      ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> step_ops, trace->Ops(step_idx));
      const StepOps& step = *step_ops;
      json ops = json::array();
      for (size_t op_idx = 0; op_idx < step.ops.size(); ++op_idx) {
        const OpRecord& op = step.ops[op_idx];
        if (op.depth > options.max_depth) continue;
        auto args = [&](const std::vector<ArgRecord>& list) {
          json items = json::array();
          for (const ArgRecord& arg : list) {
            json item = {{"name", trace->Str(arg.name)}, {"kind", ArgKindName(arg.kind)}};
            if (arg.label != kEmptyString) item["label"] = trace->Str(arg.label);
            if (arg.kind == ArgKind::kScalar) item["text"] = trace->Str(arg.text);
            if (arg.kind != ArgKind::kScalar && arg.kind != ArgKind::kNone) {
              item["dtype"] = DTypeName(arg.dtype);
              item["shape"] = arg.shape;
            }
            if (arg.kind == ArgKind::kTensor) item["digest"] = arg.digest.Hex();
            if (arg.kind == ArgKind::kUnread) {  // why its values were not read (trace.md §5.3)
              item["reason"] = UnreadReasonName(arg.unread);
              item["detail"] = trace->Str(arg.text);
            }
            items.push_back(item);
          }
          return items;
        };
        json item = {{"index", op_idx},
                     {"seq", op.seq},
                     {"op", trace->Str(op.op)},
                     {"phase", PhaseName(op.phase)},
                     {"depth", op.depth},
                     {"module", trace->Str(op.module)},
                     {"call_site", trace->Str(op.call_site)},
                     {"autograd_node", trace->Str(op.node)},
                     {"inputs", args(op.inputs)},
                     {"outputs", args(op.outputs)}};
        if (op.collective != nullptr) {
          const CollectiveInfo& info = *op.collective;
          item["collective"] = {{"group", trace->Str(info.group)},
                                {"ranks", info.ranks},
                                {"group_rank", info.group_rank},
                                {"group_size", info.group_size},
                                {"seq", info.seq},
                                {"completed", info.completed},
                                {"ops_before_completion", info.ops_before_completion}};
        }
        ops.push_back(std::move(item));
      }
      steps.push_back({{"step", step.step},
                       {"digest", step.end ? json(step.end->digest.Hex()) : json(nullptr)},
                       {"fingerprint", IsFingerprintStep(step.end)},
                       {"ops", ops}});
    }
  }
  json out = {{"schema", "upguard.show/1"},
              {"run", run.dir},
              {"rank", options.rank},
              {"complete", trace != nullptr && trace->complete()},
              {"meta", trace != nullptr ? trace->meta : json(nullptr)},
              {"steps", steps}};
  if (trace != nullptr && trace->stopped()) out["stopped"] = StoppedJson(*trace->stopped());
  return out;
}

}  // namespace upguard

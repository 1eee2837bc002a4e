#include "analysis/setup_check.h"

#include <set>
#include <string_view>

#include "analysis/state_check.h"

namespace upguard {
namespace {

// Engine facts (python/upguard/_meta.py) that change numerics or the op sequence.
constexpr const char* kNumericsKeys[] = {
    "torch_version",    "python_version",           "intra_op_threads",
    "inter_op_threads", "deterministic_algorithms", "cudnn_deterministic",
    "world_size",
};

std::string ValueText(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object() || !object.contains(key)) return "(unset)";
  const nlohmann::json& value = object[key];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// Top-level keys that "backend_flags" reads again (as torch.are_deterministic_algorithms_enabled()
// and torch.backends.cudnn.deterministic): named once, by the flag.
bool CoveredByBackendFlags(std::string_view key) {
  return key == "deterministic_algorithms" || key == "cudnn_deterministic";
}

void CompareKey(const nlohmann::json& a, const nlohmann::json& b, const std::string& key,
                std::vector<EnvironmentDifference>* out) {
  std::string va = ValueText(a, key), vb = ValueText(b, key);
  if (va != vb) out->push_back(EnvironmentDifference{key, std::move(va), std::move(vb), ""});
}

const nlohmann::json& Member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json* const kEmpty = new nlohmann::json(nlohmann::json::object());
  return object.is_object() && object.contains(key) ? object[key] : *kEmpty;
}

std::set<std::string> Names(const nlohmann::json& a, const nlohmann::json& b) {
  std::set<std::string> names;
  for (const nlohmann::json* object : {&a, &b}) {
    if (!object->is_object()) continue;
    for (const auto& [name, value] : object->items()) names.insert(name);
  }
  return names;
}

// One run's backend flag: its value as step 0 began (a run recorded before that reading
// existed has only the value at the end) and at the end.
struct FlagReadings {
  std::string start;
  std::string end;

  FlagReadings(const nlohmann::json& meta, const std::string& name)
      : end(ValueText(Member(meta, "backend_flags"), name)) {
    const nlohmann::json& at_start = Member(meta, "backend_flags_at_start");
    start = at_start.contains(name) ? ValueText(at_start, name) : end;
  }
  bool Changed() const { return start != end; }
  std::string Text() const { return start + " at start, " + end + " at end"; }
};

bool HasBackendFlags(const nlohmann::json& meta) {
  const nlohmann::json& flags = Member(meta, "backend_flags");
  return flags.is_object() && !flags.empty();
}

void CompareBackendFlags(const nlohmann::json& a, const nlohmann::json& b,
                         std::vector<EnvironmentDifference>* out) {
  for (const std::string& name : Names(Member(a, "backend_flags"), Member(b, "backend_flags"))) {
    const FlagReadings ra(a, name), rb(b, name);
    if (ra.start == rb.start && ra.end == rb.end) continue;
    std::string note;
    if (ra.Changed()) note = "run A: " + ra.Text();
    if (rb.Changed()) note += (note.empty() ? "run B: " : "; run B: ") + rb.Text();
    out->push_back(EnvironmentDifference{name, ra.end, rb.end, std::move(note)});
  }
}

}  // namespace

std::vector<EnvironmentDifference> CompareEnvironment(const nlohmann::json& a,
                                                      const nlohmann::json& b) {
  std::vector<EnvironmentDifference> out;
  // A run recorded by an older upguard says nothing about backend flags: not a difference.
  const bool flags = HasBackendFlags(a) && HasBackendFlags(b);
  for (const char* key : kNumericsKeys) {
    if (!(flags && CoveredByBackendFlags(key))) CompareKey(a, b, key, &out);
  }
  if (flags) CompareBackendFlags(a, b, &out);
  const nlohmann::json& env_a = Member(a, "env");
  const nlohmann::json& env_b = Member(b, "env");
  for (const std::string& name : Names(env_a, env_b)) CompareKey(env_a, env_b, name, &out);
  return out;
}

SetupCause ClassifySetup(const NumericDivergence& divergence, const RankTrace& trace) {
  if (divergence.verdict != Verdict::kPropagated || divergence.a.op == nullptr) {
    return SetupCause::kNone;
  }
  const std::string& op = trace.Str(divergence.a.op->op);
  if (op == kBatchOp) return SetupCause::kData;
  if (op == kRngStateOp) return SetupCause::kRng;
  if (!divergence.first_bad_input) return SetupCause::kNone;
  const size_t input = *divergence.first_bad_input;
  if (input >= divergence.a.op->inputs.size()) return SetupCause::kNone;
  const ArgRecord& arg = divergence.a.op->inputs[input];
  // Random ops' schemas name their Generator? argument "generator"; the recorder stores the
  // generator's state there (python/src/rng_state.h).
  const bool generator_state = trace.Str(arg.name) == "generator" && arg.kind == ArgKind::kTensor &&
                               arg.dtype == DType::kUInt8;
  return generator_state ? SetupCause::kRng : SetupCause::kNone;
}

namespace {

std::string Where(const OpRecord& op, const RankTrace& trace) {
  std::string text;
  if (op.module != kEmptyString) text += ", module " + trace.Str(op.module);
  if (op.call_site != kEmptyString) text += ", " + trace.Str(op.call_site);
  return text;
}

std::string SetupText(SetupCause cause, const NumericDivergence& d, const RankTrace& trace) {
  const OpRecord& op = *d.a.op;
  const std::string step = std::to_string(d.a.step);
  const std::string& name = trace.Str(op.op);
  if (cause == SetupCause::kRng) {
    if (name == kRngStateOp) return "RNG state differs at the start of step " + step;
    return "RNG state differs at step " + step + " (before op " + name + Where(op, trace) + ")";
  }
  std::string inputs;
  for (const ArgComparison& slot : d.inputs) {
    if (!slot.equal) inputs += (inputs.empty() ? "" : ", ") + slot.name;
  }
  return "input batch differs at step " + step + " (" + inputs + " of the model call" +
         (op.call_site != kEmptyString ? " at " + trace.Str(op.call_site) : "") + ")";
}

}  // namespace

void ApplySetupChecks(const Run& a, const Run& b, DiffResult* result) {
  for (const EnvironmentDifference& d : CompareEnvironment(a.Meta(), b.Meta())) {
    result->environment.push_back(d.Text());
  }
  bool first_numeric = true;  // the result's verdict follows the first rank that decides it
  for (RankDiff& rank : result->ranks) {
    if (!rank.numeric || rank.rank >= static_cast<int>(a.ranks.size())) continue;
    const SetupCause cause = ClassifySetup(*rank.numeric, a.ranks[rank.rank]);
    if (cause != SetupCause::kNone && rank.verdict == Verdict::kPropagated) {
      rank.verdict = cause == SetupCause::kRng ? Verdict::kRng : Verdict::kData;
      rank.setup = SetupText(cause, *rank.numeric, a.ranks[rank.rank]);
      if (first_numeric && result->verdict == Verdict::kPropagated) result->verdict = rank.verdict;
    }
    first_numeric = false;
  }
  ApplyStateCheck(a, result);
}

}  // namespace upguard

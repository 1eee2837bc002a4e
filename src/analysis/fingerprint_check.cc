#include "analysis/fingerprint_check.h"

#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace upguard {
namespace {

// One run's fingerprint of a step: its pseudo-ops by kind, in the order recorded.
struct Fingerprint {
  std::vector<const OpRecord*> rng, batch, loss, grads, state;
};

Fingerprint Collect(const StepOps& step, const RankTrace& trace) {
  Fingerprint out;
  for (const OpRecord& op : step.ops) {
    const std::string& name = trace.Str(op.op);
    if (name == "upguard::rng_state") out.rng.push_back(&op);
    if (name == "upguard::batch") out.batch.push_back(&op);
    if (name == "upguard::loss") out.loss.push_back(&op);
    if (name == "upguard::grads") out.grads.push_back(&op);
    if (name == "upguard::state") out.state.push_back(&op);
  }
  return out;
}

bool SameValues(const ArgRecord& a, const ArgRecord& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.shape == b.shape && a.digest == b.digest;
}

// Ops paired by position: whether any input of theirs differs (or only one run has it).
bool AnyDiffers(const std::vector<const OpRecord*>& a, const std::vector<const OpRecord*>& b) {
  if (a.size() != b.size()) return true;
  for (size_t idx = 0; idx < a.size(); ++idx) {
    if (a[idx]->inputs.size() != b[idx]->inputs.size()) return true;
    for (size_t arg = 0; arg < a[idx]->inputs.size(); ++arg) {
      if (!SameValues(a[idx]->inputs[arg], b[idx]->inputs[arg])) return true;
    }
  }
  return false;
}

// The tensors of a named-tensor pseudo-op (grads, state) that differ, by name in A's order then
// B's names that A lacks; `total` the tensors either run has.
void NamesThatDiffer(const std::vector<const OpRecord*>& a, const RankTrace& ta,
                     const std::vector<const OpRecord*>& b, const RankTrace& tb,
                     std::vector<std::string>* names, size_t* total) {
  std::map<std::string, const ArgRecord*> in_b;
  for (const OpRecord* op : b) {
    for (const ArgRecord& arg : op->inputs) in_b.emplace(tb.Str(arg.name), &arg);
  }
  size_t in_a = 0;
  for (const OpRecord* op : a) {
    for (const ArgRecord& arg : op->inputs) {
      ++in_a;
      const std::string& name = ta.Str(arg.name);
      auto other = in_b.find(name);
      if (other == in_b.end() || !SameValues(arg, *other->second)) names->push_back(name);
      if (other != in_b.end()) in_b.erase(other);
    }
  }
  for (const auto& [name, arg] : in_b) names->push_back(name);
  *total = in_a + in_b.size();
}

std::vector<std::string> LossValues(const std::vector<const OpRecord*>& losses) {
  std::vector<std::string> out;
  for (const OpRecord* op : losses) {
    std::string text;
    for (const ArgRecord& arg : op->inputs) {
      char value[32] = "?";
      if (arg.has_stats && !arg.stats_shared)
        std::snprintf(value, sizeof(value), "%.9g", arg.stats.mean);
      text += (text.empty() ? "" : ", ") + std::string(value);
    }
    out.push_back(text.empty() ? "?" : text);
  }
  return out;
}

std::string FirstOf(std::string_view op) {
  if (op == "upguard::rng_state") return "random state";
  if (op == "upguard::batch") return "batch";
  if (op == "upguard::loss") return "loss";
  if (op == "upguard::grads") return "gradients";
  if (op == "upguard::state") return "model state";
  return std::string(op);
}

// `names` cut to four, then "and N more".
std::string Few(const std::vector<std::string>& names) {
  std::string out;
  for (size_t idx = 0; idx < names.size() && idx < 4; ++idx) {
    out += (idx > 0 ? ", " : "") + names[idx];
  }
  if (names.size() > 4) out += " and " + std::to_string(names.size() - 4) + " more";
  return out;
}

std::string Joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& value : values) out += (out.empty() ? "" : "; ") + value;
  return out;
}

// "step 137 is the first divergent step: the loss differs first (2.31 vs 2.30); ..."
std::string Text(const FingerprintDivergence& f) {
  std::string text =
      "step " + std::to_string(f.step) + " is the first divergent step (" + f.first + " first):";
  std::vector<std::string> parts;
  if (f.rng_differs) parts.push_back("random state differs");
  if (f.batch_differs) parts.push_back("batch differs");
  if (f.loss_differs) {
    parts.push_back("loss " + Joined(f.loss_a) + " vs " + Joined(f.loss_b));
  }
  if (!f.grads_differ.empty()) {
    parts.push_back(std::to_string(f.grads_differ.size()) + " of " + std::to_string(f.grads) +
                    " gradients differ (" + Few(f.grads_differ) + ")");
  }
  if (!f.state_differ.empty()) {
    parts.push_back(std::to_string(f.state_differ.size()) + " of " + std::to_string(f.state) +
                    " parameters and optimizer-state tensors differ after the step (" +
                    Few(f.state_differ) + ")");
  }
  for (size_t idx = 0; idx < parts.size(); ++idx) text += (idx > 0 ? "; " : " ") + parts[idx];
  return text;
}

}  // namespace

Status ApplyFingerprintCheck(const Run& a, const Run& b, DiffResult* result) {
  bool first_numeric = true;  // the result's verdict follows the first rank that decides it
  for (RankDiff& rank : result->ranks) {
    if (!rank.numeric || rank.rank >= static_cast<int>(a.ranks.size()) ||
        rank.rank >= static_cast<int>(b.ranks.size())) {
      continue;
    }
    const bool decides = first_numeric;
    first_numeric = false;
    const RankTrace& ta = a.ranks[rank.rank];
    const RankTrace& tb = b.ranks[rank.rank];
    const uint32_t step = rank.numeric->a.step;
    ASSIGN_OR_RETURN(const std::optional<size_t> ia, ta.FindStep(step));
    ASSIGN_OR_RETURN(const std::optional<size_t> ib, tb.FindStep(rank.numeric->b.step));
    if (!ia || !ib || !IsFingerprintStep(ta.steps()[*ia].end) ||
        !IsFingerprintStep(tb.steps()[*ib].end)) {
      continue;
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops_a, ta.Ops(*ia));
    ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops_b, tb.Ops(*ib));
    const Fingerprint fa = Collect(*ops_a, ta);
    const Fingerprint fb = Collect(*ops_b, tb);
    FingerprintDivergence f;
    f.step = step;
    f.first = FirstOf(ta.Str(rank.numeric->a.op->op));
    f.rng_differs = AnyDiffers(fa.rng, fb.rng);
    f.batch_differs = AnyDiffers(fa.batch, fb.batch);
    f.loss_differs = AnyDiffers(fa.loss, fb.loss);
    f.loss_a = LossValues(fa.loss);
    f.loss_b = LossValues(fb.loss);
    NamesThatDiffer(fa.grads, ta, fb.grads, tb, &f.grads_differ, &f.grads);
    NamesThatDiffer(fa.state, ta, fb.state, tb, &f.state_differ, &f.state);
    const Verdict before = rank.verdict;
    // A pseudo-op's difference is propagated (or read as state); rng, data, and a structural
    // or latent verdict that came first, stay.
    if (rank.verdict == Verdict::kPropagated || rank.verdict == Verdict::kState) {
      rank.verdict = Verdict::kStep;
      rank.state_differs.clear();
    }
    rank.setup = Text(f);
    rank.fingerprint = std::move(f);
    rank.held_steps.push_back(std::move(ops_a));
    rank.held_steps.push_back(std::move(ops_b));
    if (decides && result->verdict == before) result->verdict = rank.verdict;
  }
  return Status::Ok();
}

StatusOr<std::string> ReRunDeparts(const RankTrace& recorded, const RankTrace& rerun,
                                   uint32_t step) {
  ASSIGN_OR_RETURN(const std::optional<size_t> ia, recorded.FindStep(step));
  ASSIGN_OR_RETURN(const std::optional<size_t> ib, rerun.FindStep(step));
  if (!ia) return std::string("the recorded run has no step " + std::to_string(step));
  if (!ib) return std::string("the re-run did not record step " + std::to_string(step));
  ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops_a, recorded.Ops(*ia));
  ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops_b, rerun.Ops(*ib));
  const Fingerprint fa = Collect(*ops_a, recorded);
  const Fingerprint fb = Collect(*ops_b, rerun);
  std::vector<std::string> parts;
  if (AnyDiffers(fa.batch, fb.batch)) parts.push_back("the batch differs");
  std::vector<std::string> state_differ;
  size_t state = 0;
  NamesThatDiffer(fa.state, recorded, fb.state, rerun, &state_differ, &state);
  if (!state_differ.empty()) {
    parts.push_back("the model state after it differs (" + std::to_string(state_differ.size()) +
                    " of " + std::to_string(state) + " tensors: " + Few(state_differ) + ")");
  }
  return Joined(parts);
}

}  // namespace upguard

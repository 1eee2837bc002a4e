#include "analysis/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "analysis/tolerant_compare.h"
#include "capture/element_compare.h"
#include "capture/safetensors.h"
#include "recorder/capture_selector.h"

namespace upguard {
namespace {

constexpr uint64_t kMaxUlp = uint64_t{1} << 24;
constexpr double kMinRel = 1.0 / (uint64_t{1} << 40);  // about 9e-13
constexpr double kMaxRel = 4.0;
constexpr uint64_t kUlpRuleLimit = 64;

using Key = std::tuple<std::string, std::string, std::string>;  // phase, module, op

// The statistics of each digest met so far in a step: what a record that shares its
// statistics (ArgRecord::stats_shared, trace.md §5.3.1) left out.
using StatsByDigest = std::map<std::pair<uint64_t, uint64_t>, TensorStats>;

std::pair<uint64_t, uint64_t> DigestKey(const Digest128& d) { return {d.high, d.low}; }

std::optional<TensorStats> StatsOf(const ArgRecord& arg, StatsByDigest* known) {
  if (!arg.has_stats) return std::nullopt;
  if (!arg.stats_shared) {
    known->emplace(DigestKey(arg.digest), arg.stats);
    return arg.stats;
  }
  auto it = known->find(DigestKey(arg.digest));
  if (it == known->end()) return std::nullopt;
  return it->second;
}

// Widens `e` by one tensor pair whose digests differ.
void Widen(const ArgRecord& a, const ArgRecord& b, const std::optional<TensorStats>& sa,
           const std::optional<TensorStats>& sb, OpEnvelope* e) {
  if (a.dtype != b.dtype || a.shape != b.shape || !sa || !sb ||
      sa->finite_count != sb->finite_count || sa->nan_count != sb->nan_count ||
      sa->pos_inf_count != sb->pos_inf_count || sa->neg_inf_count != sb->neg_inf_count) {
    e->unbounded = true;
    return;
  }
  const double l2 = std::max(sa->l2, sb->l2);
  if (l2 > 0) e->max_l2_rel = std::max(e->max_l2_rel, std::fabs(sa->l2 - sb->l2) / l2);
  Tolerance ulp;
  ulp.kind = Tolerance::Kind::kUlp;
  for (ulp.ulp = 1; ulp.ulp <= kMaxUlp && !StatsWithin(ulp, a.dtype, *sa, *sb); ulp.ulp *= 2) {
  }
  if (ulp.ulp > kMaxUlp) {
    e->need_ulp = kMaxUlp * 2;  // beyond: only rel bounds it
  } else {
    e->need_ulp = std::max(e->need_ulp, ulp.ulp);
  }
  Tolerance rel;
  rel.kind = Tolerance::Kind::kRel;
  for (rel.rel = kMinRel; rel.rel <= kMaxRel && !StatsWithin(rel, a.dtype, *sa, *sb);
       rel.rel *= 2) {
  }
  if (rel.rel > kMaxRel) {
    e->unbounded = true;
  } else {
    e->need_rel = std::max(e->need_rel, rel.rel);
  }
}

std::string FirstSeen(uint32_t step, size_t index, int rank) {
  return "step " + std::to_string(step) + " #" + std::to_string(index) +
         (rank > 0 ? " on rank " + std::to_string(rank) : "");
}

class Learner {
 public:
  explicit Learner(Calibration* out) : out_(out) {}

  // Run `run` (its number, 2..N) against the reference, one rank's step pair.
  void Step(const RankTrace& ta, const StepOps& sa, const RankTrace& tb, const StepOps& sb, int run,
            std::set<size_t>* differed_in_run) {
    if (sa.ops.size() != sb.ops.size()) {
      Note("step " + std::to_string(sa.step) + ": run " + std::to_string(run) + " ran " +
           std::to_string(sb.ops.size()) + " ops, run 1 " + std::to_string(sa.ops.size()) +
           ": the step is left out (calibration learns numbers, not structure)");
      return;
    }
    for (size_t idx = 0; idx < sa.ops.size(); ++idx) {
      if (ta.Str(sa.ops[idx].op) != tb.Str(sb.ops[idx].op) ||
          ta.Str(sa.ops[idx].module) != tb.Str(sb.ops[idx].module)) {
        Note("step " + std::to_string(sa.step) + ": run " + std::to_string(run) +
             " ran other ops than run 1 (#" + std::to_string(idx) + ": " + tb.Str(sb.ops[idx].op) +
             " vs " + ta.Str(sa.ops[idx].op) +
             "): the step is left out (calibration learns numbers, not structure)");
        return;
      }
    }
    StatsByDigest known_a, known_b;
    for (size_t idx = 0; idx < sa.ops.size(); ++idx) {
      const OpRecord& a = sa.ops[idx];
      const OpRecord& b = sb.ops[idx];
      const Key key{std::string(PhaseName(a.phase)), ta.Str(a.module), ta.Str(a.op)};
      auto [it, inserted] = index_.emplace(key, SIZE_MAX);
      if (inserted) ++out_->identities;
      ++out_->calls;
      bool input_differs = false;
      bool output_differs = false;
      OpEnvelope scratch;
      auto slots = [&](const std::vector<ArgRecord>& xa, const std::vector<ArgRecord>& xb,
                       bool* differs) {
        for (size_t s = 0; s < xa.size() && s < xb.size(); ++s) {
          if (xa[s].kind != ArgKind::kTensor || xb[s].kind != ArgKind::kTensor) continue;
          const std::optional<TensorStats> stats_a = StatsOf(xa[s], &known_a);
          const std::optional<TensorStats> stats_b = StatsOf(xb[s], &known_b);
          if (xa[s].digest == xb[s].digest && xa[s].shape == xb[s].shape) continue;
          *differs = true;
          Widen(xa[s], xb[s], stats_a, stats_b, &scratch);
        }
      };
      slots(a.inputs, b.inputs, &input_differs);
      slots(a.outputs, b.outputs, &output_differs);
      if (!input_differs && !output_differs) {
        if (it->second != SIZE_MAX)
          ++out_->envelopes[it->second].calls;
        else
          ++pending_calls_[key];
        continue;
      }
      if (it->second == SIZE_MAX) {
        it->second = out_->envelopes.size();
        OpEnvelope fresh;
        std::tie(fresh.phase, fresh.module, fresh.op) = key;
        fresh.calls = pending_calls_[key];
        fresh.first_step = sa.step;
        fresh.first_index = idx;
        fresh.first_rank = ta.rank;
        fresh.first_seen = FirstSeen(sa.step, idx, ta.rank);
        out_->envelopes.push_back(std::move(fresh));
      }
      OpEnvelope& e = out_->envelopes[it->second];
      if (std::tie(sa.step, ta.rank, idx) <
          std::tie(e.first_step, e.first_rank, e.first_index)) {  // another pair differed earlier
        e.first_step = sa.step;
        e.first_rank = ta.rank;
        e.first_index = idx;
        e.first_seen = FirstSeen(sa.step, idx, ta.rank);
      }
      ++e.calls;
      ++e.calls_differ;
      e.source |= !input_differs && output_differs;
      e.unbounded |= scratch.unbounded;
      e.need_ulp = std::max(e.need_ulp, scratch.need_ulp);
      e.need_rel = std::max(e.need_rel, scratch.need_rel);
      e.max_l2_rel = std::max(e.max_l2_rel, scratch.max_l2_rel);
      differed_in_run->insert(it->second);
    }
  }

  void Note(const std::string& note) {
    if (out_->notes.size() < 20) out_->notes.push_back(note);
  }

 private:
  Calibration* out_;
  std::map<Key, size_t> index_;  // into out_->envelopes; SIZE_MAX: never differed
  std::map<Key, uint64_t> pending_calls_;
};

bool SameStepDigest(const StepInfo& a, const StepInfo& b) {
  return a.end && b.end && a.end->digest == b.end->digest && a.end->op_count == b.end->op_count;
}

}  // namespace

StatusOr<Calibration> Calibrate(const std::vector<Run>& runs) {
  if (runs.size() < 2) return InvalidArgument("calibration needs at least 2 runs");
  Calibration out;
  out.runs = static_cast<int>(runs.size());
  Learner learner(&out);
  // Every pair of runs: N runs show N(N-1)/2 differences, not N-1.
  for (size_t pair = 0; pair < runs.size() * runs.size(); ++pair) {
    const size_t i = pair / runs.size(), k = pair % runs.size();
    if (i >= k) continue;
    const Run& ref = runs[i];
    const Run& other = runs[k];
    const int run = static_cast<int>(k + 1);
    if (other.ranks.size() != ref.ranks.size()) {
      return FailedPrecondition(other.dir + " has " + std::to_string(other.ranks.size()) +
                                " ranks, " + ref.dir + " " + std::to_string(ref.ranks.size()) +
                                ": the runs are not of one command");
    }
    std::set<size_t> differed;
    for (size_t r = 0; r < ref.ranks.size(); ++r) {
      const RankTrace& ta = ref.ranks[r];
      const RankTrace& tb = other.ranks[r];
      RETURN_IF_ERROR(ta.IndexAll());
      RETURN_IF_ERROR(tb.IndexAll());
      for (size_t ia = 0; ia < ta.steps().size(); ++ia) {
        const uint32_t step = ta.steps()[ia].step;
        ASSIGN_OR_RETURN(const std::optional<size_t> ib, tb.FindStep(step));
        if (!ib) {
          learner.Note("run " + std::to_string(run) + " has no step " + std::to_string(step) +
                       (ref.ranks.size() > 1 ? " on rank " + std::to_string(r) : ""));
          continue;
        }
        if (SameStepDigest(ta.steps()[ia], tb.steps()[*ib])) {
          // Equal step digests: every op equal; only the calls are counted.
          out.calls += ta.steps()[ia].end->op_count;
          continue;
        }
        ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> sa, ta.Ops(ia));
        ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> sb, tb.Ops(*ib));
        learner.Step(ta, *sa, tb, *sb, run, &differed);
      }
    }
    for (size_t idx : differed) ++out.envelopes[idx].runs_differ;
    ++out.pairs;
  }
  // In the order the noise shows: by where each identity first differed in any pair.
  std::stable_sort(out.envelopes.begin(), out.envelopes.end(),
                   [](const OpEnvelope& x, const OpEnvelope& y) {
                     return std::tie(x.first_step, x.first_rank, x.first_index) <
                            std::tie(y.first_step, y.first_rank, y.first_index);
                   });
  return out;
}

std::string FirstDifferingIndices(const Calibration& c, uint32_t step) {
  std::string text;
  for (const OpEnvelope& e : c.envelopes) {
    if (e.first_step != step || e.first_rank != 0) continue;
    text += (text.empty() ? "" : "|") + std::to_string(e.first_index);
  }
  return text;
}

Status AddElementComparison(const std::string& run_a, const std::string& run_b, uint32_t step,
                            Calibration* c) {
  for (OpEnvelope& e : c->envelopes) {
    if (e.first_step != step || e.first_rank != 0) continue;
    StatusOr<std::unique_ptr<SafetensorsFile>> a =
        SafetensorsFile::Open(CapturePath(run_a, 0, step, e.first_index));
    StatusOr<std::unique_ptr<SafetensorsFile>> b =
        SafetensorsFile::Open(CapturePath(run_b, 0, step, e.first_index));
    if (!a.ok() || !b.ok()) continue;  // not captured (a tensor upguard cannot read)
    double fraction = 0;
    uint64_t max_ulp = 0;
    for (const StoredTensor& tensor : (*a)->tensors()) {
      // What the op wrote (docs/formats/capture.md: output.<i>): its inputs' differences are
      // their producers' to count.
      if (tensor.name.rfind("output.", 0) != 0) continue;
      const StoredTensor* other = (*b)->Find(tensor.name);
      if (other == nullptr) continue;
      StatusOr<ElementComparison> compared = CompareElements(tensor, *other);
      if (!compared.ok() || !compared->comparable || compared->numel == 0) continue;
      fraction = std::max(fraction, static_cast<double>(compared->differing) /
                                        static_cast<double>(compared->numel));
      max_ulp = std::max(max_ulp, compared->max_ulp);
    }
    e.element_fraction = std::max(e.element_fraction, fraction);  // over the pairs compared
    e.element_max_ulp = std::max(e.element_max_ulp, max_ulp);
  }
  return Status::Ok();
}

std::string EnvelopeClass(const OpEnvelope& e) {
  if (e.unbounded) return "unbounded";
  return e.need_ulp > 0 && e.need_ulp <= kUlpRuleLimit ? "ulp" : "noisy";
}

std::string EnvelopeTolerance(const OpEnvelope& e) {
  if (e.unbounded) return "nondeterministic";
  Tolerance t;
  if (e.need_ulp > 0 && e.need_ulp <= kUlpRuleLimit) {
    t.kind = Tolerance::Kind::kUlp;
    t.ulp = e.need_ulp * kCalibrationMargin;
  } else {
    t.kind = Tolerance::Kind::kRel;
    t.rel = e.need_rel * kCalibrationMargin;
  }
  return t.ToString();
}

std::string PolicyText(const Calibration& c, const std::string& about) {
  std::string text = "# upguard calibrate: " + about + "\n";
  text += "# " + std::to_string(c.runs) + " runs, every pair compared (" + std::to_string(c.pairs) +
          "): " + std::to_string(c.calls) + " op calls, " + std::to_string(c.identities) +
          " op identities, " + std::to_string(c.envelopes.size()) + " of them differed.\n";
  text += "# Each rule: the smallest tolerance every observed difference passed, times " +
          std::to_string(kCalibrationMargin) + ". Ops not listed were bitwise stable.\n";
  if (c.envelopes.empty()) {
    text += "default bitwise\n";
  } else {
    // An op that did not vary in these runs may in the next: a scalar (a loss, a gradient norm)
    // whose noise is below half an ULP rounds to the same float most of the time.
    text += "default ulp:" + std::to_string(kCalibrationDefaultUlp) +
            "   # ops that did not vary here, once something does: rounding may still reach "
            "them\n";
  }
  std::set<std::string> nondeterministic;
  for (const OpEnvelope& e : c.envelopes) {
    char elements[96] = "";
    if (e.element_fraction >= 0) {
      std::snprintf(elements, sizeof(elements), "; %.3g%% of elements, up to %llu ULP",
                    e.element_fraction * 100, static_cast<unsigned long long>(e.element_max_ulp));
    }
    char comment[300];
    std::snprintf(
        comment, sizeof(comment),
        "# %s; differed in %llu of %llu calls, %d of %d pairs of runs, from %s; L2 up to %.3g "
        "relative%s%s",
        EnvelopeClass(e).c_str(), static_cast<unsigned long long>(e.calls_differ),
        static_cast<unsigned long long>(e.calls), e.runs_differ, c.pairs, e.first_seen.c_str(),
        e.max_l2_rel, elements, e.source ? "; a source: differed from identical inputs" : "");
    if (e.unbounded) {
      if (nondeterministic.insert(e.op).second) {
        text += "nondeterministic " + e.op + "   " + comment + " (every " + e.op + ")\n";
      }
      continue;
    }
    text += "at " + e.phase + " " + (e.module.empty() ? "-" : e.module) + " " + e.op + " " +
            EnvelopeTolerance(e) + "   " + comment + "\n";
  }
  return text;
}

nlohmann::json CalibrationJson(const Calibration& c) {
  nlohmann::json envelopes = nlohmann::json::array();
  for (const OpEnvelope& e : c.envelopes) {
    envelopes.push_back(
        {{"phase", e.phase},
         {"module", e.module},
         {"op", e.op},
         {"class", EnvelopeClass(e)},
         {"tolerance", EnvelopeTolerance(e)},
         {"calls", e.calls},
         {"calls_differ", e.calls_differ},
         {"pairs_differ", e.runs_differ},
         {"source", e.source},
         {"need_ulp", e.need_ulp},
         {"need_rel", e.need_rel},
         {"max_l2_rel", e.max_l2_rel},
         {"first_seen", e.first_seen},
         {"element_fraction",
          e.element_fraction < 0 ? nlohmann::json() : nlohmann::json(e.element_fraction)},
         {"element_max_ulp", e.element_max_ulp}});
  }
  return {{"schema", "upguard.calibration/1"},
          {"runs", c.runs},
          {"pairs", c.pairs},
          {"calls", c.calls},
          {"identities", c.identities},
          {"envelopes", envelopes},
          {"notes", c.notes}};
}

}  // namespace upguard

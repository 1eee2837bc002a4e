// The diff report for people: what diverged, where, and why, readable at a glance.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "report/diff_report.h"
#include "report/diff_text_ops.h"
#include "report/format_util.h"
#include "trace/unread_tally.h"

namespace upguard {
namespace {

using diff_text::Ctx;
using diff_text::Magnitude;
using diff_text::Numeric;
using diff_text::State;

constexpr size_t kListedGroups = 12;  // kinds of ops without counterpart shown (JSON: all kept)

std::string OpLine(const OpRecord& op, const RankTrace& trace) {
  std::string line = trace.Str(op.op) + "  [" + std::string(PhaseName(op.phase));
  if (op.module != kEmptyString) line += ", " + trace.Str(op.module);
  if (op.call_site != kEmptyString) line += ", " + trace.Str(op.call_site);
  return line + "]";
}

// Whether every listed op is a forward op run again in backward (true for none).
bool AllRecompute(const std::vector<const OpRecord*>& ops) {
  return std::all_of(ops.begin(), ops.end(),
                     [](const OpRecord* op) { return op->phase == Phase::kRecompute; });
}

// The ops present in one run only: the outermost ones, each with how many ops it encloses.
void OnlyIn(std::ostringstream& out, const std::string& dir, const char* mark,
            const std::vector<const OpRecord*>& ops, size_t total, const RankTrace& trace) {
  out << "    only in " << dir << ":" << (ops.empty() ? " (nothing)" : "") << "\n";
  uint32_t top = UINT32_MAX;
  for (const OpRecord* op : ops) top = std::min(top, op->depth);
  size_t nested = 0;
  for (const OpRecord* op : ops) {
    if (op->depth > top) {
      ++nested;
      continue;
    }
    out << "      " << mark << " " << OpLine(*op, trace);
    if (nested > 0) out << "  (and " << nested << " op(s) inside it)";
    out << "\n";
    nested = 0;
  }
  if (total > ops.size()) out << "      ... " << total - ops.size() << " more\n";
}

void Structural(const Ctx& ctx, const StructuralDivergence& s) {
  ctx.out << "  STRUCTURAL  step " << s.step << ": the runs executed different ops from op #"
          << s.index_a << " (" << ctx.a.dir << ") / #" << s.index_b << " (" << ctx.b.dir << ")\n";
  OnlyIn(ctx.out, ctx.a.dir, "-", s.only_a, s.only_a_count, ctx.ta);
  OnlyIn(ctx.out, ctx.b.dir, "+", s.only_b, s.only_b_count, ctx.tb);
  if (s.only_a.size() + s.only_b.size() > 0 && AllRecompute(s.only_a) && AllRecompute(s.only_b)) {
    ctx.out << "    these ops are recomputation: activation checkpointing runs forward ops "
               "again in backward in one run only.\n";
  }
  if (s.compiled_only != 0) {
    const std::string& compiled = s.compiled_only == 1 ? ctx.a.dir : ctx.b.dir;
    const std::string& eager = s.compiled_only == 1 ? ctx.b.dir : ctx.a.dir;
    ctx.out << "    torch.compile: " << compiled << " ran a compiled region here (Inductor's "
            << "fused kernels) where " << eager << " ran eager ops.\n"
            << "    Bitwise equality is not expected there: Inductor fuses and reorders the "
               "arithmetic (docs/torch-compile.md\n"
            << "    gives the measured spread). To find the first op that differs, record the "
               "compiled run again\n"
            << "    with `upguard record --no-compile` (the same script, compilation "
               "disabled).\n";
  }
  if (!s.realigned) {
    ctx.out << "    the op streams could not be aligned here (too many differences): these ops "
               "were not compared.\n";
  } else if (s.inside_clean_op) {
    ctx.out << "    all inside top-level ops whose inputs and outputs are identical in both "
               "runs: not a divergence.\n";
  } else {
    ctx.out << "    after these ops the two op streams agree again.\n";
  }
}

std::string FirstAt(const std::optional<StepIndex>& at) {
  return "first: step " + std::to_string(at->step) + " #" + std::to_string(at->index);
}

// "+ 37   aten::copy_ inside aten::sum (74 ops)   first: step 2 #96 in b"
void GroupLine(const Ctx& ctx, const char* mark, const StructuralGroup& group, size_t count,
               size_t ops, const std::optional<StepIndex>& first, const std::string& dir) {
  if (count == 0) return;
  std::string what = group.op + (group.inside.empty() ? "" : " inside " + group.inside);
  if (ops > count) what += " (" + std::to_string(ops) + " ops)";
  ctx.out << "      " << mark << " " << Fit(std::to_string(count), 5) << Fit(what, 50) << " "
          << FirstAt(first) << " in " << dir << "\n";
}

// Every op without counterpart, counted and grouped by module.
void Summary(const Ctx& ctx, const std::string& lead, const StructuralSummary& s) {
  ctx.out << "  " << lead << ": " << s.only_a_count << " op(s) only in " << ctx.a.dir << ", "
          << s.only_b_count << " only in " << ctx.b.dir << ", in " << s.blocks << " place(s), step"
          << (s.first_step == s.last_step
                  ? " " + std::to_string(s.first_step)
                  : "s " + std::to_string(s.first_step) + ".." + std::to_string(s.last_step))
          << "\n";
  if (s.inside_clean_a + s.inside_clean_b > 0) {
    ctx.out << "    nested inside ops that match (identical inputs and outputs): "
            << s.inside_clean_a << " in " << ctx.a.dir << ", " << s.inside_clean_b << " in "
            << ctx.b.dir << "\n";
  }
  if (s.unaligned_blocks > 0) {
    ctx.out << "    " << s.unaligned_blocks
            << " place(s) too different to align: their ops were not compared\n";
  }
  const std::string* module = nullptr;
  size_t listed = 0, more_a = s.other_a, more_b = s.other_b;
  for (const StructuralGroup& group : s.groups) {
    if (listed == kListedGroups) {
      more_a += group.only_a;
      more_b += group.only_b;
      continue;
    }
    ++listed;
    if (module == nullptr || *module != group.module) {
      module = &group.module;
      ctx.out << "    " << OrDash(group.module) << "\n";
    }
    GroupLine(ctx, "-", group, group.only_a, group.ops_a, group.first_a, ctx.a.dir);
    GroupLine(ctx, "+", group, group.only_b, group.ops_b, group.first_b, ctx.b.dir);
  }
  if (more_a + more_b > 0) {
    ctx.out << "    and " << more_a << " op(s) of other kinds in " << ctx.a.dir << ", " << more_b
            << " in " << ctx.b.dir << "\n";
  }
}

// "aten::mm (step 1 #3, backward, module fc)"
std::string OpAt(const OpLocation& at, const RankTrace& trace) {
  const OpRecord& op = *at.op;
  std::string text = trace.Str(op.op) + " (step " + std::to_string(at.step) + " #" +
                     std::to_string(at.index) + ", " + std::string(PhaseName(op.phase));
  if (op.module != kEmptyString) text += ", module " + trace.Str(op.module);
  return text + ")";
}

// An allowed op and how much its differing outputs differ, from their statistics.
void AllowedLine(const Ctx& ctx, const char* lead, const AllowedDivergence& allowed) {
  ctx.out << "    " << lead << OpAt(allowed.a, ctx.ta) << "\n";
  for (const ArgComparison& slot : allowed.outputs) {
    if (!slot.Differs() || slot.a == nullptr || slot.b == nullptr) continue;
    const std::string magnitude = Magnitude(*slot.a, *slot.b);
    ctx.out << "      " << Fit(OrDash(slot.name), 14) << " "
            << (magnitude.empty() ? "differs (no statistics)" : magnitude) << "\n";
  }
}

// What the tolerance let through: ops within it, and allowed nondeterminism.
void ToleranceLines(const Ctx& ctx, const ToleranceSummary& t) {
  if (t.within_ops > 0) {
    ctx.out << (ctx.calibrated ? "  inside the reference's own noise (not a finding): "
                               : "  within tolerance: ")
            << t.within_ops << " op(s) differed, none beyond its tolerance; the first:\n    "
            << OpAt(*t.first_within_a, ctx.ta) << " under " << t.first_within_tolerance << "\n";
  }
  if (t.allowed_ops + t.follows_ops == 0) return;
  ctx.out << "  allowed nondeterminism: " << t.allowed_ops
          << " op(s) marked nondeterministic differed, " << t.follows_ops
          << " op(s) followed from them\n";
  for (const AllowedDivergence& allowed : t.allowed) AllowedLine(ctx, "", allowed);
  if (t.allowed_ops > t.allowed.size()) {
    ctx.out << "    ... " << t.allowed_ops - t.allowed.size() << " more\n";
  }
  if (t.first_follows) AllowedLine(ctx, "first to follow: ", *t.first_follows);
}

// The tensors the diff could not compare, by reason; nothing when every tensor was read.
void NotComparedLines(const Ctx& ctx, const RankDiff& diff) {
  const std::vector<UnreadCount> counts = NotCompared(diff.unread_a, diff.unread_b);
  if (counts.empty()) return;
  ctx.out << "  not compared (their values were not read, so nothing says they are equal):\n";
  for (const UnreadCount& count : counts) ctx.out << "    " << UnreadLine(count) << "\n";
}

void Rank(const Ctx& ctx, const RankDiff& diff) {
  ctx.out << "  rank " << diff.rank << ": compared steps " << *diff.first_step << ".."
          << *diff.last_step << " (" << diff.steps_compared << "), " << diff.steps_identical
          << " identical by step digest\n";
  for (const std::string& note : diff.notes) ctx.out << "  note: " << note << "\n";
  NotComparedLines(ctx, diff);
  if (diff.verdict == Verdict::kUnverified && !diff.numeric) {
    const UnreadTotal total = HiddenTotal(NotCompared(diff.unread_a, diff.unread_b));
    ctx.out << "  UNVERIFIED: no compared op differs, but " << GroupedThousands(total.ops)
            << " op(s) with " << GroupedThousands(total.tensors)
            << " tensor(s) were not compared (above):\n"
               "           the runs are not known to be identical.\n";
    if (diff.structure) Summary(ctx, "differences inside ops that match", *diff.structure);
    return;
  }
  ToleranceLines(ctx, diff.tolerance);
  const ToleranceSummary& t = diff.tolerance;
  if (diff.verdict == Verdict::kIdentical && t.within_ops + t.allowed_ops + t.follows_ops > 0) {
    ctx.out << (t.allowed_ops + t.follows_ops > 0
                    ? "  IDENTICAL except allowed nondeterminism: no other op with a counterpart "
                      "differs beyond its\n           tolerance.\n"
                : ctx.calibrated
                    ? "  IDENTICAL within the reference's own noise: no op with a counterpart "
                      "differs beyond\n           what the reference's runs differ by.\n"
                    : "  IDENTICAL within tolerance: no op with a counterpart differs beyond its "
                      "tolerance.\n");
    if (diff.structure) Summary(ctx, "differences inside ops that match", *diff.structure);
    return;
  }
  if (diff.verdict == Verdict::kIdentical) {
    if (!diff.structure) {
      ctx.out << "  IDENTICAL: every recorded op has bitwise identical inputs and outputs.\n";
    } else {
      ctx.out << "  IDENTICAL: every op with a counterpart has bitwise identical inputs and "
                 "outputs.\n";
      Summary(ctx, "differences inside ops that match", *diff.structure);
    }
    return;
  }
  ctx.out << "\n";
  if (ctx.calibrated) {
    ctx.out << "  OUTSIDE the reference's own noise (a finding): beyond what its runs differ by\n";
  }
  if (diff.fingerprint && (diff.verdict == Verdict::kStep || diff.verdict == Verdict::kRng ||
                           diff.verdict == Verdict::kData)) {
    return Fingerprint(ctx, diff);
  }
  if (diff.verdict == Verdict::kRng || diff.verdict == Verdict::kData) {
    ctx.out << "  SETUP  " << diff.setup << "\n  verdict: " << VerdictName(diff.verdict)
            << " — the runs were set up differently ("
            << (diff.verdict == Verdict::kRng ? "random state" : "input data")
            << ") before any op computed differently;\n           the op below is where it "
               "shows first.\n\n";
  }
  if (diff.verdict == Verdict::kUnattributed) {
    ctx.out << "  UNATTRIBUTED  step " << *diff.unattributed_step
            << ": the step digests differ, yet every compared op is equal.\n"
               "  verdict: unattributed — the runs recorded different bytes that upguard cannot "
               "attribute\n           to an op (a gap in the diff: please report it with both "
               "runs); not identical.\n";
    return;
  }
  if (diff.verdict == Verdict::kLatent) {
    Numeric(ctx, *diff.latent);
    if (diff.numeric) {
      ctx.out << "\n  then, the first numerical divergence:\n";
      Numeric(ctx, *diff.numeric);
    } else {
      ctx.out << "  no op diverged numerically in the steps compared.\n";
    }
    return;
  }
  if (diff.verdict == Verdict::kStructural) {
    Structural(ctx, *diff.structural);
    if (diff.structure->blocks > 1) Summary(ctx, "in all", *diff.structure);
    if (diff.numeric) {
      ctx.out << "\n  first numerical divergence after realignment:\n";
      Numeric(ctx, *diff.numeric);
    } else {
      ctx.out << "  no numerical divergence among the aligned ops.\n";
    }
    return;
  }
  if (diff.verdict == Verdict::kState) {
    State(ctx, diff);
  } else {
    Numeric(ctx, *diff.numeric);
  }
  if (!diff.structure) return;
  ctx.out << "\n";
  Summary(ctx, "runs also differ structurally", *diff.structure);
  for (const StructuralDivergence& block : diff.structure->first_blocks) Structural(ctx, block);
  if (diff.structure->blocks > diff.structure->first_blocks.size()) {
    ctx.out << "    ... " << diff.structure->blocks - diff.structure->first_blocks.size()
            << " more place(s)\n";
  }
}

}  // namespace

std::string RenderDiffText(const DiffResult& result, const Run& a, const Run& b) {
  std::ostringstream out;
  out << "upguard diff " << a.dir << " " << b.dir << "\n";
  if (!result.tolerance.empty()) out << "  tolerance: " << result.tolerance << "\n";
  for (const std::string& note : result.notes) out << "  note: " << note << "\n";
  if (!result.environment.empty()) {
    out << "  environment differs:";
    for (size_t idx = 0; idx < result.environment.size(); ++idx) {
      out << (idx > 0 ? "," : "") << " " << result.environment[idx];
    }
    out << "\n";
  }
  for (size_t rank_idx = 0; rank_idx < result.ranks.size(); ++rank_idx) {
    Ctx ctx{a,
            b,
            a.ranks[rank_idx],
            b.ranks[rank_idx],
            out,
            result.tolerance.rfind("the reference's own noise", 0) == 0};
    Rank(ctx, result.ranks[rank_idx]);
  }
  out << "\nresult: " << VerdictName(result.verdict);
  if (!result.environment.empty()) out << " (the environment differs too: see above)";
  out << "\n";
  return out.str();
}

}  // namespace upguard

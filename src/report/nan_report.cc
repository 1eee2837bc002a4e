// The `upguard nan` report for people: which op made the first NaN or Inf, where, and from what.
#include "report/nan_report.h"

#include <algorithm>
#include <sstream>

#include "report/format_util.h"

namespace upguard {
namespace {

uint64_t Elements(const TensorStats& stats) {
  return stats.finite_count + stats.nan_count + stats.pos_inf_count + stats.neg_inf_count;
}

// "NaN 3, +Inf 12 of 4096"; "finite" when none.
std::string CountsText(const TensorStats& stats) {
  std::string text;
  for (auto [count, name] :
       {std::pair{stats.nan_count, "NaN"}, std::pair{stats.pos_inf_count, "+Inf"},
        std::pair{stats.neg_inf_count, "-Inf"}}) {
    if (count == 0) continue;
    text += (text.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(count);
  }
  if (text.empty()) return "finite";
  return text + " of " + std::to_string(Elements(stats));
}

// "min -1.2  max 3.4  mean 0.01  L2 56.7" over the finite values.
std::string FiniteStatsText(const TensorStats& stats) {
  if (stats.finite_count == 0) return "no finite value";
  return "min " + Num(stats.min) + "  max " + Num(stats.max) + "  mean " + Num(stats.mean) +
         "  L2 " + Num(stats.l2);
}

std::string ArgName(const ArgRecord& arg, const RankTrace& trace, const char* prefix,
                    size_t index) {
  const std::string& name = trace.Str(arg.name);
  return name.empty() ? prefix + std::to_string(index) : name;
}

// What the argument holds, as far as the trace says.
std::string ArgState(const ArgRecord& arg, const RankTrace& trace) {
  switch (arg.kind) {
    case ArgKind::kTensor:
      if (arg.has_stats) {
        std::string counts = CountsText(arg.stats);
        counts.resize(std::max<size_t>(counts.size() + 2, 25), ' ');  // a column, never cut
        return counts + FiniteStatsText(arg.stats);
      }
      return DTypeIsFloating(arg.dtype) ? "no statistics" : "cannot hold NaN/Inf";
    case ArgKind::kScalar:
      return ScalarNonFiniteKinds(trace.Str(arg.text)) != 0 ? "scalar, not finite" : "scalar";
    case ArgKind::kNone:
      return "-";
    default:
      return "not a value (" + std::string(ArgKindName(arg.kind)) + ")";
  }
}

void Args(std::ostringstream& out, const char* title, const char* prefix,
          const std::vector<ArgRecord>& args, const RankTrace& trace) {
  if (args.empty()) return;
  out << "    " << title << "\n";
  for (size_t arg_idx = 0; arg_idx < args.size(); ++arg_idx) {
    const ArgRecord& arg = args[arg_idx];
    out << "      " << Fit(ArgName(arg, trace, prefix, arg_idx), 14) << " "
        << Fit(DescribeArg(arg, trace.strings()), 26) << " " << ArgState(arg, trace) << "\n";
  }
}

std::string Where(const OpRecord& op, const RankTrace& trace) {
  std::string text = "step " + std::to_string(op.step) + ", " + std::string(PhaseName(op.phase));
  if (op.module != kEmptyString) text += ", " + trace.Str(op.module);
  if (op.call_site != kEmptyString) text += ", " + trace.Str(op.call_site);
  return text;
}

void Verdict(std::ostringstream& out, const NanFinding& finding, const RankTrace& trace) {
  const OpRecord& op = *finding.at.op;
  const std::string op_name = trace.Str(op.op);
  const std::string kinds = NonFiniteKindsText(finding.kinds);
  if (finding.kind == NanFindingKind::kEntered) {
    const ArgRecord& arg = op.inputs[finding.arg_index];
    out << "  verdict: input '" << ArgName(arg, trace, "in", finding.arg_index) << "' of "
        << op_name << " is already non-finite (" << CountsText(arg.stats)
        << ");\n           no recorded op produced it (data, parameters loaded from disk, or an "
           "op outside the recorded steps).\n";
    return;
  }
  const ArgRecord& arg = op.outputs[finding.arg_index];
  out << "  verdict: " << op_name << " made " << kinds
      << (finding.inputs_finite ? " from finite inputs" : " from inputs that held none")
      << ": output '" << ArgName(arg, trace, "out", finding.arg_index) << "' holds "
      << CountsText(arg.stats) << " elements.\n";
  if (finding.scalar) {
    const ArgRecord& scalar = op.inputs[*finding.scalar];
    out << "           likely reason: argument '" << ArgName(scalar, trace, "in", *finding.scalar)
        << "' is " << trace.Str(scalar.text) << ".\n";
  }
}

void Finding(std::ostringstream& out, const NanFinding& finding, const RankTrace& trace) {
  const OpRecord& op = *finding.at.op;
  out << "  " << (finding.kind == NanFindingKind::kProduced ? "MADE" : "ENTERED") << "  "
      << NonFiniteKindsText(finding.kinds) << " at step " << op.step << ", " << PhaseName(op.phase)
      << ", " << trace.Str(op.op) << "\n";
  out << "    op         " << trace.Str(op.op) << "   (#" << finding.at.index << " in step "
      << op.step << ", depth " << op.depth << ")\n";
  out << "    phase      " << PhaseName(op.phase) << "\n";
  out << "    module     " << OrDash(trace.Str(op.module)) << "\n";
  out << "    call site  " << OrDash(trace.Str(op.call_site)) << "\n";
  if (op.node != kEmptyString) out << "    autograd   " << trace.Str(op.node) << "\n";
  if (!finding.enclosing.empty()) {
    out << "    inside     ";
    for (size_t up_idx = 0; up_idx < finding.enclosing.size(); ++up_idx) {
      out << (up_idx > 0 ? " < " : "") << trace.Str(finding.enclosing[up_idx].op->op);
    }
    out << "\n";
  }
  Args(out, "inputs", "in", op.inputs, trace);
  Args(out, "outputs", "out", op.outputs, trace);
  Verdict(out, finding, trace);
}

void Rank(std::ostringstream& out, const RankNanScan& scan, const RankTrace& trace) {
  out << "  rank " << scan.rank << ": ";
  if (scan.steps_scanned == 0) {
    out << "no recorded steps\n";
  } else {
    out << "scanned steps " << *scan.first_step << ".." << *scan.last_step << " ("
        << scan.steps_scanned << "), " << scan.ops_scanned << " ops"
        << (scan.finding ? "" : ": no NaN or Inf made") << "\n";
  }
  for (const std::string& note : scan.notes) out << "  note: " << note << "\n";
  if (scan.deliberate_fills > 0) {
    out << "  note: not counted: " << scan.deliberate_fills
        << " deliberate fill(s), a NaN/Inf passed as a scalar argument (masked_fill(mask, -inf)); "
           "the first: "
        << trace.Str(scan.first_fill->op->op) << " (" << Where(*scan.first_fill->op, trace)
        << ")\n";
  }
  if (scan.contained > 0) {
    out << "  note: not counted: " << scan.contained
        << " NaN/Inf made inside a top-level op that did not output it (kernel scratch memory or "
           "an intermediate)\n";
  }
  if (scan.finding) {
    out << "\n";
    Finding(out, *scan.finding, trace);
  }
}

}  // namespace

std::string RenderNanText(const NanScan& scan, const Run& run) {
  std::ostringstream out;
  out << "upguard nan " << run.dir << "\n";
  for (const RankNanScan& rank : scan.ranks) {
    Rank(out, rank, run.ranks[static_cast<size_t>(rank.rank)]);
    out << "\n";
  }
  out << "result: " << (scan.found ? "NaN/Inf found" : "no NaN/Inf") << "\n";
  return out.str();
}

}  // namespace upguard

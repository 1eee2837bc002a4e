// The diff report's block for one op pair: the op, its inputs and outputs side by side, and
// the verdict's reason (diff_text_ops.h).
#include "report/diff_text_ops.h"

#include <algorithm>

#include "report/format_util.h"

namespace upguard::diff_text {

// "2.1% larger L2, mean 0.0123 vs 0.0125" — the magnitude of a difference, from statistics.
std::string Magnitude(const ArgRecord& a, const ArgRecord& b) {
  if (!a.has_stats || !b.has_stats) return "";
  const TensorStats& sa = a.stats;
  const TensorStats& sb = b.stats;
  std::string text = "L2 " + Num(sa.l2) + " vs " + Num(sb.l2);
  if (sa.l2 > 0) text += " (" + Num(100.0 * (sb.l2 - sa.l2) / sa.l2) + "%)";
  text += ", mean " + Num(sa.mean) + " vs " + Num(sb.mean);
  text += ", max " + Num(sa.max) + " vs " + Num(sb.max);
  if (sa.nan_count != sb.nan_count) {
    text += ", NaN " + std::to_string(sa.nan_count) + " vs " + std::to_string(sb.nan_count);
  }
  const uint64_t inf_a = sa.pos_inf_count + sa.neg_inf_count;
  const uint64_t inf_b = sb.pos_inf_count + sb.neg_inf_count;
  if (inf_a != inf_b) text += ", Inf " + std::to_string(inf_a) + " vs " + std::to_string(inf_b);
  return text;
}

namespace {

// For an op outside any module (the optimizer's): "  (on tok_emb.weight)", the model's
// tensors it reads or writes as run A names them (the first three); an optimizer list's
// temporary labelled "for tok_emb.weight" counts as its parameter.
std::string ModelTensors(const Ctx& ctx, const OpRecord& op) {
  if (op.module != kEmptyString) return "";
  std::vector<std::string> seen;
  for (const std::vector<ArgRecord>* args : {&op.inputs, &op.outputs}) {
    for (const ArgRecord& arg : *args) {
      if (arg.label == kEmptyString) continue;
      std::string name = ctx.ta.Str(arg.label);
      if (name.rfind("for ", 0) == 0) name.erase(0, 4);
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
    }
  }
  if (seen.empty()) return "";
  std::string text = "  (on ";
  for (size_t idx = 0; idx < seen.size() && idx < 3; ++idx) {
    text += (idx > 0 ? ", " : "") + seen[idx];
  }
  if (seen.size() > 3) text += " and " + std::to_string(seen.size() - 3) + " more";
  return text + ")";
}

void OpHeader(const Ctx& ctx, const OpRecord& op, size_t index) {
  ctx.out << "    op         " << ctx.ta.Str(op.op) << "   (#" << index << " in step " << op.step
          << ", depth " << op.depth << ")\n";
  ctx.out << "    phase      " << PhaseName(op.phase)
          << (op.phase == Phase::kRecompute
                  ? "   (forward run again in backward: activation checkpointing)"
                  : "")
          << "\n";
  ctx.out << "    module     " << OrDash(ctx.ta.Str(op.module)) << ModelTensors(ctx, op) << "\n";
  ctx.out << "    call site  " << OrDash(ctx.ta.Str(op.call_site)) << "\n";
  if (op.node != kEmptyString) ctx.out << "    autograd   " << ctx.ta.Str(op.node) << "\n";
}

// After a differing tensor slot's digests: how it fares against the op's tolerance (none
// given, or bitwise: nothing).
std::string ToleranceNote(const ArgComparison& slot, const std::string& tolerance) {
  if (tolerance.empty() || tolerance == "bitwise") return "";
  switch (slot.tolerated) {
    case Tolerated::kWithin:
      return "  within " + tolerance;
    case Tolerated::kBeyond:
      return "  beyond " + tolerance;
    case Tolerated::kNoStats:
      return "  no statistics: bitwise only (" + tolerance + " not applied)";
    case Tolerated::kNotJudged:
      break;
  }
  return "";
}

// The name a run gave an argument's tensor (Arg::label); "" for none or an absent slot.
const std::string& LabelOf(const ArgRecord* arg, const RankTrace& trace) {
  return trace.Str(arg != nullptr ? arg->label : kEmptyString);
}

// The slot's tensor as the model names it: "exp_avg_sq of fc.weight", or both runs' names
// where they differ ("fc.weight in a, unnamed in b"); "" when neither has one.
std::string SlotLabel(const Ctx& ctx, const ArgComparison& slot) {
  const std::string& label_a = LabelOf(slot.a, ctx.ta);
  const std::string& label_b = LabelOf(slot.b, ctx.tb);
  if (label_a == label_b || slot.a == nullptr || slot.b == nullptr) {
    return label_a.empty() ? label_b : label_a;
  }
  auto named = [](const std::string& label) {
    return label.empty() ? std::string("unnamed") : label;
  };
  return named(label_a) + " in " + ctx.a.dir + ", " + named(label_b) + " in " + ctx.b.dir;
}

// "      self  float32[64, 64]  ..." is followed by "                     is fc.weight".
void LabelLine(const Ctx& ctx, const ArgComparison& slot, size_t width) {
  const std::string label = SlotLabel(ctx, slot);
  if (label.empty()) return;
  // An optimizer list's temporary is labelled "for <parameter>" (list_labels.h): no "is".
  const bool for_parameter = label.rfind("for ", 0) == 0;
  ctx.out << "      " << std::string(width + 1, ' ') << (for_parameter ? "" : "is ") << label
          << "\n";
}

// The name column: as wide as the longest name, from 14 to 40 characters.
size_t NameWidth(const std::vector<ArgComparison>& slots) {
  size_t width = 14;
  for (const ArgComparison& slot : slots) width = std::max(width, slot.name.size());
  return std::min<size_t>(width, 40);
}

// An op with more slots than this (a foreach op, the model state) lists only the slots that
// are not equal, and counts the others.
constexpr size_t kAllSlotsUpTo = 24;

void Slots(const Ctx& ctx, const char* title, const std::vector<ArgComparison>& slots,
           const std::string& tolerance) {
  if (slots.empty()) return;
  ctx.out << "    " << title << "\n";
  const size_t width = NameWidth(slots);
  const std::string indent(width + 1, ' ');
  size_t not_shown = 0;
  for (const ArgComparison& slot : slots) {
    if (slots.size() > kAllSlotsUpTo && slot.equal && slot.a != nullptr && slot.b != nullptr) {
      ++not_shown;
      continue;
    }
    const ArgRecord* any = slot.a != nullptr ? slot.a : slot.b;
    std::string what = slot.a != nullptr ? DescribeArg(*slot.a, ctx.ta.strings()) : "(absent)";
    std::string state;
    if (slot.a != nullptr && IsUnreadKind(slot.a->kind)) {
      what = std::string(DTypeName(slot.a->dtype)) + BracketList(slot.a->shape);
    }
    if (slot.a == nullptr || slot.b == nullptr) {
      state = "only in one run";
    } else if (!slot.compared && IsUnreadKind(any->kind)) {
      // What was not read is never "equal": say why instead.
      const ArgRecord& arg = *any;
      const RankTrace& trace = any == slot.a ? ctx.ta : ctx.tb;
      state = "NOT READ (" + std::string(UnreadReasonName(arg.unread)) +
              (arg.kind == ArgKind::kUnread && arg.text != kEmptyString ? " " + trace.Str(arg.text)
                                                                         : std::string()) +
              ")";
    } else if (any->kind == ArgKind::kScalar) {
      if (slot.equal) {
        state = "same";
      } else {
        ctx.out << "      " << Fit(OrDash(slot.name), width) << " DIFFERS  "
                << DescribeArg(*slot.a, ctx.ta.strings()) << "  ->  "
                << DescribeArg(*slot.b, ctx.tb.strings()) << "\n";
        LabelLine(ctx, slot, width);
        continue;
      }
    } else if (!slot.compared) {
      state = slot.equal ? "not a value (" + std::string(ArgKindName(any->kind)) + ")" : "DIFFERS";
    } else {
      state = slot.equal ? "identical  " + slot.a->digest.Short()
                         : std::string(slot.Differs() ? "DIFFERS    " : "differs    ") +
                               slot.a->digest.Short() + " vs " + slot.b->digest.Short() +
                               ToleranceNote(slot, tolerance);
    }
    ctx.out << "      " << Fit(OrDash(slot.name), width) << " " << Fit(what, 26) << " " << state
            << "\n";
    LabelLine(ctx, slot, width);
    if (!slot.equal && slot.a != nullptr && slot.b != nullptr) {
      std::string magnitude = Magnitude(*slot.a, *slot.b);
      if (!magnitude.empty()) ctx.out << "      " << indent << magnitude << "\n";
      if (slot.a->shape != slot.b->shape || slot.a->dtype != slot.b->dtype) {
        ctx.out << "      " << indent << "b: " << DescribeArg(*slot.b, ctx.tb.strings()) << "\n";
      }
    }
  }
  if (not_shown > 0) {
    ctx.out << "      (" << not_shown << " more " << (not_shown == 1 ? "is" : "are")
            << " identical in both runs, not listed)\n";
  }
}

std::string ProducerText(const Producer& producer, const RankTrace& trace) {
  if (!producer.found && producer.view_maker) {
    // Said only as likely: views are recorded by their shape, so the match is by shape.
    const OpLocation& maker = *producer.view_maker;
    std::string text = "no recorded op's output holds these values, but " +
                       trace.Str(maker.op->op) + " (#" + std::to_string(maker.index) +
                       " in step " + std::to_string(maker.step);
    if (maker.op->module != kEmptyString) text += ", module " + trace.Str(maker.op->module);
    return text +
           ") made a view of this dtype and shape before it: likely that view of an earlier "
           "op's result (upguard records a view by its shape, not its values)";
  }
  if (!producer.found) {
    return "no recorded op produced it, nor a view of its shape: it entered from outside "
           "(input data, a tensor made before recording or by an op that was not recorded)";
  }
  const OpRecord& op = *producer.location.op;
  std::string text = "produced by " + trace.Str(op.op) + " (#" +
                     std::to_string(producer.location.index) + " in step " +
                     std::to_string(producer.location.step) + ", " +
                     std::string(PhaseName(op.phase));
  if (op.module != kEmptyString) text += ", module " + trace.Str(op.module);
  if (op.call_site != kEmptyString) text += ", " + trace.Str(op.call_site);
  return text + ")" + (producer.unpaired ? ", an op the other run did not run" : "");
}

// "momentum 0.10000000000000001 -> 0.20000000000000001, eps ..." for the scalar slots that differ.
std::string DifferingArguments(const Ctx& ctx, const NumericDivergence& numeric) {
  std::string text;
  for (const ArgComparison& slot : numeric.inputs) {
    if (!slot.Differs() || slot.a == nullptr || slot.b == nullptr) continue;
    if (slot.a->kind != ArgKind::kScalar) continue;
    text += (text.empty() ? "" : ", ") + OrDash(slot.name) + " differs " +
            DescribeArg(*slot.a, ctx.ta.strings()) + " -> " +
            DescribeArg(*slot.b, ctx.tb.strings());
  }
  return text;
}

}  // namespace

void Numeric(const Ctx& ctx, const NumericDivergence& numeric) {
  const OpRecord& op = *numeric.a.op;
  if (numeric.verdict == Verdict::kLatent) {
    ctx.out << "  LATENT  step " << numeric.a.step << ", " << PhaseName(op.phase) << ", "
            << ctx.ta.Str(op.op) << "\n";
  } else if (numeric.verdict == Verdict::kCulprit && numeric.unread_inputs > 0) {
    ctx.out << "  UNVERIFIED  step " << numeric.a.step << ", " << PhaseName(op.phase) << ", "
            << ctx.ta.Str(op.op) << "\n";
  } else if (numeric.verdict == Verdict::kCulprit) {
    ctx.out << "  CULPRIT  step " << numeric.a.step << ", " << PhaseName(op.phase) << ", "
            << ctx.ta.Str(op.op) << "\n";
  } else {
    ctx.out << "  PROPAGATED  step " << numeric.a.step << ", " << PhaseName(op.phase) << ", "
            << ctx.ta.Str(op.op) << "\n";
  }
  OpHeader(ctx, op, numeric.a.index);
  if (!numeric.enclosing.empty()) {
    ctx.out << "    inside     ";
    for (size_t idx = 0; idx < numeric.enclosing.size(); ++idx) {
      ctx.out << (idx > 0 ? " < " : "") << ctx.ta.Str(numeric.enclosing[idx].op->op);
    }
    ctx.out << "\n";
  }
  Slots(ctx, "inputs", numeric.inputs, numeric.tolerance);
  Slots(ctx, "outputs", numeric.outputs, numeric.tolerance);
  const bool tolerant = !numeric.tolerance.empty() && numeric.tolerance != "bitwise";
  if (numeric.verdict == Verdict::kLatent) {
    ctx.out << "  verdict: latent — argument " << DifferingArguments(ctx, numeric)
            << "; outputs equal here:\n           every tensor this op read and wrote is "
               "bitwise identical, so the difference\n           has not changed a value yet "
               "(it may in a later step, or on a path not taken here).\n";
    return;
  }
  if (numeric.verdict == Verdict::kCulprit && numeric.unread_inputs > 0) {
    ctx.out << "  verdict: unverified — an output differs, but " << numeric.unread_inputs
            << " input(s) of this op were not read (see above):\n           whether it "
               "computed differently or was given different values is unknown.\n";
    return;
  }
  if (numeric.verdict == Verdict::kCulprit) {
    bool args_differ = false;
    for (const ArgComparison& slot : numeric.inputs) args_differ |= slot.Differs();
    if (tolerant) {
      ctx.out << "  verdict: culprit — every tensor input is bitwise identical or within "
              << numeric.tolerance << " in both runs and an output differs beyond it:\n"
              << "           this op computed differently";
    } else {
      ctx.out << "  verdict: culprit — every tensor input is bitwise identical in both runs and "
                 "an output differs:\n           this op computed differently";
    }
    if (op.collective != nullptr && !args_differ) {
      // This rank's inputs are only its own share: another member's may have differed.
      ctx.out << " from this rank's inputs:\n           another member of its group fed "
                 "it different inputs, or the collective\n           itself computed "
                 "differently (the order across ranks says which).\n";
      return;
    }
    ctx.out << (args_differ ? " because a non-tensor argument differs (see DIFFERS above).\n"
                            : " (a kernel, library, flag or hardware difference).\n");
    return;
  }
  const ArgComparison& bad = numeric.inputs[*numeric.first_bad_input];
  // One name, a's where the runs name it differently (the slot above shows both).
  const std::string& label_a = LabelOf(bad.a, ctx.ta);
  const std::string& bad_label = label_a.empty() ? LabelOf(bad.b, ctx.tb) : label_a;
  ctx.out << "  verdict: propagated — input '" << OrDash(bad.name) << "'"
          << (bad_label.empty() ? "" : " (" + bad_label + ")") << " already differed"
          << (tolerant ? " beyond " + numeric.tolerance : std::string()) << " when this op ran.\n";
  ctx.out << "    where it came from:\n";
  ctx.out << "      " << ctx.a.dir << ": " << ProducerText(numeric.producer_a, ctx.ta) << "\n";
  ctx.out << "      " << ctx.b.dir << ": " << ProducerText(numeric.producer_b, ctx.tb) << "\n";
}

// A first divergence in a fingerprint step (analysis/fingerprint_check.h).
void Fingerprint(const Ctx& ctx, const RankDiff& diff) {
  const FingerprintDivergence& f = *diff.fingerprint;
  ctx.out << "  STEP  step " << f.step << " is the first divergent step: the " << f.first
          << (f.first == "gradients" ? " differ" : " differs") << " first\n";
  const auto same = [](bool differs) { return differs ? "DIFFERS" : "same"; };
  ctx.out << "    " << Fit("random state", 15) << same(f.rng_differs) << "\n";
  ctx.out << "    " << Fit("batch", 15) << same(f.batch_differs) << "\n";
  const auto joined = [](const std::vector<std::string>& values) {
    std::string out;
    for (const std::string& value : values) out += (out.empty() ? "" : ", ") + value;
    return out.empty() ? std::string("-") : out;
  };
  ctx.out << "    " << Fit("loss", 15) << Fit(same(f.loss_differs), 8) << joined(f.loss_a)
          << (f.loss_differs ? " vs " + joined(f.loss_b) : "") << "\n";
  const auto names = [&](const char* what, const std::vector<std::string>& list, size_t total,
                         const char* when) {
    ctx.out << "    " << Fit(what, 15);
    if (list.empty()) {
      ctx.out << "same    (" << total << " tensors)\n";
      return;
    }
    ctx.out << "DIFFERS " << list.size() << " of " << total << when << ":\n";
    constexpr size_t kShown = 12;  // the rest is in --json
    for (size_t idx = 0; idx < list.size() && idx < kShown; ++idx) {
      ctx.out << "      " << list[idx] << "\n";
    }
    if (list.size() > kShown) ctx.out << "      ... " << list.size() - kShown << " more\n";
  };
  names("gradients", f.grads_differ, f.grads, "");
  names("model state", f.state_differ, f.state, " after the step (parameters, optimizer state)");
  std::string why = "step — the step computed differently";
  if (diff.verdict == Verdict::kRng) why = "rng — the random state differs as the step starts";
  if (diff.verdict == Verdict::kData) why = "data — the batch entering the model differs";
  const std::string before = f.step > 0 ? std::to_string(f.step - 1) : "0";
  ctx.out << "  verdict: " << why << ";\n           the runs hold fingerprints of this step, "
          << "not its ops. Record it in full in both runs\n           to find its first divergent "
          << "op: upguard record --fingerprint --steps " << before << ":" << f.step + 1
          << " -o DIR -- COMMAND,\n           then upguard diff.\n";
}

// Verdict state: the model's tensors that differ as the step ends (analysis/state_check.h), and
// where each run's bytes of the first of them came from.
void State(const Ctx& ctx, const RankDiff& diff) {
  const NumericDivergence& numeric = *diff.numeric;
  ctx.out << "  STATE  " << diff.setup << "\n";
  std::vector<ArgComparison> differing;
  for (const ArgComparison& slot : numeric.inputs) {
    if (slot.Differs()) differing.push_back(slot);
  }
  Slots(ctx, "differing tensors (upguard::state, as the step ends)", differing, numeric.tolerance);
  const ArgComparison& bad = numeric.inputs[*numeric.first_bad_input];
  ctx.out << "    where " << OrDash(bad.name) << " came from:\n";
  ctx.out << "      " << ctx.a.dir << ": " << ProducerText(numeric.producer_a, ctx.ta) << "\n";
  ctx.out << "      " << ctx.b.dir << ": " << ProducerText(numeric.producer_b, ctx.tb) << "\n";
  ctx.out << "  verdict: state — no recorded op's output shows this difference: the tensor was "
             "written\n           where upguard sees no write (memory written outside PyTorch, "
             "e.g. through numpy,\n           or a kernel writing an input its schema does not "
             "declare).\n";
}

}  // namespace upguard::diff_text

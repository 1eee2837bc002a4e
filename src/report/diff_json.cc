// The diff report for programs. Schema "upguard.diff/1", documented in docs/cli.md.
#include "report/diff_report.h"

#include "trace/unread_tally.h"

namespace upguard {
namespace {

using nlohmann::json;

json StatsJson(const TensorStats& s) {
  return {{"min", s.min},
          {"max", s.max},
          {"mean", s.mean},
          {"l2", s.l2},
          {"finite", s.finite_count},
          {"nan", s.nan_count},
          {"pos_inf", s.pos_inf_count},
          {"neg_inf", s.neg_inf_count}};
}

json SideJson(const ArgRecord& arg, const RankTrace& trace) {
  json side = {{"kind", ArgKindName(arg.kind)}};
  // Only when the run named the tensor: reports of runs without labels keep their bytes.
  if (arg.label != kEmptyString) side["label"] = trace.Str(arg.label);
  if (arg.kind == ArgKind::kScalar) {
    side["text"] = trace.Str(arg.text);
    return side;
  }
  if (arg.kind == ArgKind::kNone) return side;
  side["dtype"] = DTypeName(arg.dtype);
  side["shape"] = arg.shape;
  if (arg.kind == ArgKind::kTensor) side["digest"] = arg.digest.Hex();
  if (arg.kind == ArgKind::kUnread) {
    side["reason"] = UnreadReasonName(arg.unread);
    side["detail"] = trace.Str(arg.text);
  }
  if (arg.has_stats) side["stats"] = StatsJson(arg.stats);
  return side;
}

json SlotsJson(const std::vector<ArgComparison>& slots, const RankTrace& ta, const RankTrace& tb) {
  json list = json::array();
  for (const ArgComparison& slot : slots) {
    json item = {{"index", slot.index},
                 {"name", slot.name},
                 {"equal", slot.equal},
                 {"compared", slot.compared},
                 {"a", slot.a ? SideJson(*slot.a, ta) : json(nullptr)},
                 {"b", slot.b ? SideJson(*slot.b, tb) : json(nullptr)}};
    if (slot.tolerated != Tolerated::kNotJudged) item["tolerated"] = ToleratedName(slot.tolerated);
    list.push_back(std::move(item));
  }
  return list;
}

json OpJson(const OpRecord& op, const RankTrace& trace) {
  return {{"op", trace.Str(op.op)},
          {"phase", PhaseName(op.phase)},
          {"step", op.step},
          {"depth", op.depth},
          {"module", trace.Str(op.module)},
          {"call_site", trace.Str(op.call_site)},
          {"autograd_node", trace.Str(op.node)}};
}

json ProducerJson(const Producer& producer, const RankTrace& trace) {
  if (!producer.found) {
    json j = {{"found", false}};
    if (producer.view_maker) {  // likely a view this op made (Producer::view_maker)
      json view = OpJson(*producer.view_maker->op, trace);
      view["index"] = producer.view_maker->index;
      view["step"] = producer.view_maker->step;
      j["view_of"] = view;
    }
    return j;
  }
  json j = OpJson(*producer.location.op, trace);
  j["found"] = true;
  j["index"] = producer.location.index;
  j["output_index"] = producer.output_index;
  j["unpaired"] = producer.unpaired;
  return j;
}

json NumericJson(const NumericDivergence& n, const RankTrace& ta, const RankTrace& tb) {
  json j = OpJson(*n.a.op, ta);
  // A culprit with an input that was not read is not one (Verdict::kUnverified).
  j["verdict"] = VerdictName(n.verdict == Verdict::kCulprit && n.unread_inputs > 0
                                 ? Verdict::kUnverified
                                 : n.verdict);
  j["unread_inputs"] = n.unread_inputs;
  j["index"] = n.a.index;
  j["index_b"] = n.b.index;
  j["inputs"] = SlotsJson(n.inputs, ta, tb);
  j["outputs"] = SlotsJson(n.outputs, ta, tb);
  j["differing_input"] =
      n.first_bad_input ? json(n.inputs[*n.first_bad_input].name) : json(nullptr);
  j["producer_a"] = n.first_bad_input ? ProducerJson(n.producer_a, ta) : json(nullptr);
  j["producer_b"] = n.first_bad_input ? ProducerJson(n.producer_b, tb) : json(nullptr);
  json enclosing = json::array();
  for (const OpLocation& up : n.enclosing) enclosing.push_back(ta.Str(up.op->op));
  j["enclosing"] = enclosing;
  if (!n.tolerance.empty()) j["tolerance"] = n.tolerance;
  return j;
}

// An op of one run with its index in the step and the other run's.
json FingerprintJson(const FingerprintDivergence& f) {
  return {{"step", f.step},
          {"first", f.first},
          {"rng_differs", f.rng_differs},
          {"batch_differs", f.batch_differs},
          {"loss_differs", f.loss_differs},
          {"loss_a", f.loss_a},
          {"loss_b", f.loss_b},
          {"grads_differ", f.grads_differ},
          {"grads", f.grads},
          {"state_differ", f.state_differ},
          {"state", f.state}};
}

json PairJson(const OpLocation& a, const OpLocation& b, const RankTrace& ta) {
  json j = OpJson(*a.op, ta);
  j["index"] = a.index;
  j["index_b"] = b.index;
  return j;
}

json AllowedJson(const AllowedDivergence& allowed, const RankTrace& ta, const RankTrace& tb) {
  json j = PairJson(allowed.a, allowed.b, ta);
  j["follows"] = allowed.follows;
  j["outputs"] = SlotsJson(allowed.outputs, ta, tb);
  return j;
}

json ToleranceJson(const ToleranceSummary& t, const RankTrace& ta, const RankTrace& tb) {
  json first_within = nullptr;
  if (t.first_within_a) {
    first_within = PairJson(*t.first_within_a, *t.first_within_b, ta);
    first_within["tolerance"] = t.first_within_tolerance;
  }
  json allowed = json::array();
  for (const AllowedDivergence& op : t.allowed) allowed.push_back(AllowedJson(op, ta, tb));
  return {
      {"within_ops", t.within_ops},
      {"first_within", first_within},
      {"allowed_ops", t.allowed_ops},
      {"follows_ops", t.follows_ops},
      {"allowed", allowed},
      {"first_follows", t.first_follows ? AllowedJson(*t.first_follows, ta, tb) : json(nullptr)}};
}

// Ops listed in a block: each with its index in the step.
json ListedOpsJson(const std::vector<const OpRecord*>& ops, size_t first_index,
                   const RankTrace& trace) {
  json list = json::array();
  for (size_t op_idx = 0; op_idx < ops.size(); ++op_idx) {
    json op = OpJson(*ops[op_idx], trace);
    op["index"] = first_index + op_idx;
    list.push_back(std::move(op));
  }
  return list;
}

json StructuralJson(const StructuralDivergence& s, const RankTrace& ta, const RankTrace& tb) {
  return {{"step", s.step},
          {"index_a", s.index_a},
          {"index_b", s.index_b},
          {"realigned", s.realigned},
          {"only_a", ListedOpsJson(s.only_a, s.index_a, ta)},
          {"only_b", ListedOpsJson(s.only_b, s.index_b, tb)},
          {"only_a_count", s.only_a_count},
          {"only_b_count", s.only_b_count},
          {"inside_clean_op", s.inside_clean_op},
          {"compiled_only", s.compiled_only == 0 ? "" : (s.compiled_only == 1 ? "a" : "b")}};
}

json WhereJson(const std::optional<StepIndex>& at) {
  if (!at) return nullptr;
  return {{"step", at->step}, {"index", at->index}};
}

json SummaryJson(const StructuralSummary& s, const RankTrace& ta, const RankTrace& tb) {
  json blocks = json::array(), groups = json::array();
  for (const StructuralDivergence& block : s.first_blocks) {
    blocks.push_back(StructuralJson(block, ta, tb));
  }
  for (const StructuralGroup& group : s.groups) {
    groups.push_back({{"module", group.module},
                      {"op", group.op},
                      {"inside", group.inside},
                      {"only_a", group.only_a},
                      {"only_b", group.only_b},
                      {"ops_a", group.ops_a},
                      {"ops_b", group.ops_b},
                      {"first_a", WhereJson(group.first_a)},
                      {"first_b", WhereJson(group.first_b)}});
  }
  return {{"only_a_count", s.only_a_count},
          {"only_b_count", s.only_b_count},
          {"inside_clean_a", s.inside_clean_a},
          {"inside_clean_b", s.inside_clean_b},
          {"blocks", s.blocks},
          {"unaligned_blocks", s.unaligned_blocks},
          {"first_step", s.first_step},
          {"last_step", s.last_step},
          {"first_blocks", blocks},
          {"groups", groups},
          {"other_a", s.other_a},
          {"other_b", s.other_b}};
}

// What was not compared (trace/unread_tally.h NotCompared): totals and each reason.
json NotComparedJson(const std::vector<UnreadCount>& a, const std::vector<UnreadCount>& b) {
  const std::vector<UnreadCount> counts = NotCompared(a, b);
  const UnreadTotal total = HiddenTotal(counts);
  json reasons = json::array();
  for (const UnreadCount& count : counts) {
    reasons.push_back({{"reason", UnreadReasonName(count.reason)},
                       {"detail", count.detail},
                       {"ops", count.ops},
                       {"tensors", count.tensors},
                       {"why", UnreadWhy(count)}});
  }
  return {{"ops", total.ops}, {"tensors", total.tensors}, {"reasons", reasons}};
}

}  // namespace

json DiffToJson(const DiffResult& result, const Run& a, const Run& b) {
  json ranks = json::array();
  for (size_t rank_idx = 0; rank_idx < result.ranks.size(); ++rank_idx) {
    const RankDiff& diff = result.ranks[rank_idx];
    const RankTrace& ta = a.ranks[rank_idx];
    const RankTrace& tb = b.ranks[rank_idx];
    json rank = {
        {"rank", diff.rank},
        {"verdict", VerdictName(diff.verdict)},
        {"steps_compared", diff.steps_compared},
        {"steps_identical", diff.steps_identical},
        {"first_step", diff.first_step ? json(*diff.first_step) : json(nullptr)},
        {"last_step", diff.last_step ? json(*diff.last_step) : json(nullptr)},
        {"notes", diff.notes},
        {"setup", diff.setup.empty() ? json(nullptr) : json(diff.setup)},
        {"state_differs", diff.state_differs},
        {"fingerprint", diff.fingerprint ? FingerprintJson(*diff.fingerprint) : json(nullptr)},
        {"divergence", diff.numeric ? NumericJson(*diff.numeric, ta, tb) : json(nullptr)},
        {"latent", diff.latent ? NumericJson(*diff.latent, ta, tb) : json(nullptr)},
        {"unattributed_step",
         diff.unattributed_step ? json(*diff.unattributed_step) : json(nullptr)},
        {"not_compared", NotComparedJson(diff.unread_a, diff.unread_b)},
        {"structural", diff.structural ? StructuralJson(*diff.structural, ta, tb) : json(nullptr)},
        {"structural_summary",
         diff.structure ? SummaryJson(*diff.structure, ta, tb) : json(nullptr)}};
    if (!result.tolerance.empty()) rank["tolerance"] = ToleranceJson(diff.tolerance, ta, tb);
    ranks.push_back(std::move(rank));
  }
  json out = {{"schema", "upguard.diff/1"},
              {"verdict", VerdictName(result.verdict)},
              {"run_a", a.dir},
              {"run_b", b.dir},
              {"notes", result.notes},
              {"environment", result.environment},
              {"not_compared", NotComparedJson(result.unread_a, result.unread_b)},
              {"ranks", ranks}};
  if (!result.tolerance.empty()) out["tolerance"] = result.tolerance;
  return out;
}

}  // namespace upguard

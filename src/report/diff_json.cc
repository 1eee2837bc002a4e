// The diff report for programs. Schema "upguard.diff/1", documented in docs/cli.md.
#include "report/diff_report.h"

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
  if (arg.kind == ArgKind::kScalar) {
    side["text"] = trace.Str(arg.text);
    return side;
  }
  if (arg.kind == ArgKind::kNone) return side;
  side["dtype"] = DTypeName(arg.dtype);
  side["shape"] = arg.shape;
  if (arg.kind == ArgKind::kTensor) side["digest"] = arg.digest.Hex();
  if (arg.has_stats) side["stats"] = StatsJson(arg.stats);
  return side;
}

json SlotsJson(const std::vector<ArgComparison>& slots, const RankTrace& ta, const RankTrace& tb) {
  json list = json::array();
  for (const ArgComparison& slot : slots) {
    list.push_back({{"index", slot.index},
                    {"name", slot.name},
                    {"equal", slot.equal},
                    {"compared", slot.compared},
                    {"a", slot.a ? SideJson(*slot.a, ta) : json(nullptr)},
                    {"b", slot.b ? SideJson(*slot.b, tb) : json(nullptr)}});
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
  if (!producer.found) return {{"found", false}};
  json j = OpJson(*producer.location.op, trace);
  j["found"] = true;
  j["index"] = producer.location.index;
  j["output_index"] = producer.output_index;
  return j;
}

json NumericJson(const NumericDivergence& n, const RankTrace& ta, const RankTrace& tb) {
  json j = OpJson(*n.a.op, ta);
  j["verdict"] = VerdictName(n.verdict);
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
  return j;
}

json StructuralJson(const StructuralDivergence& s, const RankTrace& ta, const RankTrace& tb) {
  json only_a = json::array(), only_b = json::array();
  for (const OpRecord* op : s.only_a) only_a.push_back(OpJson(*op, ta));
  for (const OpRecord* op : s.only_b) only_b.push_back(OpJson(*op, tb));
  return {{"step", s.step},
          {"index_a", s.index_a},
          {"index_b", s.index_b},
          {"realigned", s.realigned},
          {"only_a", only_a},
          {"only_b", only_b},
          {"only_a_count", s.only_a_count},
          {"only_b_count", s.only_b_count}};
}

}  // namespace

json DiffToJson(const DiffResult& result, const Run& a, const Run& b) {
  json ranks = json::array();
  for (size_t rank_idx = 0; rank_idx < result.ranks.size(); ++rank_idx) {
    const RankDiff& diff = result.ranks[rank_idx];
    const RankTrace& ta = a.ranks[rank_idx];
    const RankTrace& tb = b.ranks[rank_idx];
    ranks.push_back(
        {{"rank", diff.rank},
         {"verdict", VerdictName(diff.verdict)},
         {"steps_compared", diff.steps_compared},
         {"steps_identical", diff.steps_identical},
         {"first_step", diff.first_step ? json(*diff.first_step) : json(nullptr)},
         {"last_step", diff.last_step ? json(*diff.last_step) : json(nullptr)},
         {"notes", diff.notes},
         {"divergence", diff.numeric ? NumericJson(*diff.numeric, ta, tb) : json(nullptr)},
         {"structural",
          diff.structural ? StructuralJson(*diff.structural, ta, tb) : json(nullptr)}});
  }
  return {{"schema", "upguard.diff/1"},
          {"verdict", VerdictName(result.verdict)},
          {"run_a", a.dir},
          {"run_b", b.dir},
          {"notes", result.notes},
          {"ranks", ranks}};
}

}  // namespace upguard

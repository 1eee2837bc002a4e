// The `upguard nan` report for programs. Schema "upguard.nan/1", documented in docs/cli.md.
#include "report/nan_report.h"

namespace upguard {
namespace {

using nlohmann::json;

json KindsJson(uint8_t kinds) {
  json list = json::array();
  if (kinds & kNanKind) list.push_back("nan");
  if (kinds & kPosInfKind) list.push_back("pos_inf");
  if (kinds & kNegInfKind) list.push_back("neg_inf");
  return list;
}

// One argument: what it is, and for a tensor with statistics its counts and the statistics of
// its finite values.
json ArgJson(const ArgRecord& arg, size_t index, const RankTrace& trace) {
  json item = {{"index", index}, {"name", trace.Str(arg.name)}, {"kind", ArgKindName(arg.kind)}};
  if (arg.kind == ArgKind::kScalar) item["text"] = trace.Str(arg.text);
  if (arg.kind == ArgKind::kScalar || arg.kind == ArgKind::kNone) return item;
  item["dtype"] = DTypeName(arg.dtype);
  item["shape"] = arg.shape;
  if (!arg.has_stats) return item;
  const TensorStats& s = arg.stats;
  item["counts"] = {{"finite", s.finite_count},
                    {"nan", s.nan_count},
                    {"pos_inf", s.pos_inf_count},
                    {"neg_inf", s.neg_inf_count}};
  item["finite_stats"] = {{"min", s.min}, {"max", s.max}, {"mean", s.mean}, {"l2", s.l2}};
  return item;
}

json ArgsJson(const std::vector<ArgRecord>& args, const RankTrace& trace) {
  json list = json::array();
  for (size_t arg_idx = 0; arg_idx < args.size(); ++arg_idx) {
    list.push_back(ArgJson(args[arg_idx], arg_idx, trace));
  }
  return list;
}

// Where an op ran: the same fields as the diff's Op (upguard.diff/1) plus its index in the step.
json WhereJson(const OpLocation& at, const RankTrace& trace) {
  const OpRecord& op = *at.op;
  json where = {{"op", trace.Str(op.op)}, {"phase", PhaseName(op.phase)}, {"step", op.step}};
  where["index"] = at.index;
  where["depth"] = op.depth;
  where["module"] = trace.Str(op.module);
  where["call_site"] = trace.Str(op.call_site);
  where["autograd_node"] = trace.Str(op.node);
  return where;
}

json FindingJson(const NanFinding& finding, const RankTrace& trace) {
  const OpRecord& op = *finding.at.op;
  json j = WhereJson(finding.at, trace);
  const bool produced = finding.kind == NanFindingKind::kProduced;
  j["kind"] = NanFindingKindName(finding.kind);
  j["kinds"] = KindsJson(finding.kinds);
  j["arg"] = {{"side", produced ? "output" : "input"}, {"index", finding.arg_index}};
  j["inputs_finite"] = produced ? json(finding.inputs_finite) : json(nullptr);
  j["scalar_reason"] = finding.scalar ? json(*finding.scalar) : json(nullptr);
  json enclosing = json::array();
  for (const OpLocation& up : finding.enclosing) enclosing.push_back(trace.Str(up.op->op));
  j["enclosing"] = enclosing;
  j["inputs"] = ArgsJson(op.inputs, trace);
  j["outputs"] = ArgsJson(op.outputs, trace);
  return j;
}

json RankJson(const RankNanScan& scan, const RankTrace& trace) {
  return {{"rank", scan.rank},
          {"steps_scanned", scan.steps_scanned},
          {"ops_scanned", scan.ops_scanned},
          {"first_step", scan.first_step ? json(*scan.first_step) : json(nullptr)},
          {"last_step", scan.last_step ? json(*scan.last_step) : json(nullptr)},
          {"complete", trace.complete() && !trace.damage()},
          {"notes", scan.notes},
          {"deliberate_fills", scan.deliberate_fills},
          {"first_fill", scan.first_fill ? WhereJson(*scan.first_fill, trace) : json(nullptr)},
          {"contained", scan.contained},
          {"finding", scan.finding ? FindingJson(*scan.finding, trace) : json(nullptr)}};
}

}  // namespace

json NanToJson(const NanScan& scan, const Run& run) {
  json ranks = json::array();
  for (const RankNanScan& rank : scan.ranks) {
    ranks.push_back(RankJson(rank, run.ranks[static_cast<size_t>(rank.rank)]));
  }
  return {{"schema", "upguard.nan/1"}, {"run", run.dir}, {"found", scan.found}, {"ranks", ranks}};
}

}  // namespace upguard

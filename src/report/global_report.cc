#include "report/global_report.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "report/format_util.h"

namespace upguard {
namespace {

// Where a rank's first divergence is, in run A: "step 2 #812, forward, aten::gelu
// (blocks.1.mlp.act, examples/gpt.py:74)". For a structural verdict, the first ops the runs did
// not both run: `op` run A's (empty when only B ran one there), `op_b` run B's.
struct FirstDivergence {
  bool known = false;
  uint32_t step = 0;
  size_t index = 0;
  std::string phase;
  std::string op;
  std::string op_b;
  bool block = false;  // a structural block: `op` -> `op_b`
  std::string module;
  std::string call_site;
};

FirstDivergence AtOp(const OpLocation& at, const RankTrace& trace) {
  return {true,
          at.step,
          at.index,
          std::string(PhaseName(at.op->phase)),
          trace.Str(at.op->op),
          "",
          false,
          trace.Str(at.op->module),
          trace.Str(at.op->call_site)};
}

// The first outermost op of `ops` (nested ops are recorded before the op that encloses them),
// and its position there; null when there is none.
std::pair<const OpRecord*, size_t> Outermost(const std::vector<const OpRecord*>& ops) {
  uint32_t top = UINT32_MAX;
  for (const OpRecord* op : ops) top = std::min(top, op->depth);
  for (size_t idx = 0; idx < ops.size(); ++idx) {
    if (ops[idx]->depth == top) return {ops[idx], idx};
  }
  return {nullptr, 0};
}

FirstDivergence AtBlock(const StructuralDivergence& s, const RankTrace& ta, const RankTrace& tb) {
  FirstDivergence first;
  first.known = true;
  first.block = true;
  first.step = s.step;
  first.index = s.index_a;
  const auto [op_a, position_a] = Outermost(s.only_a);
  const OpRecord* op_b = Outermost(s.only_b).first;
  if (op_a != nullptr) {
    first.op = ta.Str(op_a->op);
    first.index = s.index_a + position_a;
  }
  if (op_b != nullptr) first.op_b = tb.Str(op_b->op);
  const OpRecord* where = op_a != nullptr ? op_a : op_b;
  const RankTrace& trace = op_a != nullptr ? ta : tb;
  if (where != nullptr) {
    first.phase = std::string(PhaseName(where->phase));
    first.module = trace.Str(where->module);
    first.call_site = trace.Str(where->call_site);
  }
  return first;
}

// The op the rank's verdict is about: a structural verdict's is where the op streams part (its
// numerical divergence comes after and is caused there), a latent one's the op whose argument
// differs, any other the first numerical divergence.
FirstDivergence FirstOf(const RankDiff& diff, const RankTrace& ta, const RankTrace& tb) {
  if (diff.verdict == Verdict::kLatent && diff.latent && diff.latent->a.op != nullptr) {
    return AtOp(diff.latent->a, ta);
  }
  if (diff.verdict == Verdict::kStructural && diff.structural) {
    return AtBlock(*diff.structural, ta, tb);
  }
  if (diff.numeric && diff.numeric->a.op != nullptr) return AtOp(diff.numeric->a, ta);
  if (diff.structural) return AtBlock(*diff.structural, ta, tb);
  return {};
}

std::string Describe(const FirstDivergence& first) {
  if (!first.known) return "-";
  std::string text = "step " + std::to_string(first.step) + " #" + std::to_string(first.index);
  if (!first.phase.empty()) text += ", " + first.phase;
  if (first.block) {  // "aten::gelu -> aten::relu", A's then B's, as differing arguments read
    text += ", " + (first.op.empty() ? std::string("(none)") : first.op) + " -> " +
            (first.op_b.empty() ? std::string("(none)") : first.op_b);
  } else if (!first.op.empty()) {
    text += ", " + first.op;
  }
  if (!first.module.empty() || !first.call_site.empty()) {
    text += " (" + OrDash(first.module) + ", " + OrDash(first.call_site) + ")";
  }
  return text;
}

}  // namespace

std::string RenderGlobalOrderText(const GlobalOrder& order, const DiffResult& result, const Run& a,
                                  const Run& b) {
  std::ostringstream out;
  out << "upguard diff " << a.dir << " " << b.dir << "  (" << result.ranks.size()
      << " ranks, ordered through collectives)\n";
  for (const std::string& note : order.notes) out << "  note: " << note << "\n";
  if (!order.first) {
    out << (result.verdict == Verdict::kUnverified
                ? "  no rank diverged in what was compared, but some tensors were not read (see "
                  "each rank below):\n  the runs are not known to be identical\n\n"
                : "  every rank is identical\n\n");
    return out.str();
  }
  const int first = *order.first;
  const RankDiff& first_diff = result.ranks[first];
  const FirstDivergence where = FirstOf(first_diff, a.ranks[first], b.ranks[first]);
  const RankOrder& first_order = order.ranks[first];
  if (first_order.role == RankRole::kOrigin) {
    out << "  ORIGIN  rank " << first << ": " << VerdictName(first_diff.verdict) << " at "
        << Describe(where) << "\n";
    if (order.origins.size() > 1) {
      std::vector<int> others(order.origins.begin() + 1, order.origins.end());
      out << "          also diverged on their own: " << RanksText(others) << "\n";
    }
    for (const CollectiveHop& hop : order.hops) {
      if (std::find(hop.senders.begin(), hop.senders.end(), first) == hop.senders.end()) continue;
      out << "  path    rank " << first << " -> " << hop.Name() << " (step " << hop.step << ", "
          << hop.phase << ") -> " << RanksText(hop.receivers) << "\n";
    }
  } else if (first_order.role == RankRole::kCollective && first_order.hop) {
    const CollectiveHop& hop = order.hops[*first_order.hop];
    out << "  COLLECTIVE  " << hop.Name() << " at step " << hop.step << " (" << hop.phase
        << "): every member's inputs are identical, its outputs differ on "
        << RanksText(hop.receivers) << "\n";
  } else {
    out << "  FIRST  rank " << first << ": " << VerdictName(first_diff.verdict) << " at "
        << Describe(where) << "\n";
  }
  for (const RankOrder& rank : order.ranks) {
    const std::string role(RankRoleName(rank.role));
    out << "    rank " << rank.rank << "  " << role;
    if (rank.role == RankRole::kIdentical || rank.role == RankRole::kUnverified) {
      out << (rank.role == RankRole::kUnverified ? "  (some tensors were not read: see below)"
                                                 : "")
          << "\n";
      continue;
    }
    out << std::string(role.size() < 11 ? 11 - role.size() : 1, ' ');
    if (rank.hop) {
      const CollectiveHop& hop = order.hops[*rank.hop];
      out << "via " << hop.Name() << ", step " << hop.step;
      if (!hop.senders.empty()) out << ", from " << RanksText(hop.senders);
      if (!hop.missing.empty()) out << "; no record of it on " << RanksText(hop.missing);
      out << "\n";
    } else {
      out << VerdictName(result.ranks[rank.rank].verdict) << " at "
          << Describe(FirstOf(result.ranks[rank.rank], a.ranks[rank.rank], b.ranks[rank.rank]))
          << "\n";
    }
  }
  out << "\n";
  return out.str();
}

nlohmann::json GlobalOrderToJson(const GlobalOrder& order, const DiffResult& result, const Run& a,
                                 const Run& b) {
  nlohmann::json json;
  json["first_rank"] = order.first ? nlohmann::json(*order.first) : nlohmann::json(nullptr);
  json["origins"] = order.origins;
  json["notes"] = order.notes;
  nlohmann::json hops = nlohmann::json::array();
  for (const CollectiveHop& hop : order.hops) {
    hops.push_back({{"name", hop.Name()},
                    {"op", hop.op},
                    {"group", hop.group},
                    {"ranks", hop.ranks},
                    {"seq", hop.seq},
                    {"step", hop.step},
                    {"phase", hop.phase},
                    {"senders", hop.senders},
                    {"receivers", hop.receivers},
                    {"missing", hop.missing}});
  }
  json["collectives"] = hops;
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankOrder& rank : order.ranks) {
    nlohmann::json entry = {{"rank", rank.rank},
                            {"role", RankRoleName(rank.role)},
                            {"verdict", VerdictName(result.ranks[rank.rank].verdict)}};
    entry["via"] = rank.hop ? nlohmann::json(*rank.hop) : nlohmann::json(nullptr);
    const FirstDivergence first =
        FirstOf(result.ranks[rank.rank], a.ranks[rank.rank], b.ranks[rank.rank]);
    if (first.known) {
      entry["first"] = {{"step", first.step},     {"index", first.index},
                        {"phase", first.phase},   {"op", first.op},
                        {"module", first.module}, {"call_site", first.call_site}};
      if (first.block) entry["first"]["op_b"] = first.op_b;  // "" when only A ran one
    }
    ranks.push_back(std::move(entry));
  }
  json["ranks"] = ranks;
  return json;
}

}  // namespace upguard

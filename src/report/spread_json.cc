#include "report/spread_json.h"

namespace upguard {

nlohmann::json SpreadToJson(const RankSpread& spread) {
  nlohmann::json steps = nlohmann::json::array();
  for (const SpreadStep& step : spread.steps) {
    auto optional = [](const auto& value) {
      return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
    };
    steps.push_back({{"step", step.step},
                     {"identical", step.identical},
                     {"ops", step.ops},
                     {"first_differing", optional(step.first_differing)},
                     {"loss_a", optional(step.loss_a)},
                     {"loss_b", optional(step.loss_b)},
                     {"state_relative", optional(step.state_relative)}});
  }
  nlohmann::json out = {{"steps", std::move(steps)}, {"found", spread.found}};
  if (!spread.found) return out;
  nlohmann::json ops = nlohmann::json::array();
  for (const SpreadOp& op : spread.ops) {
    ops.push_back({{"index", op.index},
                   {"named", op.named},
                   {"op", op.op},
                   {"module", op.module},
                   {"phase", op.phase},
                   {"depth", op.depth},
                   {"paired", op.paired},
                   {"differs", op.differs},
                   {"measured", op.measured},
                   {"relative", op.relative},
                   {"nonfinite", op.nonfinite}});
  }
  out["step"] = spread.step;
  out["divergent_index"] = spread.divergent_index;
  out["only_b"] = spread.only_b;
  out["ops"] = std::move(ops);
  return out;
}

void AddSpreadJson(const std::vector<RankSpread>& spreads, nlohmann::json* model) {
  if (!model->contains("ranks")) return;
  for (nlohmann::json& rank : (*model)["ranks"]) {
    for (const RankSpread& spread : spreads) {
      if (rank.value("rank", -1) == spread.rank) rank["spread"] = SpreadToJson(spread);
    }
  }
}

}  // namespace upguard

#include "recorder/capture_selector.h"

#include <algorithm>
#include <charconv>

#include "base/glob.h"
#include "upguard/recorder.h"

namespace upguard {
namespace {

constexpr const char* kKeys =
    "step=N, rank=N, index=N[|N...], position=N[|N...], op=GLOB, module=GLOB, "
    "phase=forward|backward|optimizer|recompute|other, "
    "limit=N, "
    "stop";

bool ParseCount(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  auto [ptr, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && ptr == text.data() + text.size();
}

std::optional<Phase> ParsePhase(std::string_view text) {
  for (Phase phase :
       {Phase::kOther, Phase::kForward, Phase::kBackward, Phase::kOptimizer, Phase::kRecompute}) {
    if (PhaseName(phase) == text) return phase;
  }
  return std::nullopt;
}

Status TermError(std::string_view selector, std::string_view term, const std::string& what) {
  return InvalidArgument("--capture '" + std::string(selector) + "': term '" + std::string(term) +
                         "' " + what + "; terms are " + kKeys);
}

// "12|40|977" into a sorted list without repeats.
bool ParseList(std::string_view value, std::vector<uint64_t>* out) {
  uint64_t number = 0;
  for (size_t at = 0; at <= value.size();) {
    const size_t bar = std::min(value.find('|', at), value.size());
    if (!ParseCount(value.substr(at, bar - at), &number) ||
        number > static_cast<uint64_t>(INT64_MAX)) {
      return false;
    }
    out->push_back(number);
    at = bar + 1;
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return true;
}

// Whether some element of the sorted `list` lies in [first, first + span]; true when empty.
bool SomeIn(const std::vector<uint64_t>& list, uint64_t first, uint64_t span) {
  if (list.empty()) return true;
  auto it = std::lower_bound(list.begin(), list.end(), first);
  return it != list.end() && *it - first <= span;
}

bool In(const std::vector<uint64_t>& list, uint64_t value) {
  return list.empty() || std::binary_search(list.begin(), list.end(), value);
}

std::string ListText(const std::vector<uint64_t>& list) {
  std::string text;
  for (uint64_t value : list) text += (text.empty() ? "" : "|") + std::to_string(value);
  return text;
}

}  // namespace

bool CaptureSelector::MayMatch(int64_t op_step, std::string_view op_name,
                               std::string_view op_module, Phase op_phase) const {
  if (step && *step != op_step) return false;
  if (phase && *phase != op_phase) return false;
  if (!op.empty() && !GlobMatch(op, op_name)) return false;
  return module.empty() || GlobMatch(module, op_module);
}

bool CaptureSelector::Matches(int64_t op_step, uint64_t op_index, uint64_t op_position,
                              std::string_view op_name, std::string_view op_module,
                              Phase op_phase) const {
  if (!positions.empty() && op_phase == Phase::kInput) return false;
  return In(indices, op_index) && In(positions, op_position) &&
         MayMatch(op_step, op_name, op_module, op_phase);
}

bool CaptureSelector::IndexIn(uint64_t first, uint64_t span) const {
  return SomeIn(indices, first, span);
}

bool CaptureSelector::PositionIn(uint64_t first, uint64_t span) const {
  return SomeIn(positions, first, span);
}

std::string CaptureSelector::ToString() const {
  std::string text;
  auto add = [&text](const std::string& term) { text += (text.empty() ? "" : ",") + term; };
  if (step) add("step=" + std::to_string(*step));
  if (rank) add("rank=" + std::to_string(*rank));
  if (!indices.empty()) add("index=" + ListText(indices));
  if (!positions.empty()) add("position=" + ListText(positions));
  if (!op.empty()) add("op=" + op);
  if (!module.empty()) add("module=" + module);
  if (phase) add("phase=" + std::string(PhaseName(*phase)));
  add("limit=" + std::to_string(limit));
  if (stop) add("stop");
  return text;
}

std::string CapturePath(const std::string& run_dir, int rank, uint32_t step, uint64_t index) {
  return run_dir + "/captures/rank" + std::to_string(rank) + ".step" + std::to_string(step) +
         ".op" + std::to_string(index) + ".safetensors";
}

StatusOr<CaptureSelector> ParseCaptureSelector(std::string_view text) {
  CaptureSelector selector;
  bool limit_given = false;
  if (text.empty())
    return InvalidArgument(std::string("--capture: empty selector; terms are ") + kKeys);
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view term = text.substr(start, comma - start);
    start = comma + 1;
    if (term == "stop") {
      selector.stop = true;
      continue;
    }
    const size_t eq = term.find('=');
    if (eq == std::string_view::npos || eq + 1 == term.size()) {
      return TermError(text, term, "is not KEY=VALUE");
    }
    const std::string_view key = term.substr(0, eq);
    const std::string_view value = term.substr(eq + 1);
    uint64_t number = 0;
    if (key == "index" || key == "position") {
      if (!ParseList(value, key == "index" ? &selector.indices : &selector.positions)) {
        return TermError(text, term, "needs non-negative integers separated by |");
      }
    } else if (key == "step" || key == "rank" || key == "limit") {
      if (!ParseCount(value, &number) || number > static_cast<uint64_t>(INT64_MAX)) {
        return TermError(text, term, "needs a non-negative integer");
      }
      if (key == "step") selector.step = static_cast<int64_t>(number);
      if (key == "rank") selector.rank = static_cast<int64_t>(number);
      if (key == "limit") {
        if (number == 0) return TermError(text, term, "must be at least 1");
        selector.limit = number;
        limit_given = true;
      }
    } else if (key == "op") {
      selector.op = value;
    } else if (key == "module") {
      selector.module = value;
    } else if (key == "phase") {
      selector.phase = ParsePhase(value);
      if (!selector.phase) return TermError(text, term, "names no phase");
    } else {
      return TermError(text, term, "has an unknown key");
    }
  }
  if (!limit_given && (!selector.indices.empty() || !selector.positions.empty())) {
    selector.limit = selector.indices.empty() ? selector.positions.size()
                     : selector.positions.empty()
                         ? selector.indices.size()
                         : std::min(selector.indices.size(), selector.positions.size());
  }
  return selector;
}

}  // namespace upguard

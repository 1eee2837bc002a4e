// TolerancePolicy: the policy file's rules, and which of them applies to an op.
#include <sstream>

#include "base/glob.h"
#include "capture/tolerance.h"

namespace upguard {
namespace {

constexpr std::string_view kRuleForms =
    "a rule is `default TOLERANCE`, `op GLOB TOLERANCE`, `module GLOB TOLERANCE`, "
    "`at PHASE MODULE OP TOLERANCE` or `nondeterministic GLOB`";

std::vector<std::string> Words(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// One non-blank line, comment removed.
Status ParseRule(const std::vector<std::string>& words, TolerancePolicy::Rule* rule) {
  using Kind = TolerancePolicy::Rule::Kind;
  const std::string& keyword = words[0];
  size_t expected_words = 3;
  if (keyword == "default") {
    rule->kind = Kind::kDefault;
    expected_words = 2;
  } else if (keyword == "op") {
    rule->kind = Kind::kOp;
  } else if (keyword == "module") {
    rule->kind = Kind::kModule;
  } else if (keyword == "nondeterministic") {
    rule->kind = Kind::kNondeterministic;
    expected_words = 2;
  } else if (keyword == "at") {
    rule->kind = Kind::kAt;
    expected_words = 5;
  } else {
    return InvalidArgument("unknown rule \"" + keyword + "\"; " + std::string(kRuleForms));
  }
  if (words.size() != expected_words) {
    return InvalidArgument("\"" + keyword + "\" takes " +
                           (expected_words == 5   ? "a phase, a module, an op and a tolerance"
                            : expected_words == 3 ? "a glob and a tolerance"
                            : rule->kind == Kind::kDefault ? "a tolerance"
                                                           : "a glob") +
                           ", got " + std::to_string(words.size() - 1) + " words; " +
                           std::string(kRuleForms));
  }
  if (rule->kind == Kind::kAt) {
    rule->phase = words[1];
    rule->module = words[2] == "-" ? "" : words[2];
    rule->pattern = words[3];
  } else if (rule->kind != Kind::kDefault) {
    rule->pattern = words[1];
  }
  if (rule->kind == Kind::kNondeterministic) return Status::Ok();
  ASSIGN_OR_RETURN(rule->tolerance, ParseTolerance(words.back()));
  return Status::Ok();
}

}  // namespace

StatusOr<TolerancePolicy> ParseTolerancePolicy(std::string_view text, std::string_view path) {
  TolerancePolicy policy;
  int line_number = 0;
  for (size_t line_begin = 0; line_begin < text.size();) {
    size_t line_end = text.find('\n', line_begin);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_begin, line_end - line_begin);
    line_begin = line_end + 1;
    ++line_number;
    constexpr std::string_view kCalibrated = "# upguard calibrate: ";
    if (line_number == 1 && line.substr(0, kCalibrated.size()) == kCalibrated) {
      policy.calibrated = std::string(line.substr(kCalibrated.size()));
    }
    line = line.substr(0, line.find('#'));
    const std::vector<std::string> words = Words(line);
    if (words.empty()) continue;
    TolerancePolicy::Rule rule;
    rule.line = line_number;
    const Status parsed = ParseRule(words, &rule);
    if (!parsed.ok()) {
      return InvalidArgument(std::string(path) + ":" + std::to_string(line_number) + ": " +
                             parsed.message());
    }
    policy.rules.push_back(std::move(rule));
  }
  return policy;
}

Tolerance TolerancePolicy::For(std::string_view op, std::string_view module,
                               std::string_view phase) const {
  Tolerance tolerance;
  for (const Rule& rule : rules) {
    const bool at = rule.kind == Rule::Kind::kAt && GlobMatch(rule.phase, phase) &&
                    GlobMatch(rule.module, module) && GlobMatch(rule.pattern, op);
    const bool matches = rule.kind == Rule::Kind::kDefault || at ||
                         (rule.kind == Rule::Kind::kOp && GlobMatch(rule.pattern, op)) ||
                         (rule.kind == Rule::Kind::kModule && GlobMatch(rule.pattern, module));
    if (matches) tolerance = rule.tolerance;
  }
  return tolerance;
}

bool TolerancePolicy::Nondeterministic(std::string_view op) const {
  for (const Rule& rule : rules) {
    if (rule.kind == Rule::Kind::kNondeterministic && GlobMatch(rule.pattern, op)) return true;
  }
  return false;
}

}  // namespace upguard

#include "analysis/explain.h"

#include <memory>

#include "capture/safetensors.h"

namespace upguard {
namespace {

std::string MetaValue(const SafetensorsFile& file, const std::string& key) {
  for (const auto& [name, value] : file.metadata()) {
    if (name == key) return value;
  }
  return "";
}

// Checks that a capture holds the op the trace names, and that each captured tensor has the
// digest the run recorded for it.
Status CheckOpMatches(const SafetensorsFile& file, const std::string& path,
                      const std::string& op_name) {
  const std::string captured = MetaValue(file, "upguard.op");
  if (captured != op_name) {
    return FailedPrecondition(path + ": holds op '" + captured + "', but the trace has '" +
                              op_name + "' there; the re-run did not execute the same ops");
  }
  return Status::Ok();
}

void CheckDigest(const SafetensorsFile& file, const std::string& tensor, const char* side,
                 const ArgRecord* recorded, std::vector<std::string>* not_reproduced) {
  if (recorded == nullptr || recorded->kind != ArgKind::kTensor) return;
  const std::string captured = MetaValue(file, tensor + ".digest");
  if (captured.empty() || captured == recorded->digest.Hex()) return;
  not_reproduced->push_back(std::string(side) + " " + tensor + ": captured " +
                            captured.substr(0, 8) + ", recorded " + recorded->digest.Short() +
                            ": the re-run did not reproduce the values this run recorded");
}

std::vector<TensorExplanation> CompareSide(bool is_input, const std::vector<ArgComparison>& slots,
                                           const SafetensorsFile& a, const SafetensorsFile& b,
                                           std::vector<std::string>* not_reproduced,
                                           Status* error) {
  std::vector<TensorExplanation> out;
  for (const ArgComparison& slot : slots) {
    const std::string tensor =
        std::string(is_input ? "input." : "output.") + std::to_string(slot.index);
    const StoredTensor* ta = a.Find(tensor);
    const StoredTensor* tb = b.Find(tensor);
    if (ta == nullptr && tb == nullptr) continue;  // not a tensor with values
    TensorExplanation explanation;
    explanation.is_input = is_input;
    explanation.index = slot.index;
    explanation.name = slot.name;
    explanation.in_a = ta != nullptr;
    explanation.in_b = tb != nullptr;
    CheckDigest(a, tensor, "A", slot.a, not_reproduced);
    CheckDigest(b, tensor, "B", slot.b, not_reproduced);
    if (ta != nullptr && tb != nullptr) {
      StatusOr<ElementComparison> comparison = CompareElements(*ta, *tb);
      if (!comparison.ok()) {
        *error = comparison.status();
        return out;
      }
      explanation.bitwise_equal = comparison->comparable && comparison->differing == 0;
      explanation.comparison = std::move(*comparison);
    }
    out.push_back(std::move(explanation));
  }
  return out;
}

}  // namespace

StatusOr<Explanation> ExplainCaptures(const std::string& path_a, const std::string& path_b,
                                      const NumericDivergence& divergence, const RankTrace& ta) {
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> a, SafetensorsFile::Open(path_a));
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> b, SafetensorsFile::Open(path_b));
  Explanation explanation;
  explanation.capture_a = path_a;
  explanation.capture_b = path_b;
  explanation.op = ta.Str(divergence.a.op->op);
  RETURN_IF_ERROR(CheckOpMatches(*a, path_a, explanation.op));
  RETURN_IF_ERROR(CheckOpMatches(*b, path_b, explanation.op));
  Status error;
  explanation.inputs =
      CompareSide(true, divergence.inputs, *a, *b, &explanation.not_reproduced, &error);
  RETURN_IF_ERROR(error);
  explanation.outputs =
      CompareSide(false, divergence.outputs, *a, *b, &explanation.not_reproduced, &error);
  RETURN_IF_ERROR(error);
  return explanation;
}

void ApplyTolerance(const Tolerance& t, Explanation* explanation) {
  if (t.kind == Tolerance::Kind::kBitwise) return;
  explanation->tolerance = t.ToString();
  for (auto* side : {&explanation->inputs, &explanation->outputs}) {
    for (TensorExplanation& tensor : *side) {
      if (tensor.comparison) tensor.within_tolerance = ComparisonWithin(t, *tensor.comparison);
    }
  }
}

std::string ExplanationHeadline(const Explanation& explanation) {
  // A capture whose digests are not the ones its run recorded holds other values: comparing
  // them says nothing about the divergence (a re-run replays argv, the working directory and
  // the numerics environment of meta.json, and inherits everything else from the caller).
  std::string sides;
  for (const char* side : {"A", "B"}) {
    for (const std::string& warning : explanation.not_reproduced) {
      if (warning.rfind(std::string(side) + " ", 0) != 0) continue;
      sides += std::string(sides.empty() ? "" : " and ") + side;
      break;
    }
  }
  if (!sides.empty()) {
    return "no explanation: the re-run of " + sides +
           " did not reproduce the values recorded, so these elements are not the recorded "
           "run's. A re-run replays argv, the working directory and the numerics environment "
           "(meta.json) and inherits the rest of this shell's environment: run it with the "
           "environment the run was recorded with (a variable the script reads), or capture "
           "each side with `upguard record --capture`";
  }
  std::string text;
  bool inputs_equal = true;
  for (const TensorExplanation& input : explanation.inputs) {
    inputs_equal = inputs_equal && input.bitwise_equal;
  }
  text = explanation.inputs.empty() ? "no tensor inputs"
                                    : (inputs_equal ? "inputs identical" : "inputs differ");
  for (const TensorExplanation& output : explanation.outputs) {
    text += "; output " + std::to_string(output.index) + ": ";
    if (!output.comparison) {
      text += "captured on one side only";
      continue;
    }
    text += SummarizeComparisonBrief(*output.comparison);  // the tensor lines have the rest
    if (output.within_tolerance) {
      text +=
          std::string(*output.within_tolerance ? ", within tolerance " : ", beyond tolerance ") +
          explanation.tolerance;
    }
  }
  return text;
}

}  // namespace upguard

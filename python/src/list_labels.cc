#include "list_labels.h"

#include <charconv>
#include <map>
#include <string>

#include "string_pool.h"

namespace upguard::torch_adapter {
namespace {

// "exp_avgs[3]" -> ("exp_avgs", 3); false for a name that is not a list element.
bool ParseElement(std::string_view name, std::string_view* list, size_t* index) {
  if (name.size() < 4 || name.back() != ']') return false;
  const size_t open = name.rfind('[');
  if (open == std::string_view::npos || open == 0) return false;
  const char* first = name.data() + open + 1;
  const char* last = name.data() + name.size() - 1;
  auto [end, error] = std::from_chars(first, last, *index);
  if (error != std::errc() || end != last) return false;
  *list = name.substr(0, open);
  return true;
}

bool Labelable(const Arg& arg) {
  return arg.kind != ArgKind::kNone && arg.kind != ArgKind::kScalar;
}

}  // namespace

std::string_view ParameterOf(std::string_view label) {
  constexpr std::string_view kOf = " of ";
  constexpr std::string_view kGrad = ".grad";
  if (const size_t of = label.find(kOf); of != std::string_view::npos) {
    return label.substr(of + kOf.size());
  }
  if (label.size() > kGrad.size() && label.substr(label.size() - kGrad.size()) == kGrad) {
    return label.substr(0, label.size() - kGrad.size());
  }
  return label;
}

void LabelListElements(ArgBatch* batch, ListOrder* order) {
  // Each list's args, by element index (an op's lists are appended element by element).
  std::map<std::string_view, std::vector<size_t>> lists;
  for (size_t idx = 0; idx < batch->args.size(); ++idx) {
    std::string_view list;
    size_t element = 0;
    if (!ParseElement(batch->args[idx].name, &list, &element)) continue;
    std::vector<size_t>& args = lists[list];
    if (element == args.size()) args.push_back(idx);
  }
  for (const auto& [list, args] : lists) {
    if (args.size() < 2) continue;
    ListOrder params;
    for (size_t idx : args) {
      const Arg& arg = batch->args[idx];
      if (!Labelable(arg) || arg.label.empty()) break;
      params.push_back(ParameterOf(arg.label));
    }
    if (params.size() == args.size()) *order = std::move(params);
  }
  if (order->empty()) return;
  for (const auto& [list, args] : lists) {
    if (args.size() != order->size()) continue;
    for (size_t element = 0; element < args.size(); ++element) {
      Arg& arg = batch->args[args[element]];
      if (Labelable(arg) && arg.label.empty()) {
        arg.label = Pooled("for " + std::string((*order)[element]));
      }
    }
  }
}

}  // namespace upguard::torch_adapter

#include "recorder/thread_names.h"

namespace upguard {

void ThreadNames::Learn(const Arg& arg, const ArgRecord& rec) {
  names.Put(arg.name, rec.name);
  names.Put(arg.label, rec.label);
  if (HasText(arg) && !arg.text.empty()) {
    texts.emplace(std::string(arg.text), rec.text);
  }
}

ThreadNames& ThreadNamesFor(uint64_t recorder) {
  thread_local ThreadNames memo;
  if (memo.recorder != recorder) {
    memo.names.Clear();
    memo.texts.clear();
    memo.recorder = recorder;
  }
  return memo;
}

bool NamesFromMemo(const std::vector<Arg>& args, const ThreadNames& memo,
                   std::vector<ArgRecord>* out) {
  for (size_t arg_idx = 0; arg_idx < args.size(); ++arg_idx) {
    const Arg& arg = args[arg_idx];
    ArgRecord& rec = (*out)[arg_idx];
    const std::optional<StringId> name = memo.names.Find(arg.name);
    const std::optional<StringId> label = memo.names.Find(arg.label);
    if (!name || !label) return false;
    rec.name = *name;
    rec.label = *label;
    if (!HasText(arg) || arg.text.empty()) continue;  // "" is kEmptyString
    auto text = memo.texts.find(std::string(arg.text));
    if (text == memo.texts.end()) return false;
    rec.text = text->second;
  }
  return true;
}

}  // namespace upguard

#include "cli/flags.h"

#include <charconv>

#include "cli/command.h"

namespace upguard {

const FlagSpec* Flags::Find(const std::string& name, char short_name) const {
  for (const FlagSpec& spec : specs_) {
    if ((!name.empty() && spec.name == name) ||
        (short_name != 0 && spec.short_name == short_name)) {
      return &spec;
    }
  }
  return nullptr;
}

Status Flags::Parse(int argc, char** argv, int first) {
  for (int arg_idx = first; arg_idx < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    if (arg == "--") {
      rest_.assign(argv + arg_idx + 1, argv + argc);
      return Status::Ok();
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positionals_.push_back(arg);
      continue;
    }
    std::string name, value;
    bool has_inline_value = false;
    const FlagSpec* spec = nullptr;
    if (arg[1] == '-') {
      name = arg.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_inline_value = true;
      }
      spec = Find(name, 0);
    } else if (arg.size() == 2) {
      spec = Find("", arg[1]);
    }
    if (spec == nullptr) {
      return InvalidArgument("upguard " + command_ + ": unknown option '" + arg +
                             "'; see `upguard " + command_ + " --help`");
    }
    if (spec->takes_value && !has_inline_value) {
      if (arg_idx + 1 >= argc) {
        return InvalidArgument("upguard " + command_ + ": option --" + spec->name +
                               " needs a value");
      }
      value = argv[++arg_idx];
    } else if (!spec->takes_value && has_inline_value) {
      return InvalidArgument("upguard " + command_ + ": option --" + spec->name +
                             " takes no value");
    }
    values_[spec->name] = value;
    all_values_[spec->name].push_back(value);
  }
  return Status::Ok();
}

std::string Flags::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::vector<std::string> Flags::GetAll(const std::string& name) const {
  auto it = all_values_.find(name);
  return it == all_values_.end() ? std::vector<std::string>() : it->second;
}

StatusOr<int64_t> Flags::GetInt(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  int64_t value = 0;
  const std::string& text = it->second;
  auto [ptr, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgument("upguard " + command_ + ": --" + name + " expects an integer, got '" +
                           text + "'");
  }
  return value;
}

bool WantsHelp(int argc, char** argv) {
  for (int arg_idx = 2; arg_idx < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    if (arg == "--") return false;
    if (arg == "-h" || arg == "--help") return true;
  }
  return false;
}

}  // namespace upguard

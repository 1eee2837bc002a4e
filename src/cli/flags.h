// A small command-line parser for the subcommands: `--name value`, `--name=value`, boolean
// `--name`, short aliases, positionals, and everything after `--` kept verbatim.
//
//   Flags flags("diff", {{"json", 0, false}, {"tolerance", 0, true}, {"jobs", 0, true}});
//   RETURN_IF_ERROR(flags.Parse(argc, argv, 2));         // argv[1] is the subcommand
//   bool json = flags.Has("json");
//   std::string tolerance = flags.Get("tolerance");      // "" when absent
//   ASSIGN_OR_RETURN(const int64_t jobs, flags.GetInt("jobs", 0));
//   const std::vector<std::string>& runs = flags.positionals();  // RUN_A RUN_B
#pragma once

#include <map>
#include <string>
#include <vector>

#include "upguard/status.h"

namespace upguard {

struct FlagSpec {
  std::string name;
  char short_name = 0;
  bool takes_value = false;
};

class Flags {
 public:
  Flags(std::string command, std::vector<FlagSpec> specs)
      : command_(std::move(command)), specs_(std::move(specs)) {}

  // Parses argv[first..]; unknown flags and missing values are InvalidArgument naming the flag.
  Status Parse(int argc, char** argv, int first);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  // Every value of a flag given more than once (`--trust-run A --trust-run B`), in order;
  // Get() returns the last.
  std::vector<std::string> GetAll(const std::string& name) const;
  // Integer flag; errors name the flag and the text.
  StatusOr<int64_t> GetInt(const std::string& name, int64_t fallback) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  const std::vector<std::string>& rest() const { return rest_; }  // after `--`

 private:
  const FlagSpec* Find(const std::string& name, char short_name) const;

  std::string command_;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  std::vector<std::string> positionals_;
  std::vector<std::string> rest_;
};

}  // namespace upguard

// upguard: find the first operator where two training runs part ways.
// main() only dispatches; every subcommand lives in its own <verb>_command.cc.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/command.h"
#include "upguard/version.h"

namespace {

const upguard::CommandInfo kCommands[] = {
    {"record", "record every op of a training command into a run directory", upguard::kRecordUsage,
     upguard::RunRecordCommand},
    {"diff", "name the first op where two runs part ways, and why", upguard::kDiffUsage,
     upguard::RunDiffCommand},
    {"show", "list the recorded ops of a run", upguard::kShowUsage, upguard::RunShowCommand},
    {"recover", "move a killed recording into its run directory", upguard::kRecoverUsage,
     upguard::RunRecoverCommand},
    {"nan", "name the first op of a run that made a NaN or Inf", upguard::kNanUsage,
     upguard::RunNanCommand},
    {"demo", "train a small GPT twice with one planted change and find it", upguard::kDemoUsage,
     upguard::RunDemoCommand},
    {"watch", "name the rank that hangs or lags in a running training, and why",
     upguard::kWatchUsage, upguard::RunWatchCommand},
    {"calibrate", "learn a reference's own run-to-run noise as a tolerance policy",
     upguard::kCalibrateUsage, upguard::RunCalibrateCommand},
    {"machines", "name the machine whose metrics part from its peers'", upguard::kMachinesUsage,
     upguard::RunMachinesCommand},
};

void PrintHelp() {
  std::printf("upguard %s: find the first operator where two training runs part ways\n\n",
              upguard::kUpguardVersion);
  std::printf("usage: upguard <command> [options]\n\ncommands:\n");
  for (const upguard::CommandInfo& command : kCommands) {
    std::printf("  %-8s %s\n", command.name, command.summary);
  }
  std::printf(
      "\nexit codes: 0 ok/identical, 1 diverged, 2 error, 4 refused to re-run a recorded command "
      "without consent.\n`upguard <command> --help`\n");
}

// Runs the command; its Status becomes exit code 2 (kExitUntrusted for a re-run refused without
// consent). The core never throws, but a library it
// calls may (nlohmann::json on a value of the wrong type, std::bad_alloc): that is a bug, said
// as such, and still exit code 2 rather than an abort.
int RunCommand(const upguard::CommandInfo& command, int argc, char** argv) {
  std::string internal_error;
  try {
    upguard::StatusOr<int> code = command.run(argc, argv);
    if (code.ok()) return *code;
    std::fflush(stdout);
    std::fprintf(stderr, "upguard %s: %s\n", command.name, code.status().message().c_str());
    return code.status().code() == upguard::StatusCode::kUntrusted ? upguard::kExitUntrusted
                                                                   : upguard::kExitError;
  } catch (const std::exception& error) {
    internal_error = error.what();
  } catch (...) {
    internal_error = "an exception that is not a std::exception";
  }
  std::fflush(stdout);
  std::fprintf(stderr, "upguard %s: internal error: %s; please report it with the command line\n",
               command.name, internal_error.c_str());
  return upguard::kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    PrintHelp();
    return argc < 2 ? upguard::kExitError : upguard::kExitOk;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("upguard %s\n", upguard::kUpguardVersion);
    return upguard::kExitOk;
  }
  for (const upguard::CommandInfo& command : kCommands) {
    if (std::strcmp(argv[1], command.name) != 0) continue;
    if (upguard::WantsHelp(argc, argv)) {
      std::printf("%s", command.usage);
      return upguard::kExitOk;
    }
    return RunCommand(command, argc, argv);
  }
  std::fprintf(stderr, "upguard: unknown command '%s'; run `upguard --help`\n", argv[1]);
  return upguard::kExitError;
}

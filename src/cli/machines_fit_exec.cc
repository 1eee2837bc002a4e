#include "cli/machines_fit_exec.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace upguard {

StatusOr<int> ExecMachinesFit(int argc, char** argv) {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) return Internal("cannot find the upguard executable (/proc/self/exe)");
  std::string dir(self, static_cast<size_t>(length));
  dir = dir.substr(0, dir.rfind('/') + 1);
  const std::string fit = dir + "upguard-machines-fit";
  if (access(fit.c_str(), X_OK) != 0) {
    return FailedPrecondition(fit +
                              " is not there: this upguard was built without libtorch, "
                              "which `machines fit` trains the denoisers with; build it with "
                              "`make build` (Debian's python3-torch) and run that build's upguard");
  }
  std::vector<char*> args{const_cast<char*>(fit.c_str())};
  for (int idx = 3; idx < argc; ++idx) args.push_back(argv[idx]);
  args.push_back(nullptr);
  execv(fit.c_str(), args.data());
  return Internal(fit + ": cannot run it: " + std::strerror(errno));
}

}  // namespace upguard

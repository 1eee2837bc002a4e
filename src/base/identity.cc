#include "base/identity.h"

#include <pwd.h>
#include <unistd.h>

namespace upguard {

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::string UserName(int64_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(static_cast<uid_t>(uid), &entry, buffer, sizeof(buffer), &found) != 0 ||
      found == nullptr) {
    return "";
  }
  return entry.pw_name;
}

}  // namespace upguard

#include "upguard/status.h"

#include <cstdio>

namespace upguard {

std::string Status::ToString() const { return ok() ? "ok" : "error: " + message_; }

namespace internal {
void CheckFailed(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "upguard: internal check failed at %s:%d: %s\n", file, line, cond);
  std::abort();
}
}  // namespace internal

}  // namespace upguard

// The exit code of a diff's verdict, for `diff` and `demo` (docs/cli.md, "Exit codes").
#pragma once

#include "cli/command.h"
#include "diff/diff.h"

namespace upguard {

// 0 identical, 3 unverified (some tensors were not read), 1 any other verdict.
inline int DiffExitCode(Verdict verdict) {
  if (verdict == Verdict::kIdentical) return kExitOk;
  return verdict == Verdict::kUnverified ? kExitUnverified : kExitDiverged;
}

}  // namespace upguard

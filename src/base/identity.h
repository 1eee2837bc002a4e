// Who and where this process runs, as run metadata records it (recorder/run_meta.cc) and the
// CLI compares it before re-running a recorded command (cli/rerun_consent.h): one reader of
// each, so that the two agree.
//
//   meta["hostname"] = HostName();
//   meta["user"] = UserName(getuid());
#pragma once

#include <cstdint>
#include <string>

namespace upguard {

// gethostname(); "" when it fails (never equal to a recorded host name).
std::string HostName();

// The login name of `uid`; "" when the system has none.
std::string UserName(int64_t uid);

}  // namespace upguard

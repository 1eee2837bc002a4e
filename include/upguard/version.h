// The upguard release, written into every trace's metadata.
#pragma once

namespace upguard {
inline constexpr const char* kUpguardVersion = "0.1.0";
}  // namespace upguard

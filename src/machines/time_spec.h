// The times `upguard machines detect --start/--end` take: seconds since the Unix epoch, an
// RFC 3339 time, `now`, or a time relative to now.
//
//   ASSIGN_OR_RETURN(double start, ParseTimeSpec("-15m", WallClockSeconds()));
//   ParseTimeSpec("2024-12-04T18:33:20+01:00", now)  // 1733333600 (17:33:20Z)
#pragma once

#include <string_view>

#include "upguard/status.h"

namespace upguard::machines {

// Accepted: "1733331200" or "1733331200.5"; "2024-12-04T17:33:20Z", with fractional seconds, a
// lower-case t/z or a space for the T, or an offset "+01:00" / "-05:30"; "now"; "-15m", "now-15m"
// (units s, m, h, d, w; a decimal count allowed). Errors quote the text and list the forms.
StatusOr<double> ParseTimeSpec(std::string_view text, double now);

// Seconds since the Unix epoch, now.
double WallClockSeconds();

}  // namespace upguard::machines

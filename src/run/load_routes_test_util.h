// The ways a trace can be loaded, for tests that check every route gives the same answer.
#pragma once

#include "run/run_loader.h"

namespace upguard::testing {

enum class Route {
  kDecodeAll,  // TraceReader, every op in memory: the reference
  kIndexed,    // mapped and indexed at load, steps decoded when asked for
  kOnDemand,   // indexed as far as asked, as `upguard diff` reads
};

inline LoadOptions RouteOptions(Route route, bool allow_damaged) {
  LoadOptions options;
  options.allow_damaged = allow_damaged;
  options.decode_all = route == Route::kDecodeAll;
  options.index_on_demand = route == Route::kOnDemand;
  return options;
}

}  // namespace upguard::testing

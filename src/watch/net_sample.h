// What a rank's network interfaces say about its links, read by the rank's heartbeat
// (python/src/watch_feed.cc) every 100 ms from its own network namespace: bytes sent and
// received, links up, and how often the interfaces' queue disciplines held back or dropped a
// packet (a rate limit, a full queue). Loopback is left out.
#pragma once

#include "watch/ring_writer.h"

namespace upguard::watch {

// Bytes from /proc/self/net/dev, link states from the interface flags (up and running: the
// carrier is on), queue-discipline overlimits and drops from rtnetlink. A part that cannot be
// read stays 0.
NetSample ReadNetSample();

}  // namespace upguard::watch

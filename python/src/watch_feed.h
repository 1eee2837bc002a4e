// `upguard watch` in the training process: feeds the rank's watch ring (src/watch/ring_writer.h,
// docs/formats/watch-ring.md) from torch's RecordFunction callbacks, on its own, whether or not a
// recording runs. What it writes:
//
//   - every c10d collective op (c10d::allreduce_, broadcast_, allgather_, ...; a functional
//     collective's own c10d op and DDP's bucket all-reduces included) as it is issued on the
//     caller's thread: its group, op,
//     dtype, elements, bytes and Python call site; started and completed when the backend's
//     scope ("gloo:all_reduce") opens and ends on its worker thread, matched as the recorder
//     matches them (collectives.h): by kind and the first tensor the scope names, else the
//     oldest open call of its kind;
//   - a recent compute op of the training's threads (never a backend worker's), sampled;
//   - the step (each Optimizer.step's end), and the DataLoader (the Python side reports it);
//   - a heartbeat with the network interfaces' byte counters and link states every 100 ms, from
//     a thread of its own, which stops beating when the process is stopped or dead.
//
// Cost: nothing on an op that is not a collective: collectives are seen by a kernel of ours at
// BackendSelect for c10d's ops (registered while the watch runs), the backend's scopes by a
// USER_SCOPE callback, and the last op by a FUNCTION callback sampled once in 64 ops (an
// unsampled callback costs 2-7 % of a step). bench/watch_overhead.py measures it.
//
//   WatchStart({"runs/w/watch/rank1.ring", {1, 2, 1, getpid(), "host"}});
//   ...                              // the training runs
//   WatchClose();                    // at exit: the ring says it ended normally
//
// A forked child (a DataLoader worker) never writes the parent's ring: it shares the mapping.
#pragma once

#include <cstdint>
#include <string>

#include "upguard/status.h"
#include "watch/ring_writer.h"

namespace upguard::torch_adapter {

struct WatchOptions {
  std::string ring_path;
  watch::RingIdentity identity;
};

// Creates the ring and installs the callbacks and the heartbeat; FailedPrecondition when a
// watch runs already in this process.
Status WatchStart(const WatchOptions& options);
// The ring's file, or "" when no watch runs.
std::string WatchRingPath();
void WatchDataloader(bool inside);
// The Python side's stack thread: the request the ring's text answers last (where the thread
// starts: a request made before it ran, as a monitor asks a new ring at once, is answered
// too), and the answer to the next.
uint64_t WatchStackAnswered();
// Waits (at most timeout_s) for a request other than `answered`; returns it, else `answered`.
// Called without the GIL: the Python side's thread wakes only to answer.
uint64_t WatchWaitStackRequest(uint64_t answered, double timeout_s);
void WatchAnswerStack(uint64_t request, const std::string& text);
// The process ends normally: the ring says so, the callbacks and the heartbeat stop.
void WatchClose();

}  // namespace upguard::torch_adapter

// DIR/.upguard-lock: one writer (one recording, or the processes of one job) per run directory.
//
//   RunLockInfo mine{ThisProcess(), /*job=*/"", ".upguard-record-1234", now};
//   ASSIGN_OR_RETURN(bool taken, CreateRunLock(dir, mine));
//   if (!taken) { ASSIGN_OR_RETURN(std::optional<RunLockInfo> holder, ReadRunLock(dir)); ... }
//
// Why not flock(2): on NFS it is emulated with byte-range locks through the lock manager
// (lockd/NLM), which some cluster set-ups do not run or do not trust, and a lock held by a
// process that was killed is released by the kernel, leaving no trace that a recording died
// there. The lock is a file instead, created the way that is atomic on every NFS version: its
// whole contents are written into a temporary file of a unique name, which is then hard-linked
// to the lock's name (link(2) fails with EEXIST when the lock exists; a lost reply is caught by
// the temporary file's link count). A reader therefore never sees half a lock. Where hard
// links are not supported, open(O_CREAT|O_EXCL) is used (atomic on NFSv3 and later).
//
// A lock outlives a recorder that was killed (kill -9, the OOM killer, a scheduler's time
// limit). Whether it is stale is decided from the processes that write into its staging
// directory (rundir/members.h), not here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "rundir/process_identity.h"
#include "upguard/status.h"

namespace upguard {

struct RunLockInfo {
  ProcessIdentity owner;  // the process that took the lock
  std::string job;        // the job the lock admits ("" = its owner alone)
  std::string staging;    // the staging directory's name in DIR
  int64_t since = 0;      // when it was taken, seconds since the epoch

  nlohmann::json ToJson() const;
  static std::optional<RunLockInfo> FromJson(const nlohmann::json& json);
  // "pid 1234 on host node-3 since 2025-01-02 10:11:12 (job 77.0)".
  std::string Describe() const;
};

// Creates `path` holding `contents` atomically and exclusively (as described above): true
// when this call created it, false when it existed.
StatusOr<bool> CreateFileExclusively(const std::string& path, const std::string& contents);

// Takes DIR/.upguard-lock for `info`; false when some lock is there already.
StatusOr<bool> CreateRunLock(const std::string& dir, const RunLockInfo& info);
// DIR's lock; nullopt when there is none. A lock that cannot be parsed (being written by the
// O_EXCL route, or damaged) is an error naming it.
StatusOr<std::optional<RunLockInfo>> ReadRunLock(const std::string& dir);
// Removes DIR's lock if it still is `expected` (a lock found stale); false when another lock
// took its place meanwhile (it is left in place).
StatusOr<bool> BreakRunLock(const std::string& dir, const RunLockInfo& expected);
// Removes DIR's lock (its holder is done).
void RemoveRunLock(const std::string& dir);

}  // namespace upguard

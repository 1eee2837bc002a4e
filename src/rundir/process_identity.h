// Which process, on which host, holds or writes a run directory, and whether it may still run.
//
//   ProcessIdentity me = ThisProcess();
//   nlohmann::json json = me.ToJson();             // into a lock or member file
//   if (!MayBeAlive(*ProcessIdentity::FromJson(json))) { ... it died: its lock is stale ... }
//
// A pid alone is not an identity: pids are reused, and the same pid runs on every host of a
// cluster. The identity is the host name, the pid and a start token: the boot id of the
// machine and the process's start time in clock ticks since boot (/proc/<pid>/stat), which
// differ for a later process that got the same pid, and after a reboot. Only a process on this
// host can be checked; one on another host may be alive as far as this host can tell.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/identity.h"  // HostName()

namespace upguard {

struct ProcessIdentity {
  int64_t pid = 0;
  std::string host;
  std::string start;  // "<boot id>:<start ticks>"; "" when /proc could not tell

  nlohmann::json ToJson() const;
  // Absent when `json` lacks a field or has one of the wrong type.
  static std::optional<ProcessIdentity> FromJson(const nlohmann::json& json);
  // "pid 1234 on host node-3".
  std::string Describe() const;
};

ProcessIdentity ThisProcess();
// False only when `process` is known not to run: it ran on this host, and its pid is gone or
// now belongs to a process that started at another time (or the machine rebooted since).
bool MayBeAlive(const ProcessIdentity& process);
// Whether `process` ran on this host (its liveness can be checked here).
bool OnThisHost(const ProcessIdentity& process);

}  // namespace upguard

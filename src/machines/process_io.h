// The disk bytes a cgroup's processes move, for `upguard machines agent --cgroup`: the sum of
// /proc/PID/io `read_bytes` and `write_bytes` over the processes in the cgroup (cgroup.procs of
// the cpuacct controller's cgroup and of the cgroups below it).
//
// Why not the blkio controller: on this kernel (6.18, cgroup v1) blkio.io_service_bytes does not
// exist, and blkio.throttle.io_service_bytes counts nothing at all until a throttle rule has been
// set on the device once since boot; after that it counts direct I/O and the writes a process's
// own fsync sends, but not buffered writes the kernel's flusher writes back later (v1 charges
// those to the root cgroup). /proc/PID/io counts a write when its page is dirtied, in the
// process that wrote it, fsync or not; docs/machines.md has the measurement.
//
//   ASSIGN_OR_RETURN(CgroupIo a, ReadCgroupIo("/proc", "/sys/fs/cgroup/cpuacct/node-1"));
//   ... later ...
//   ProcessIo moved = IoBetween(a, b);
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "upguard/status.h"

namespace upguard::machines {

struct ProcessIo {
  uint64_t read_bytes = 0;   // fetched from storage
  uint64_t write_bytes = 0;  // sent (or dirtied, to be sent) to storage
  int parent = 0;            // the parent's process id (0 unknown)
};

using CgroupIo = std::map<int, ProcessIo>;  // per process id

// The counters of every process in `cgroup_dir` and below. NotFound when the cgroup has no
// cgroup.procs; a process that ends while read, or whose counters this user may not read, is
// left out.
StatusOr<CgroupIo> ReadCgroupIo(const std::string& proc_root, const std::string& cgroup_dir);

// The bytes moved between two readings: a process in both adds its growth, a process that
// appeared adds all its counts (it started in the interval, or joined the cgroup). A process
// that ended was reaped by its parent, and the kernel then adds the child's counts to the
// parent's: when that parent is in the cgroup, its growth less what the child had already
// counted is the child's last interval and the parent's own. A process whose parent is not in
// the cgroup takes its last interval's bytes with it.
ProcessIo IoBetween(const CgroupIo& before, const CgroupIo& after);

}  // namespace upguard::machines

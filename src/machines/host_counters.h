// One machine's counters, read from /proc and /sys the way `upguard machines agent` samples
// them every second, and the metrics two readings make (docs/machines.md, "The agent").
//
// A "machine" is the host, or a cgroup and a network namespace on it (the evaluation's machines
// are namespaces joined by veth links, each with its cgroup): /proc/net/dev is the reading
// process's namespace's, and with `cgroup` set CPU and memory are the cgroup's (v1 cpuacct and
// memory controllers) instead of the host's, and so is the disk I/O: its processes' (process_io.h).
//
//   HostSource source;                     // the host
//   ASSIGN_OR_RETURN(HostCounters a, ReadHostCounters(source, Now()));
//   ... a second later ...
//   ASSIGN_OR_RETURN(HostCounters b, ReadHostCounters(source, Now()));
//   for (const MetricValue& m : HostMetrics(a, b)) ...
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "machines/process_io.h"
#include "upguard/status.h"

namespace upguard::machines {

struct HostSource {
  std::string proc_root = "/proc";
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string cgroup;  // empty: the whole host; else the cgroup's name under each controller
};

struct NetCounters {
  uint64_t rx_bytes = 0, rx_packets = 0, tx_bytes = 0, tx_packets = 0;
  // 1: up and running (a carrier), 0: down, -1: unknown (a `proc_root` other than /proc, whose
  // interfaces this process cannot ask about). Asked of the reading process's namespace, like
  // /proc/net/dev: a link set down, or whose peer end went down, is 0.
  int link_up = -1;
};

struct HostCounters {
  double time = 0;  // seconds, any clock that only moves forward
  // CPU: busy and total jiffies of all cores (host), or the cgroup's CPU nanoseconds and the
  // number of cores (the cgroup's utilisation is its CPU time over all cores' wall time).
  uint64_t cpu_busy = 0, cpu_total = 0;
  std::optional<uint64_t> cgroup_cpu_ns;
  uint32_t cores = 1;
  uint64_t memory_used_bytes = 0;
  uint64_t context_switches = 0;
  uint64_t disk_read_bytes = 0, disk_write_bytes = 0;  // whole disks (/proc/diskstats)
  std::optional<CgroupIo> cgroup_io;       // with a cgroup: its processes' (replaces the disks')
  std::map<std::string, NetCounters> net;  // per interface, loopback left out
};

StatusOr<HostCounters> ReadHostCounters(const HostSource& source, double time);

// A metric as the agent exposes it: `name` and, for per-interface metrics, `label` (the
// interface); its CSV name is name.label (docs/formats/machine-metrics-csv.md §4).
struct MetricValue {
  std::string name;
  std::string label;
  double value = 0;
  std::string CsvName() const { return label.empty() ? name : name + "." + label; }
};

// The metrics of the interval between two readings of the same source (rates per second,
// utilisation 0-1, memory as of `after`). Counters that went backwards (a reset) give 0.
std::vector<MetricValue> HostMetrics(const HostCounters& before, const HostCounters& after);

}  // namespace upguard::machines

#include "machines/host_counters.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/file.h"

namespace upguard::machines {
namespace {

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

uint64_t ToU64(const std::string& text) { return std::strtoull(text.c_str(), nullptr, 10); }

Status ReadProcStat(const std::string& path, HostCounters* out) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::istringstream lines(text);
  bool cpu_seen = false;
  uint32_t cores = 0;
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> words = Words(line);
    if (words.empty()) continue;
    if (words[0] == "cpu" && words.size() >= 5) {
      // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
      uint64_t total = 0;
      for (size_t idx = 1; idx < words.size() && idx <= 8; ++idx) total += ToU64(words[idx]);
      const uint64_t idle = ToU64(words[4]) + (words.size() > 5 ? ToU64(words[5]) : 0);
      out->cpu_total = total;
      out->cpu_busy = total - std::min(total, idle);
      cpu_seen = true;
    } else if (words[0].rfind("cpu", 0) == 0) {
      ++cores;
    } else if (words[0] == "ctxt" && words.size() >= 2) {
      out->context_switches = ToU64(words[1]);
    }
  }
  if (!cpu_seen) return DataLoss(path + ": no \"cpu\" line; is this a Linux /proc?");
  out->cores = std::max<uint32_t>(cores, 1);
  return Status::Ok();
}

Status ReadMeminfo(const std::string& path, HostCounters* out) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::istringstream lines(text);
  uint64_t total = 0, available = 0;
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> words = Words(line);
    if (words.size() < 2) continue;
    if (words[0] == "MemTotal:") total = ToU64(words[1]) * 1024;
    if (words[0] == "MemAvailable:") available = ToU64(words[1]) * 1024;
  }
  if (total == 0) return DataLoss(path + ": no MemTotal line");
  out->memory_used_bytes = total - std::min(total, available);
  return Status::Ok();
}

// 1 when `name` is up and running in this process's network namespace, 0 when not, -1 when
// it cannot be asked.
int LinkUp(const std::string& name) {
  if (name.size() >= IFNAMSIZ) return -1;
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct ifreq request {};
  std::memcpy(request.ifr_name, name.c_str(), name.size());
  const int got = ioctl(fd, SIOCGIFFLAGS, &request);
  close(fd);
  if (got != 0) return -1;
  return (request.ifr_flags & IFF_UP) && (request.ifr_flags & IFF_RUNNING) ? 1 : 0;
}

Status ReadNetDev(const std::string& path, bool live, HostCounters* out) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;  // the two header lines
    std::vector<std::string> name = Words(line.substr(0, colon));
    const std::vector<std::string> fields = Words(line.substr(colon + 1));
    if (name.size() != 1 || fields.size() < 10 || name[0] == "lo") continue;
    out->net[name[0]] = NetCounters{ToU64(fields[0]), ToU64(fields[1]), ToU64(fields[8]),
                                    ToU64(fields[9]), live ? LinkUp(name[0]) : -1};
  }
  return Status::Ok();
}

// Whole disks only (a partition's bytes are its disk's too): a device is a whole disk when
// /proc/diskstats' name has no partition suffix the kernel gives its partitions (sda1, vda2,
// nvme0n1p1); loop, ram and zram devices are left out.
bool WholeDisk(const std::string& name) {
  for (const char* skip : {"loop", "ram", "zram", "dm-", "md"}) {
    if (name.rfind(skip, 0) == 0) return false;
  }
  if (name.rfind("nvme", 0) == 0) return name.find('p', 4) == std::string::npos;
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name.back()));
}

Status ReadDiskstats(const std::string& path, HostCounters* out) {
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return Status::Ok();  // no block devices (a container): no disk metrics
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> words = Words(line);
    // major minor name reads merged sectors_read ms writes merged sectors_written ...
    if (words.size() < 10 || !WholeDisk(words[2])) continue;
    out->disk_read_bytes += ToU64(words[5]) * 512;
    out->disk_write_bytes += ToU64(words[9]) * 512;
  }
  return Status::Ok();
}

StatusOr<uint64_t> ReadCounterFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const std::vector<std::string> words = Words(text);
  if (words.empty()) return DataLoss(path + ": empty");
  return ToU64(words[0]);
}

double Rate(uint64_t before, uint64_t after, double seconds) {
  if (after < before || seconds <= 0) return 0;
  return static_cast<double>(after - before) / seconds;
}

}  // namespace

StatusOr<HostCounters> ReadHostCounters(const HostSource& source, double time) {
  HostCounters out;
  out.time = time;
  RETURN_IF_ERROR(ReadProcStat(source.proc_root + "/stat", &out));
  RETURN_IF_ERROR(ReadNetDev(source.proc_root + "/net/dev", source.proc_root == "/proc", &out));
  RETURN_IF_ERROR(ReadDiskstats(source.proc_root + "/diskstats", &out));
  if (source.cgroup.empty()) {
    RETURN_IF_ERROR(ReadMeminfo(source.proc_root + "/meminfo", &out));
    return out;
  }
  const std::string hint = " (is the cgroup v1 controller mounted and the cgroup made?)";
  StatusOr<uint64_t> cpu =
      ReadCounterFile(source.cgroup_root + "/cpuacct/" + source.cgroup + "/cpuacct.usage");
  if (!cpu.ok()) return NotFound(cpu.status().message() + hint);
  StatusOr<uint64_t> memory =
      ReadCounterFile(source.cgroup_root + "/memory/" + source.cgroup + "/memory.usage_in_bytes");
  if (!memory.ok()) return NotFound(memory.status().message() + hint);
  out.cgroup_cpu_ns = *cpu;
  out.memory_used_bytes = *memory;
  StatusOr<CgroupIo> io =
      ReadCgroupIo(source.proc_root, source.cgroup_root + "/cpuacct/" + source.cgroup);
  if (!io.ok()) return NotFound(io.status().message() + hint);
  out.cgroup_io = std::move(*io);
  return out;
}

std::vector<MetricValue> HostMetrics(const HostCounters& before, const HostCounters& after) {
  const double seconds = after.time - before.time;
  std::vector<MetricValue> out;
  double cpu = 0;
  if (after.cgroup_cpu_ns && before.cgroup_cpu_ns) {
    cpu = Rate(*before.cgroup_cpu_ns, *after.cgroup_cpu_ns, seconds) / 1e9 / after.cores;
  } else if (after.cpu_total > before.cpu_total) {
    cpu = static_cast<double>(after.cpu_busy - std::min(after.cpu_busy, before.cpu_busy)) /
          static_cast<double>(after.cpu_total - before.cpu_total);
  }
  out.push_back({"cpu_utilization", "", std::clamp(cpu, 0.0, 1.0)});
  out.push_back({"memory_used_bytes", "", static_cast<double>(after.memory_used_bytes)});
  if (!after.cgroup_cpu_ns) {  // the host's count is no cgroup's: every machine would share it
    out.push_back({"context_switches_per_second", "",
                   Rate(before.context_switches, after.context_switches, seconds)});
  }
  if (before.cgroup_io && after.cgroup_io) {
    const ProcessIo moved = IoBetween(*before.cgroup_io, *after.cgroup_io);
    out.push_back({"disk_read_bytes_per_second", "", Rate(0, moved.read_bytes, seconds)});
    out.push_back({"disk_write_bytes_per_second", "", Rate(0, moved.write_bytes, seconds)});
  } else {
    out.push_back({"disk_read_bytes_per_second", "",
                   Rate(before.disk_read_bytes, after.disk_read_bytes, seconds)});
    out.push_back({"disk_write_bytes_per_second", "",
                   Rate(before.disk_write_bytes, after.disk_write_bytes, seconds)});
  }
  for (const auto& [name, now] : after.net) {
    auto was = before.net.find(name);
    if (was == before.net.end()) continue;  // an interface that just appeared: next time
    const NetCounters& then = was->second;
    out.push_back(
        {"network_receive_bytes_per_second", name, Rate(then.rx_bytes, now.rx_bytes, seconds)});
    out.push_back(
        {"network_transmit_bytes_per_second", name, Rate(then.tx_bytes, now.tx_bytes, seconds)});
    out.push_back({"network_receive_packets_per_second", name,
                   Rate(then.rx_packets, now.rx_packets, seconds)});
    out.push_back({"network_transmit_packets_per_second", name,
                   Rate(then.tx_packets, now.tx_packets, seconds)});
    if (now.link_up >= 0)
      out.push_back({"network_link_up", name, static_cast<double>(now.link_up)});
  }
  return out;
}

}  // namespace upguard::machines

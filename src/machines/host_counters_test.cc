#include "machines/host_counters.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace upguard::machines {
namespace {

namespace fs = std::filesystem;

class FakeHost {
 public:
  FakeHost() : root_(fs::temp_directory_path() / ("upguard_host_" + std::to_string(getpid()))) {
    fs::create_directories(root_ / "proc/net");
    fs::create_directories(root_ / "cg/cpuacct/node-1");
    fs::create_directories(root_ / "cg/memory/node-1");
    Write("cg/cpuacct/node-1/cgroup.procs", "");
  }
  ~FakeHost() { fs::remove_all(root_); }

  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(root_ / rel) << text;
  }
  // A reading: cpu jiffies (user, idle), context switches, eth0 bytes/packets, vda sectors.
  void Set(uint64_t user, uint64_t idle, uint64_t ctxt, uint64_t rx, uint64_t tx,
           uint64_t sectors_read) {
    Write("proc/stat", "cpu  " + std::to_string(user) + " 0 0 " + std::to_string(idle) +
                           " 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0 0 0\n"
                           "intr 5\nctxt " +
                           std::to_string(ctxt) + "\n");
    Write("proc/meminfo", "MemTotal:       1000 kB\nMemFree:   10 kB\nMemAvailable:    400 kB\n");
    Write("proc/net/dev",
          "Inter-|   Receive |  Transmit\n face |bytes packets ...\n"
          "    lo: 99 9 0 0 0 0 0 0 99 9 0 0 0 0 0 0\n"
          "  eth0: " +
              std::to_string(rx) + " 10 0 0 0 0 0 0 " + std::to_string(tx) + " 20 0 0 0 0 0 0\n");
    Write("proc/diskstats",
          "   7 0 loop0 5 0 800 0 0 0 800 0 0 0 0\n"
          " 254 0 vda 5 0 " +
              std::to_string(sectors_read) +
              " 0 0 0 16 0 0 0 0\n"
              " 254 1 vda1 5 0 " +
              std::to_string(sectors_read) + " 0 0 0 16 0 0 0 0\n");
  }
  fs::path Path(const std::string& rel) const { return root_ / rel; }
  HostSource Source() const {
    HostSource source;
    source.proc_root = (root_ / "proc").string();
    source.cgroup_root = (root_ / "cg").string();
    return source;
  }

 private:
  fs::path root_;
};

double Value(const std::vector<MetricValue>& metrics, const std::string& csv_name) {
  for (const MetricValue& m : metrics) {
    if (m.CsvName() == csv_name) return m.value;
  }
  ADD_FAILURE() << "no metric " << csv_name;
  return -1;
}

TEST(HostCountersTest, RatesBetweenTwoReadings) {
  FakeHost host;
  host.Set(100, 300, 1000, 5000, 7000, 8);
  StatusOr<HostCounters> a = ReadHostCounters(host.Source(), 10.0);
  ASSERT_TRUE(a.ok()) << a.status().message();
  host.Set(175, 325, 3000, 9000, 7000, 16);  // 75 of 100 jiffies busy; 2 s later
  StatusOr<HostCounters> b = ReadHostCounters(host.Source(), 12.0);
  ASSERT_TRUE(b.ok());
  const std::vector<MetricValue> m = HostMetrics(*a, *b);
  EXPECT_DOUBLE_EQ(Value(m, "cpu_utilization"), 0.75);
  EXPECT_DOUBLE_EQ(Value(m, "memory_used_bytes"), 600 * 1024);
  EXPECT_DOUBLE_EQ(Value(m, "context_switches_per_second"), 1000);
  EXPECT_DOUBLE_EQ(Value(m, "network_receive_bytes_per_second.eth0"), 2000);
  EXPECT_DOUBLE_EQ(Value(m, "network_transmit_bytes_per_second.eth0"), 0);
  EXPECT_DOUBLE_EQ(Value(m, "disk_read_bytes_per_second"), 8 * 512 / 2.0);  // vda, not vda1
  for (const MetricValue& metric : m) EXPECT_NE(metric.label, "lo");
  EXPECT_EQ(b->cores, 2u);
}

TEST(HostCountersTest, CgroupCpuAndMemory) {
  FakeHost host;
  host.Set(100, 300, 1000, 5000, 7000, 8);
  HostSource source = host.Source();
  source.cgroup = "node-1";
  host.Write("cg/cpuacct/node-1/cpuacct.usage", "1000000000\n");
  host.Write("cg/memory/node-1/memory.usage_in_bytes", "123456\n");
  StatusOr<HostCounters> a = ReadHostCounters(source, 0.0);
  ASSERT_TRUE(a.ok()) << a.status().message();
  host.Write("cg/cpuacct/node-1/cpuacct.usage", "2000000000\n");  // 1 CPU-second in 1 s
  StatusOr<HostCounters> b = ReadHostCounters(source, 1.0);
  ASSERT_TRUE(b.ok());
  const std::vector<MetricValue> m = HostMetrics(*a, *b);
  EXPECT_DOUBLE_EQ(Value(m, "cpu_utilization"), 0.5);  // of 2 cores
  EXPECT_DOUBLE_EQ(Value(m, "memory_used_bytes"), 123456);
  for (const MetricValue& value : m) EXPECT_NE(value.name, "context_switches_per_second");
  source.cgroup = "missing";
  StatusOr<HostCounters> bad = ReadHostCounters(source, 2.0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cgroup v1"), std::string::npos);
}

// With a cgroup the disk I/O is its processes' (process_io.h): node-1 holds process 11 and,
// in a cgroup below it, 12; 13 is another machine's writer. The whole disk sees all three.
TEST(HostCountersTest, CgroupDiskIoIsItsProcesses) {
  FakeHost host;
  HostSource source = host.Source();
  source.cgroup = "node-1";
  host.Write("cg/cpuacct/node-1/cpuacct.usage", "0\n");
  host.Write("cg/memory/node-1/memory.usage_in_bytes", "0\n");
  host.Write("cg/cpuacct/node-1/cgroup.procs", "11\n");
  fs::create_directories(host.Path("cg/cpuacct/node-1/workers"));
  host.Write("cg/cpuacct/node-1/workers/cgroup.procs", "12\n");
  auto process = [&](int pid, uint64_t read, uint64_t written) {
    fs::create_directories(host.Path("proc/" + std::to_string(pid)));
    host.Write("proc/" + std::to_string(pid) + "/io",
               "rchar: 999\nwchar: 999\nread_bytes: " + std::to_string(read) +
                   "\nwrite_bytes: " + std::to_string(written) + "\ncancelled_write_bytes: 0\n");
  };
  host.Set(100, 300, 1000, 5000, 7000, 0);
  for (int pid : {11, 12, 13}) process(pid, 0, 0);
  StatusOr<HostCounters> a = ReadHostCounters(source, 10.0);
  StatusOr<HostCounters> host_a = ReadHostCounters(host.Source(), 10.0);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(host_a.ok()) << host_a.status().message();
  ASSERT_EQ(a->cgroup_io->size(), 2u);  // 11 and 12
  // 2 s later: node-1's 12 read 4 KiB and wrote 8 MiB; 13 wrote 64 MiB; the disk read 8 MiB.
  process(12, 4096, 8 << 20);
  process(13, 0, 64 << 20);
  host.Set(100, 300, 1000, 5000, 7000, (8 << 20) / 512);
  StatusOr<HostCounters> b = ReadHostCounters(source, 12.0);
  StatusOr<HostCounters> host_b = ReadHostCounters(host.Source(), 12.0);
  ASSERT_TRUE(b.ok() && host_b.ok());
  const std::vector<MetricValue> machine = HostMetrics(*a, *b);
  EXPECT_DOUBLE_EQ(Value(machine, "disk_write_bytes_per_second"), (8 << 20) / 2.0);
  EXPECT_DOUBLE_EQ(Value(machine, "disk_read_bytes_per_second"), 4096 / 2.0);
  EXPECT_DOUBLE_EQ(Value(HostMetrics(*host_a, *host_b), "disk_read_bytes_per_second"),
                   (8 << 20) / 2.0);
  fs::remove(host.Path("cg/cpuacct/node-1/cgroup.procs"));
  EXPECT_FALSE(ReadHostCounters(source, 14.0).ok());  // not a cgroup: named, not zero
}

TEST(HostCountersTest, ReadsThisMachine) {
  StatusOr<HostCounters> now = ReadHostCounters(HostSource{}, 0.0);
  ASSERT_TRUE(now.ok()) << now.status().message();
  EXPECT_GT(now->cpu_total, 0u);
  EXPECT_GT(now->memory_used_bytes, 0u);
  for (const auto& [name, counters] : now->net) {
    EXPECT_TRUE(counters.link_up == 0 || counters.link_up == 1) << name << " " << counters.link_up;
  }
}

}  // namespace
}  // namespace upguard::machines

#include "machines/exposition.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "machines/http_server.h"

namespace upguard::machines {
namespace {

TEST(ExpositionTest, GaugesWithMachineAndInterfaceLabels) {
  const std::vector<MetricValue> metrics = {
      {"cpu_utilization", "", 0.5},
      {"network_receive_bytes_per_second", "eth0", 2000},
      {"network_receive_bytes_per_second", "veth\"1", 1.25},
  };
  EXPECT_EQ(RenderExposition("node-0", metrics),
            "# TYPE upguard_cpu_utilization gauge\n"
            "upguard_cpu_utilization{machine=\"node-0\"} 0.5\n"
            "# TYPE upguard_network_receive_bytes_per_second gauge\n"
            "upguard_network_receive_bytes_per_second{machine=\"node-0\",interface=\"eth0\"} 2000\n"
            "upguard_network_receive_bytes_per_second{machine=\"node-0\",interface=\"veth\\\"1\"} "
            "1.25\n");
  EXPECT_EQ(MetricFromSeries("upguard_network_receive_bytes_per_second", "eth0"),
            "network_receive_bytes_per_second.eth0");
  EXPECT_EQ(MetricFromSeries("upguard_cpu_utilization", ""), "cpu_utilization");
  EXPECT_EQ(MetricFromSeries("node_cpu_seconds_total", ""), "");
}

std::string Get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  send(fd, request.data(), request.size(), 0);
  std::string response;
  char buf[512];
  for (ssize_t got; (got = read(fd, buf, sizeof(buf))) > 0;) response.append(buf, got);
  close(fd);
  return response;
}

TEST(MetricsServerTest, ServesWhatWasPublishedOnMetricsOnly) {
  MetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);
  server.Publish("upguard_cpu_utilization{machine=\"a\"} 0.5\n");
  const std::string ok = Get(server.port(), "/metrics");
  EXPECT_EQ(ok.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("\r\n\r\nupguard_cpu_utilization{machine=\"a\"} 0.5\n"), std::string::npos);
  EXPECT_EQ(Get(server.port(), "/").rfind("HTTP/1.0 404", 0), 0u);
  MetricsServer second;  // the same port is taken: the error says how to pick another
  const Status taken = second.Start("127.0.0.1:" + std::to_string(server.port()));
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.message().find("--listen"), std::string::npos);
  server.Stop();
  EXPECT_FALSE(MetricsServer().Start("localhost:9400").ok());  // IPv4 addresses only
}

}  // namespace
}  // namespace upguard::machines

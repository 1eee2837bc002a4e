#include "machines/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "machines/http_client.h"

namespace upguard::machines {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A client socket connected to 127.0.0.1:port whose reads give up after `timeout` seconds.
int Connect(int port, double timeout = 3) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval tv{static_cast<time_t>(timeout),
             static_cast<suseconds_t>((timeout - static_cast<int>(timeout)) * 1e6)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Everything the server sends until it closes (or the read times out).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t got; (got = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, got);
  return out;
}

void Send(int fd, const std::string& text) {
  ASSERT_EQ(send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

StatusOr<HttpResponse> Scrape(int port) {
  StatusOr<HttpUrl> url = ParseHttpUrl("http://127.0.0.1:" + std::to_string(port));
  if (!url.ok()) return url.status();
  return HttpGet(*url, "/metrics", 3);
}

constexpr char kBody[] = "upguard_cpu_utilization{machine=\"a\"} 0.5\n";

// A server on a free loopback port that serves kBody.
std::unique_ptr<MetricsServer> Serving(const ServerLimits& limits) {
  auto server = std::make_unique<MetricsServer>();
  EXPECT_TRUE(server->Start("127.0.0.1:0", limits).ok());
  server->Publish(kBody);
  return server;
}

// Sends `request` on a new connection and returns what came back until the server closed.
std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  Send(fd, request);
  std::string reply = ReadAll(fd);
  close(fd);
  return reply;
}

// A client that dribbles its request holds its own connection only: scrapes beside it are
// answered at once, and it gets 408 when its head's time is up.
TEST(MetricsServerTest, SlowClientsHoldOnlyTheirOwnConnection) {
  ServerLimits limits;
  limits.head_seconds = 0.6;
  const std::unique_ptr<MetricsServer> server = Serving(limits);
  std::vector<int> slow;
  for (int client = 0; client < 3; ++client) {
    slow.push_back(Connect(server->port()));
    Send(slow.back(), "GET /metr");
  }
  const double started = Now();
  std::vector<std::thread> scrapers;
  std::atomic<int> answered{0};
  for (int scraper = 0; scraper < 8; ++scraper) {
    scrapers.emplace_back([&] {
      StatusOr<HttpResponse> reply = Scrape(server->port());
      if (reply.ok() && reply->status == 200 && reply->body == kBody) ++answered;
    });
  }
  for (std::thread& scraper : scrapers) scraper.join();
  EXPECT_EQ(answered, 8);
  EXPECT_LT(Now() - started, 0.5);  // before any slow client's time is up
  for (int fd : slow) {
    const std::string reply = ReadAll(fd);
    EXPECT_EQ(reply.rfind("HTTP/1.0 408 Request Timeout\r\n", 0), 0u) << reply;
    close(fd);
  }
  const double waited = Now() - started;
  EXPECT_GT(waited, 0.5);
  EXPECT_LT(waited, 1.5);
}

TEST(MetricsServerTest, RequestsAreBoundedInSizeAndMethod) {
  ServerLimits limits;
  limits.max_head_bytes = 1024;
  const std::unique_ptr<MetricsServer> server = Serving(limits);
  std::string reply =
      Exchange(server->port(), "GET /metrics HTTP/1.1\r\nX-Padding: " + std::string(2000, 'a'));
  EXPECT_EQ(reply.rfind("HTTP/1.0 431 ", 0), 0u) << reply;
  const std::string head = "GET /metrics HTTP/1.0\nX: ";  // just under the cap, bare line ends
  reply = Exchange(server->port(), head + std::string(1024 - head.size() - 2, 'a') + "\n\n");
  EXPECT_EQ(reply.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << reply;
  EXPECT_NE(reply.find(std::string("\r\n\r\n") + kBody), std::string::npos);
  reply = Exchange(server->port(), "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(reply.rfind("HTTP/1.0 405 ", 0), 0u) << reply;
  EXPECT_NE(reply.find("Allow: GET\r\n"), std::string::npos);
}

TEST(MetricsServerTest, ConnectionsPastTheCapAreTurnedAway) {
  ServerLimits limits;
  limits.max_connections = 2;
  const std::unique_ptr<MetricsServer> server = Serving(limits);
  const int first = Connect(server->port());
  const int second = Connect(server->port());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // both accepted
  const int third = Connect(server->port());
  const std::string busy = ReadAll(third);
  EXPECT_EQ(busy.rfind("HTTP/1.0 503 ", 0), 0u) << busy;
  close(third);
  close(first);  // a slot frees: scrapes are served again
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  StatusOr<HttpResponse> reply = Scrape(server->port());
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_EQ(reply->status, 200);
  close(second);
}

// Stop() does not wait for a client that keeps sending (today's server waited for its request
// to end: a byte a second kept it an hour).
TEST(MetricsServerTest, StopReturnsAtOnceWhileAClientDribbles) {
  MetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  const int fd = Connect(server.port());
  std::atomic<bool> done{false};
  std::thread dribbler([&] {
    for (int byte = 0; byte < 40 && !done; ++byte) {
      send(fd, "G", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double started = Now();
  server.Stop();
  EXPECT_LT(Now() - started, 0.2);
  done = true;
  dribbler.join();
  close(fd);
}

TEST(MetricsServerTest, ListensOnLoopbackUnlessToldAndSaysWhere) {
  for (const char* listen : {":0", "0", "127.0.0.1:0"}) {
    MetricsServer server;
    ASSERT_TRUE(server.Start(listen).ok()) << listen;
    EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port())) << listen;
  }
  MetricsServer everywhere;
  ASSERT_TRUE(everywhere.Start("0.0.0.0:0").ok());
  EXPECT_EQ(everywhere.address(), "0.0.0.0:" + std::to_string(everywhere.port()));
  for (const char* bad : {"", "localhost:9400", "1.2.3:80", ":99999", "127.0.0.1:x"}) {
    const Status status = MetricsServer().Start(bad);
    EXPECT_FALSE(status.ok()) << bad;
    EXPECT_NE(status.message().find("--listen"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace upguard::machines

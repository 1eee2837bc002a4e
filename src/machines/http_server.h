// A minimal HTTP/1.0 server for the agent's /metrics: GET only, one request a connection.
// Prometheus scrapes it; nothing else is served (404).
//
//   MetricsServer server;
//   RETURN_IF_ERROR(server.Start("127.0.0.1:9400"));
//   server.Publish(RenderExposition(...));   // what the next scrape gets
//   ...
//   server.Stop();
//
// One thread polls the listening socket and every open connection, so a client that is slow
// (or hostile: a byte every second) holds only its own connection, never the scrapes beside it.
// Each connection is a small state machine: it reads the request head until the blank line, at
// most `max_head_bytes` (431 past it) and for at most `head_seconds` from its accept (408 after);
// then it sends the answer within `answer_seconds`, half-closes and drains what the client still
// sends for a moment, so the answer is not lost to a reset. Past `max_connections` open at once
// a new client gets 503 at once. Stop() wakes the thread through a pipe and returns at once.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

#include "upguard/status.h"

namespace upguard::machines {

struct ServerLimits {
  double head_seconds = 5;    // the whole request head, from the accept
  double answer_seconds = 5;  // sending the answer
  size_t max_head_bytes = 8192;
  size_t max_connections = 64;
};

class MetricsServer {
 public:
  MetricsServer() = default;
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  ~MetricsServer() { Stop(); }

  // `listen`: "HOST:PORT" with HOST an IPv4 address, or ":PORT" / "PORT" for 127.0.0.1 (only
  // this machine: every interface is "0.0.0.0:PORT", said explicitly). Port 0 picks a free one.
  Status Start(const std::string& listen, const ServerLimits& limits = {});
  void Publish(std::string body);
  void Stop();
  int port() const { return port_; }
  // Where it listens, as bound: "127.0.0.1:9400", "0.0.0.0:43817".
  const std::string& address() const { return address_; }

 private:
  struct Connection;  // one client's state (http_server.cc)

  void Serve();
  void Advance(Connection* connection, short events, double now);  // after poll
  std::string Answer(const std::string& head);

  ServerLimits limits_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};  // Stop() writes a byte to [1]; Serve() polls [0]
  int port_ = 0;
  std::string address_;
  std::thread thread_;
  std::mutex mu_;
  std::string body_;
};

}  // namespace upguard::machines

// A minimal HTTP/1.0 server for the agent's /metrics: one thread, one request a connection,
// GET only. Prometheus scrapes it; nothing else is served (404).
//
//   MetricsServer server;
//   RETURN_IF_ERROR(server.Start("127.0.0.1:9400"));
//   server.Publish(RenderExposition(...));   // what the next scrape gets
//   ...
//   server.Stop();
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "upguard/status.h"

namespace upguard::machines {

class MetricsServer {
 public:
  MetricsServer() = default;
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  ~MetricsServer() { Stop(); }

  // `listen`: "HOST:PORT" (an IPv4 address; port 0 picks a free one, see port()).
  Status Start(const std::string& listen);
  void Publish(std::string body);
  void Stop();
  int port() const { return port_; }

 private:
  void Serve();

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::string body_;
};

}  // namespace upguard::machines

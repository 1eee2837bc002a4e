#include "machines/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace upguard::machines {

Status MetricsServer::Start(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgument("--listen \"" + listen + "\": expected HOST:PORT (127.0.0.1:9400)");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  const std::string host = listen.substr(0, colon);
  if (inet_pton(AF_INET, host.empty() ? "0.0.0.0" : host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgument("--listen \"" + listen + "\": \"" + host + "\" is not an IPv4 address");
  }
  char* end = nullptr;
  const long port = std::strtol(listen.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) {
    return InvalidArgument("--listen \"" + listen + "\": the port must be 0..65535");
  }
  addr.sin_port = htons(static_cast<uint16_t>(port));
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return IoError(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd_, 16) != 0) {
    const std::string error = std::strerror(errno);
    close(fd_);
    fd_ = -1;
    return IoError("cannot listen on " + listen + ": " + error +
                   " (another agent on that port? pick another with --listen)");
  }
  socklen_t len = sizeof(addr);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  stop_ = false;
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void MetricsServer::Publish(std::string body) {
  std::lock_guard<std::mutex> lock(mu_);
  body_ = std::move(body);
}

void MetricsServer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void MetricsServer::Serve() {
  while (!stop_) {
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    // The request line is all that matters; read until the headers end (or 4 KiB, 1 s).
    std::string request;
    char buf[1024];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 4096) {
      pollfd cfd{client, POLLIN, 0};
      if (poll(&cfd, 1, 1000) <= 0) break;
      const ssize_t got = read(client, buf, sizeof(buf));
      if (got <= 0) break;
      request.append(buf, static_cast<size_t>(got));
    }
    std::string status = "404 Not Found";
    std::string body = "upguard machines agent: GET /metrics\n";
    std::string type = "text/plain";
    if (request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0) {
      std::lock_guard<std::mutex> lock(mu_);
      status = "200 OK";
      body = body_;
      type = "text/plain; version=0.0.4";
    }
    const std::string response = "HTTP/1.0 " + status + "\r\nContent-Type: " + type +
                                 "\r\nContent-Length: " + std::to_string(body.size()) +
                                 "\r\nConnection: close\r\n\r\n" + body;
    size_t sent = 0;
    while (sent < response.size()) {
      const ssize_t put =
          send(client, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
      if (put <= 0) break;
      sent += static_cast<size_t>(put);
    }
    close(client);
  }
}

}  // namespace upguard::machines

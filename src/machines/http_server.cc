#include "machines/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace upguard::machines {
namespace {

constexpr double kDrainSeconds = 0.5;  // after the answer: what the client still sends, dropped

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "HOST:PORT", ":PORT" or "PORT" (HOST 127.0.0.1) into `addr`.
Status ParseListen(const std::string& listen, sockaddr_in* addr) {
  const size_t colon = listen.rfind(':');
  const std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? listen : listen.substr(colon + 1);
  *addr = sockaddr_in{};
  addr->sin_family = AF_INET;
  if (inet_pton(AF_INET, host.empty() ? "127.0.0.1" : host.c_str(), &addr->sin_addr) != 1) {
    return InvalidArgument("--listen \"" + listen + "\": \"" + host +
                           "\" is not an IPv4 address (127.0.0.1, or 0.0.0.0 for every "
                           "interface)");
  }
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535) {
    return InvalidArgument("--listen \"" + listen +
                           "\": expected HOST:PORT or PORT with a port 0..65535 "
                           "(127.0.0.1:9400)");
  }
  addr->sin_port = htons(static_cast<uint16_t>(port));
  return Status::Ok();
}

std::string Reply(const std::string& status, const std::string& type, const std::string& body,
                  const std::string& extra_headers = "") {
  return "HTTP/1.0 " + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers +
         "Connection: close\r\n\r\n" + body;
}

std::string Refusal(const std::string& status, const std::string& why) {
  return Reply(status, "text/plain", "upguard machines agent: " + why + "\n");
}

// Where the head ends (just past its blank line), or npos. Bare "\n" line ends are taken too.
size_t HeadEnd(const std::string& in) {
  const size_t crlf = in.find("\r\n\r\n");
  const size_t lf = in.find("\n\n");
  if (crlf == std::string::npos && lf == std::string::npos) return std::string::npos;
  return crlf < lf ? crlf + 4 : lf + 2;
}

std::string Seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

enum class Phase : uint8_t {
  kReading,    // the request head
  kAnswering,  // sending `out`
  kDraining,   // answer sent and write side shut: reading until the client closes
  kDone,       // to be closed
};

}  // namespace

struct MetricsServer::Connection {
  int fd = -1;
  Phase phase = Phase::kReading;
  double deadline = 0;  // of the current phase
  std::string in;
  std::string out;
  size_t sent = 0;
};

Status MetricsServer::Start(const std::string& listen, const ServerLimits& limits) {
  limits_ = limits;
  sockaddr_in addr{};
  RETURN_IF_ERROR(ParseListen(listen, &addr));
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return IoError(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd_, 64) != 0 ||
      pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    const std::string error = std::strerror(errno);
    Stop();
    return IoError("cannot listen on " + listen + ": " + error +
                   " (another agent on that port? pick another with --listen)");
  }
  socklen_t len = sizeof(addr);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  char host[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &addr.sin_addr, host, sizeof(host));
  port_ = ntohs(addr.sin_port);
  address_ = std::string(host) + ":" + std::to_string(port_);
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void MetricsServer::Publish(std::string body) {
  std::lock_guard<std::mutex> lock(mu_);
  body_ = std::move(body);
}

void MetricsServer::Stop() {
  if (thread_.joinable()) {
    const char byte = 1;
    while (write(wake_[1], &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  for (int* fd : {&fd_, &wake_[0], &wake_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

std::string MetricsServer::Answer(const std::string& head) {
  const size_t line_end = head.find_first_of("\r\n");
  const std::string line = head.substr(0, line_end);
  const size_t space = line.find(' ');
  const std::string method = line.substr(0, space);
  const std::string target = space == std::string::npos
                                 ? ""
                                 : line.substr(space + 1, line.find(' ', space + 1) - space - 1);
  if (method != "GET") {
    return Reply("405 Method Not Allowed", "text/plain", "upguard machines agent: GET /metrics\n",
                 "Allow: GET\r\n");
  }
  if (target != "/metrics" && target.rfind("/metrics?", 0) != 0) {
    return Refusal("404 Not Found", "GET /metrics");
  }
  std::lock_guard<std::mutex> lock(mu_);
  return Reply("200 OK", "text/plain; version=0.0.4", body_);
}

void MetricsServer::Advance(Connection* c, short events, double now) {
  const auto answer = [&](std::string out) {
    c->out = std::move(out);
    c->phase = Phase::kAnswering;
    c->deadline = now + limits_.answer_seconds;
  };
  const auto failed = [](ssize_t result) {
    return result == 0 || (result < 0 && errno != EAGAIN && errno != EINTR);
  };
  char buf[4096];
  if (c->phase == Phase::kReading && events != 0) {
    // In this phase c->in holds at most max_head_bytes: one byte more is a 431.
    const size_t room = limits_.max_head_bytes + 1 - c->in.size();
    const ssize_t got = read(c->fd, buf, std::min(sizeof(buf), room));
    if (got > 0) c->in.append(buf, static_cast<size_t>(got));
    const size_t end = HeadEnd(c->in);
    if (end != std::string::npos && end <= limits_.max_head_bytes) {
      answer(Answer(c->in.substr(0, end)));
    } else if (c->in.size() > limits_.max_head_bytes) {
      answer(
          Refusal("431 Request Header Fields Too Large",
                  "the request head is over " + std::to_string(limits_.max_head_bytes) + " bytes"));
    } else if (failed(got)) {
      c->phase = Phase::kDone;  // the client left before its request ended
    }
  } else if (c->phase == Phase::kAnswering && events != 0) {
    const ssize_t put =
        send(c->fd, c->out.data() + c->sent, c->out.size() - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (put > 0) c->sent += static_cast<size_t>(put);
    if (c->sent == c->out.size()) {
      shutdown(c->fd, SHUT_WR);
      c->phase = Phase::kDraining;
      c->deadline = now + kDrainSeconds;
    } else if (put < 0 && failed(put)) {
      c->phase = Phase::kDone;
    }
  } else if (c->phase == Phase::kDraining && events != 0) {
    if (failed(read(c->fd, buf, sizeof(buf)))) c->phase = Phase::kDone;
  }
  if (c->phase == Phase::kDone || now < c->deadline) return;
  if (c->phase == Phase::kReading) {
    answer(Refusal("408 Request Timeout",
                   "the request head took over " + Seconds(limits_.head_seconds) + " s"));
  } else {
    c->phase = Phase::kDone;  // the answer was not taken in time, or the drain is over
  }
}

void MetricsServer::Serve() {
  std::vector<Connection> connections;
  std::vector<pollfd> polled;
  for (;;) {
    double nearest = -1;
    polled.assign({{wake_[0], POLLIN, 0}, {fd_, POLLIN, 0}});
    for (const Connection& c : connections) {
      const short events = c.phase == Phase::kAnswering ? POLLOUT : POLLIN;
      polled.push_back({c.fd, events, 0});
      nearest = nearest < 0 ? c.deadline : std::min(nearest, c.deadline);
    }
    const int wait_ms =
        nearest < 0 ? -1 : static_cast<int>(std::max(0.0, nearest - Now()) * 1000) + 1;
    if (poll(polled.data(), polled.size(), wait_ms) < 0 && errno != EINTR) break;
    if (polled[0].revents != 0) break;  // Stop()
    const double now = Now();
    for (size_t idx = 0; idx < connections.size(); ++idx) {
      Advance(&connections[idx], polled[idx + 2].revents, now);
    }
    const auto done = [](const Connection& c) {
      if (c.phase != Phase::kDone) return false;
      close(c.fd);
      return true;
    };
    connections.erase(std::remove_if(connections.begin(), connections.end(), done),
                      connections.end());
    if (polled[1].revents == 0) continue;
    for (int accepted = 0; accepted < 64; ++accepted) {
      const int client = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (client < 0) break;
      if (connections.size() >= limits_.max_connections) {  // best effort: it may not read it
        const std::string busy = Refusal("503 Service Unavailable", "too many connections");
        send(client, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        close(client);
        continue;
      }
      Connection c;
      c.fd = client;
      c.deadline = now + limits_.head_seconds;
      connections.push_back(std::move(c));
    }
  }
  for (const Connection& c : connections) close(c.fd);
}

}  // namespace upguard::machines

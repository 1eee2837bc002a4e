#include "machines/http_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

namespace upguard::machines {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Milliseconds left before `deadline`, at least 0.
int MillisLeft(double deadline) {
  const double left = deadline - NowSeconds();
  return left <= 0 ? 0 : static_cast<int>(left * 1000) + 1;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

bool ParseSize(std::string_view text, int base, size_t* value) {
  if (text.empty()) return false;
  size_t out = 0;
  for (char c : text) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (base == 16 && c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (base == 16 && c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0 || out > (SIZE_MAX - static_cast<size_t>(digit)) / static_cast<size_t>(base)) {
      return false;
    }
    out = out * static_cast<size_t>(base) + static_cast<size_t>(digit);
  }
  *value = out;
  return true;
}

struct FdCloser {
  int fd = -1;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
};

// A connected socket to host:port within the deadline, trying each address getaddrinfo gives.
StatusOr<int> Connect(const HttpUrl& url, double deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  const int resolved = getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found);
  if (resolved != 0) {
    return IoError(url.text + ": cannot resolve \"" + url.host + "\": " + gai_strerror(resolved));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, freeaddrinfo);
  std::string error = "no address";
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    FdCloser closer{fd};
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      error = std::strerror(errno);
      continue;
    }
    pollfd pfd{fd, POLLOUT, 0};
    if (poll(&pfd, 1, MillisLeft(deadline)) <= 0) {
      error = "timed out";
      continue;
    }
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      error = std::strerror(so_error);
      continue;
    }
    closer.fd = -1;
    return fd;
  }
  return IoError("cannot connect to " + url.text + ": " + error +
                 " (is Prometheus running and listening there? check the host and port)");
}

}  // namespace

StatusOr<HttpUrl> ParseHttpUrl(std::string_view text) {
  HttpUrl url;
  url.text = std::string(text);
  constexpr std::string_view kScheme = "http://";
  if (text.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgument("\"" + url.text +
                           "\": only http:// URLs are read (for https, query through a local "
                           "proxy or Prometheus' own http listener)");
  }
  std::string_view rest = text.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) url.prefix = std::string(rest.substr(slash));
  while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [::1]:9090
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("\"" + url.text + "\": no ']'");
    url.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return InvalidArgument("\"" + url.text + "\": bad port");
      port = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (url.host.empty()) return InvalidArgument("\"" + url.text + "\": no host (http://HOST:PORT)");
  if (!port.empty() || authority.find(':') != std::string_view::npos) {
    size_t value = 0;
    if (!ParseSize(port, 10, &value) || value == 0 || value > 65535) {
      return InvalidArgument("\"" + url.text + "\": the port must be 1..65535");
    }
    url.port = static_cast<int>(value);
  }
  return url;
}

StatusOr<std::string> DecodeChunked(std::string_view body) {
  std::string out;
  while (true) {
    const size_t line_end = body.find("\r\n");
    if (line_end == std::string_view::npos) return DataLoss("chunked body cut short");
    std::string_view size_text = body.substr(0, line_end);
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions
    while (!size_text.empty() && size_text.back() == ' ') size_text.remove_suffix(1);
    size_t size = 0;
    if (!ParseSize(size_text, 16, &size)) {
      return DataLoss("bad chunk size \"" + std::string(size_text.substr(0, 20)) + "\"");
    }
    body.remove_prefix(line_end + 2);
    if (size == 0) return out;  // trailers, if any, are ignored
    if (body.size() < size + 2) return DataLoss("chunked body cut short");
    out.append(body.data(), size);
    body.remove_prefix(size + 2);
  }
}

StatusOr<HttpResponse> ParseHttpResponse(std::string_view raw) {
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    return DataLoss("the reply ended before its headers did (" + std::to_string(raw.size()) +
                    " bytes)");
  }
  const std::string_view head = raw.substr(0, head_end);
  std::string_view body = raw.substr(head_end + 4);
  const size_t first_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, first_end);
  size_t code = 0;
  if (status_line.substr(0, 5) != "HTTP/" || status_line.size() < 12 ||
      !ParseSize(status_line.substr(9, 3), 10, &code)) {
    return DataLoss("not an HTTP reply: \"" + std::string(status_line.substr(0, 40)) + "\"");
  }
  HttpResponse response;
  response.status = static_cast<int>(code);
  std::optional<size_t> length;
  bool chunked = false;
  std::string_view headers =
      first_end == std::string_view::npos ? std::string_view() : head.substr(first_end + 2);
  while (!headers.empty()) {
    const size_t end = headers.find("\r\n");
    const std::string_view line = headers.substr(0, end);
    headers = end == std::string_view::npos ? std::string_view() : headers.substr(end + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string name = Lower(line.substr(0, colon));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
    if (name == "transfer-encoding" && Lower(value).find("chunked") != std::string::npos) {
      chunked = true;
    }
    size_t parsed = 0;
    if (name == "content-length" && ParseSize(value, 10, &parsed)) length = parsed;
  }
  if (chunked) {
    ASSIGN_OR_RETURN(response.body, DecodeChunked(body));
  } else if (length.has_value()) {
    if (body.size() < *length) {
      return DataLoss("the body ended after " + std::to_string(body.size()) + " of " +
                      std::to_string(*length) + " bytes");
    }
    response.body = std::string(body.substr(0, *length));
  } else {
    response.body = std::string(body);
  }
  return response;
}

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    const bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (keep) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

StatusOr<HttpResponse> HttpGet(const HttpUrl& url, const std::string& target, double timeout) {
  const double deadline = NowSeconds() + timeout;
  ASSIGN_OR_RETURN(const int fd, Connect(url, deadline));
  FdCloser closer{fd};
  const bool ipv6 = url.host.find(':') != std::string::npos;
  const std::string host = ipv6 ? "[" + url.host + "]" : url.host;
  const std::string request = "GET " + url.prefix + target + " HTTP/1.1\r\nHost: " + host + ":" +
                              std::to_string(url.port) +
                              "\r\nUser-Agent: upguard\r\nAccept: application/json\r\n"
                              "Accept-Encoding: identity\r\nConnection: close\r\n\r\n";
  const std::string timed_out = url.text + ": no complete reply within " +
                                std::to_string(static_cast<int>(timeout)) +
                                " s (a very large range? narrow --start/--end or raise --step)";
  for (size_t sent = 0; sent < request.size();) {
    pollfd pfd{fd, POLLOUT, 0};
    if (poll(&pfd, 1, MillisLeft(deadline)) <= 0) return IoError(timed_out);
    const ssize_t put = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (put < 0 && errno != EAGAIN && errno != EINTR) {
      return IoError(url.text + ": sending the request: " + std::strerror(errno));
    }
    if (put > 0) sent += static_cast<size_t>(put);
  }
  std::string raw;
  char buf[65536];
  while (true) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, MillisLeft(deadline)) <= 0) return IoError(timed_out);
    const ssize_t got = recv(fd, buf, sizeof(buf), 0);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got < 0) return IoError(url.text + ": reading the reply: " + std::strerror(errno));
    if (got == 0) break;
    raw.append(buf, static_cast<size_t>(got));
  }
  StatusOr<HttpResponse> response = ParseHttpResponse(raw);
  if (!response.ok()) return DataLoss(url.text + ": " + response.status().message());
  return response;
}

}  // namespace upguard::machines

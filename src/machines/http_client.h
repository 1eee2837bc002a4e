// A minimal HTTP/1.1 GET client over POSIX sockets, enough to read Prometheus' query API:
// http:// only (no TLS), one request a connection, bodies framed by Content-Length, chunked
// transfer coding or the connection's end, and one deadline for the whole exchange.
//
//   ASSIGN_OR_RETURN(HttpUrl url, ParseHttpUrl("http://127.0.0.1:9090/prom"));
//   ASSIGN_OR_RETURN(HttpResponse reply, HttpGet(url, "/api/v1/query?query=up", 10));
//   if (reply.status != 200) ...
#pragma once

#include <string>
#include <string_view>

#include "upguard/status.h"

namespace upguard::machines {

struct HttpUrl {
  std::string host;  // a name or an IPv4/IPv6 address (brackets removed)
  int port = 80;
  std::string prefix;  // the path before the API's, no trailing '/': "" or "/prometheus"
  std::string text;    // as given, for messages
};

// "http://HOST[:PORT][/PREFIX]". Errors: another scheme (https: put a proxy in front), no host,
// a bad port.
StatusOr<HttpUrl> ParseHttpUrl(std::string_view text);

struct HttpResponse {
  int status = 0;
  std::string body;  // de-chunked
};

// GET url.prefix + `target` (a path with its query, already %-encoded). `timeout` seconds bounds
// connecting, sending and reading together. Errors (refused, timed out, malformed) name the URL.
StatusOr<HttpResponse> HttpGet(const HttpUrl& url, const std::string& target, double timeout);

// The parts HttpGet is made of, for the tests: a whole response as read off the socket until
// the peer closed, and a chunked body.
StatusOr<HttpResponse> ParseHttpResponse(std::string_view raw);
StatusOr<std::string> DecodeChunked(std::string_view body);

// `text` %-encoded for a URL's query (RFC 3986 unreserved characters kept).
std::string UrlEncode(std::string_view text);

}  // namespace upguard::machines

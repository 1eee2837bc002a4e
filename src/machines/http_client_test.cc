#include "machines/http_client.h"

#include <gtest/gtest.h>

#include <string>

#include "machines/http_server.h"

namespace upguard::machines {
namespace {

TEST(PrometheusHttpTest, ParsesUrls) {
  StatusOr<HttpUrl> url = ParseHttpUrl("http://127.0.0.1:9090/prom/");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 9090);
  EXPECT_EQ(url->prefix, "/prom");
  url = ParseHttpUrl("http://prometheus");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->port, 80);
  EXPECT_EQ(url->prefix, "");
  url = ParseHttpUrl("http://[::1]:9091");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 9091);
  EXPECT_NE(ParseHttpUrl("https://x:1").status().message().find("only http://"), std::string::npos);
  EXPECT_FALSE(ParseHttpUrl("http://:9090").ok());
  EXPECT_FALSE(ParseHttpUrl("http://host:0").ok());
  EXPECT_FALSE(ParseHttpUrl("http://host:99999").ok());
  EXPECT_FALSE(ParseHttpUrl("http://host:").ok());
}

TEST(PrometheusHttpTest, ReadsContentLengthAndChunkedBodies) {
  StatusOr<HttpResponse> reply = ParseHttpResponse(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 5\r\n\r\nhello!!");
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "hello");
  reply = ParseHttpResponse(
      "HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4;ext=1\r\n{\"a\"\r\nA\r\n:1234567}\n\r\n0\r\n\r\n");
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_EQ(reply->status, 400);
  EXPECT_EQ(reply->body, "{\"a\":1234567}\n");
  reply = ParseHttpResponse("HTTP/1.0 200 OK\r\n\r\nuntil the end");  // framed by the close
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->body, "until the end");
}

TEST(PrometheusHttpTest, NamesTruncatedReplies) {
  EXPECT_FALSE(ParseHttpResponse("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort").ok());
  EXPECT_FALSE(ParseHttpResponse("HTTP/1.1 200 OK\r\nContent-").ok());
  EXPECT_FALSE(ParseHttpResponse("SSH-2.0-OpenSSH\r\n\r\n").ok());
  EXPECT_FALSE(DecodeChunked("5\r\nab").ok());
  EXPECT_FALSE(DecodeChunked("zz\r\n").ok());
  StatusOr<std::string> whole = DecodeChunked("3\r\nabc\r\n0\r\n\r\n");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, "abc");
}

TEST(PrometheusHttpTest, EncodesQueries) {
  EXPECT_EQ(UrlEncode("{__name__=~\"upguard_.+\"}"), "%7B__name__%3D~%22upguard_.%2B%22%7D");
}

TEST(PrometheusHttpTest, GetsFromARealServerAndNamesARefusedOne) {
  MetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  server.Publish("upguard_cpu_utilization{machine=\"a\"} 0.5\n");
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  StatusOr<HttpUrl> url = ParseHttpUrl(base);
  ASSERT_TRUE(url.ok());
  StatusOr<HttpResponse> reply = HttpGet(*url, "/metrics", 10);
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "upguard_cpu_utilization{machine=\"a\"} 0.5\n");
  reply = HttpGet(*url, "/other", 10);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->status, 404);
  server.Stop();  // nothing listens on the port now
  reply = HttpGet(*url, "/metrics", 10);
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.status().message().find("cannot connect to " + base), std::string::npos)
      << reply.status().message();
}

}  // namespace
}  // namespace upguard::machines

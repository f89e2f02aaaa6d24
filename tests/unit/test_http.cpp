// The fleet exports' HTTP parsers and server against hostile peers on loopback (README "Safety"):
// a "collector" answering with a negative chunk size, a status of twenty digits, an endless head
// or body, or no HTTP at all; a URL carrying CR/LF; 200 slowloris clients on /metrics while a
// scrape must still be answered. Each peer is a tiny server in this binary on a port the kernel
// picks. The parsers' bytes-level cases are here too; fuzz/fuzz_http.cpp fuzzes the same code.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "http.h"

using namespace weave;

namespace {

// HostilePeer accepts connections on 127.0.0.1:0 and, to each, after reading its request head,
// writes `script` and then, with `endless`, `filler` over and over until the client goes away.
class HostilePeer {
public:
  HostilePeer(std::string script, std::string filler = "", bool endless = false)
      : script_(std::move(script)), filler_(std::move(filler)), endless_(endless) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
    REQUIRE(listen(fd_, 16) == 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~HostilePeer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  HttpEndpoint endpoint() const {
    HttpEndpoint to;
    std::string error;
    REQUIRE(parse_http_url("http://127.0.0.1:" + std::to_string(port_) + "/v1/traces", to, error));
    return to;
  }
  uint64_t bytes_sent() const { return sent_.load(); }

private:
  void serve() {
    while (!stop_) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0)
        return;
      std::string in;
      char buf[4096];
      while (in.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = recv(c, buf, sizeof buf, 0);
        if (n <= 0)
          break;
        in.append(buf, size_t(n));
      }
      bool ok = send_all(c, script_);
      while (ok && endless_ && !stop_)
        ok = send_all(c, filler_);
      close(c);
    }
  }
  bool send_all(int c, const std::string &data) {
    for (size_t at = 0; at < data.size();) {
      ssize_t n = send(c, data.data() + at, data.size() - at, MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      at += size_t(n);
      sent_ += uint64_t(n);
    }
    return true;
  }
  std::string script_, filler_;
  bool endless_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sent_{0};
};

HttpResponseParser parse_all(const std::string &in, size_t limit = 4096, bool close = true) {
  HttpResponseParser p(limit);
  p.feed(in.data(), in.size());
  if (close)
    p.finish();
  return p;
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("http: chunked, Content-Length, to-the-close and interim responses are parsed") {
  auto p = parse_all("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;ext=1\r\n, w\r\n0\r\n\r\n");
  REQUIRE(p.done());
  CHECK(p.body() == "hello, w");
  p = parse_all("HTTP/1.1 400 Bad Request\r\ncontent-length: 4\r\n\r\nbad!trailing junk", 4096, false);
  REQUIRE(p.done());
  CHECK(p.status() == 400);
  CHECK(p.body() == "bad!");
  p = parse_all("HTTP/1.0 503 Busy\r\n\r\ncome back later");
  REQUIRE(p.done());
  CHECK(p.status() == 503);
  CHECK(p.body() == "come back later");
  p = parse_all("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 4096, false);
  REQUIRE(p.done());
  CHECK(p.status() == 200);
  // A body past the limit is cut there, and the rest not waited for.
  p = parse_all("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + std::string(100, 'x'), 10, false);
  REQUIRE(p.done());
  CHECK(p.truncated());
  CHECK(p.body() == std::string(10, 'x'));
}

TEST_CASE("http: hostile responses fail with their reason, never loop or grow") {
  struct Case {
    std::string in, reason;
  } cases[] = {
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-4\r\nxxxx\r\n", "malformed chunk size '-4'"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+4\r\nxxxx\r\n", "malformed chunk size"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 4\r\nxxxx\r\n", "malformed chunk size"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nx", "malformed chunk size"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxxxx\r\n", "not followed by CRLF"},
      {"HTTP/1.1 99999999999999999999 OK\r\n\r\n", "has no status code"},
      {"HTTP/1.1 -1 OK\r\n\r\n", "has no status code"},
      {"HTTP/1.1 600 What\r\n\r\n", "has no status code"},
      {"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", "Content-Length '-5'"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "Content-Length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length"},
      {"HTTP/1.1 200 OK\r\nX: " + std::string(20000, 'a') + "\r\n\r\n", "longer than 16384"},
      {"HTTP/1.1 200 OK\r\n" + std::string(20000, 'a'), "longer than 16384"},
      {"SSH-2.0-OpenSSH_9.2\r\n", "not an HTTP response: it begins 'SSH-2.0-OpenSSH_9.2\\x0d\\x0a'"},
      {"", "closed without a response"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "after 3 bytes of the response body of 10"},
  };
  for (const Case &c : cases) {
    CAPTURE(c.in.substr(0, 80));
    HttpResponseParser p = parse_all(c.in);
    CHECK(p.failed());
    CHECK(p.error().find(c.reason) != std::string::npos);
    CAPTURE(p.error());
  }
}

TEST_CASE("http: a collector answering chunk size -4 and then bytes forever costs the client its deadline") {
  // Before: the chunk parser's size wrapped, its cursor went back, and the export thread appended
  // to the response forever (gigabytes, never returning).
  HostilePeer peer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-4\r\n", "ab\r\n-4\r\n", true);
  HttpResponse r;
  std::string error;
  CHECK_FALSE(http_post(peer.endpoint(), "application/json", "{}", 20000, r, error));
  CHECK(error.find("malformed chunk size '-4'") != std::string::npos);
  CHECK(r.body.empty());
}

TEST_CASE("http: a collector sending an endless body or head is cut at the bounds") {
  {
    HostilePeer peer("HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n", "1\r\nx\r\n", true);
    HttpResponse r;
    std::string error;
    REQUIRE(http_post(peer.endpoint(), "application/json", "{}", 20000, r, error));
    CHECK(r.status == 503);
    CHECK(r.body == std::string(4096, 'x')); // the POST's limit, then no more is read
  }
  {
    HostilePeer peer("HTTP/1.1 200 OK\r\n", "X-Junk: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", true);
    HttpResponse r;
    std::string error;
    CHECK_FALSE(http_post(peer.endpoint(), "application/json", "{}", 20000, r, error));
    CHECK(error.find("response head is longer than 16384 bytes") != std::string::npos);
  }
}

TEST_CASE("http: a reply that is not HTTP is reported once, with its reason, however often it is retried") {
  HostilePeer peer("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
  HttpEndpoint to = peer.endpoint();
  HttpResponse r;
  std::string error; // one string across tries, as OtlpExporter::send keeps it
  for (int attempt = 0; attempt < 5; ++attempt)
    CHECK_FALSE(http_post(to, "application/json", "{}", 20000, r, error));
  CHECK(count(error, to.display()) == 1);
  CHECK(error.rfind(to.display() + ": not an HTTP response: it begins 'SSH-2.0", 0) == 0);
  // A TLS server's alert: no line end at all (before: the endpoint, once per try, and no reason).
  HostilePeer tls(std::string("\x15\x03\x01\x00\x02\x02\x46", 7));
  to = tls.endpoint();
  error.clear();
  for (int attempt = 0; attempt < 5; ++attempt)
    CHECK_FALSE(http_post(to, "application/json", "{}", 20000, r, error));
  CHECK(error == to.display() + ": not an HTTP response: it begins '\\x15\\x03\\x01\\x00\\x02\\x02F'");
}

TEST_CASE("http: a status of twenty digits is refused, not answered -1") {
  HostilePeer peer("HTTP/1.1 99999999999999999999 OK\r\nContent-Length: 0\r\n\r\n");
  HttpResponse r;
  std::string error;
  CHECK_FALSE(http_post(peer.endpoint(), "application/json", "{}", 20000, r, error));
  CHECK(error.find("has no status code (three digits, 100 to 599): '99999999999999999999'") != std::string::npos);
  CHECK(r.status == 0);
}

TEST_CASE("http: URLs with CR, LF, spaces or control characters are refused; --metrics '' too") {
  HttpEndpoint e;
  std::string error;
  CHECK_FALSE(parse_http_url("http://127.0.0.1:4318/v1/traces\r\nX-Injected: 1", e, error));
  CHECK(error.find("control characters (CR)") != std::string::npos);
  CHECK_FALSE(parse_http_url("http://127.0.0.1:4318/v1\ntraces", e, error));
  CHECK(error.find("(LF)") != std::string::npos);
  CHECK_FALSE(parse_http_url("http://127.0.0.1:4318/a b", e, error));
  CHECK_FALSE(parse_http_url(std::string("http://127.0.0.1:4318/a\0b", 26), e, error));
  CHECK_FALSE(parse_listen_address("", e, error));
  CHECK(error.find("no address") != std::string::npos);
}

TEST_CASE("http: request heads are parsed strictly and bounded") {
  HttpRequestHead h;
  std::string error;
  CHECK(parse_http_request("GET /metrics?a=1 HTTP/1.1\r\nHost: x\r\n\r\n", h, error) == HttpParse::Complete);
  CHECK(h.method == "GET");
  CHECK(h.path == "/metrics");
  CHECK(parse_http_request("GET /metrics HTTP/1.1\r\nHost: x\r\n", h, error) == HttpParse::Incomplete);
  CHECK(parse_http_request("GET /metrics\r\n\r\n", h, error) == HttpParse::Bad);
  CHECK(parse_http_request("GET /a\x01 HTTP/1.1\r\n\r\n", h, error) == HttpParse::Bad);
  CHECK(parse_http_request("GET / HTTP/1.1\r\nX: " + std::string(20000, 'a'), h, error) == HttpParse::Bad);
  CHECK(error.find("longer than 16384") != std::string::npos);
}

TEST_CASE("http: 200 slowloris clients on /metrics do not stop a scrape") {
  // Before: one connection at a time, two seconds each: 200 stalled clients held every scrape
  // for 400 s. Now they share the connection cap with the scrape, which evicts the oldest.
  HttpEndpoint at;
  std::string error;
  REQUIRE(parse_listen_address("127.0.0.1:0", at, error));
  HttpServer server;
  REQUIRE(server.start(
      at,
      [](const std::string &path, std::string &type) {
        type = path == "/metrics" ? "text/plain" : "";
        return std::string("weave_up 1\n");
      },
      error));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(server.port());
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
    // A request head that never ends: one header line, then nothing.
    REQUIRE(send(fd, "GET /metrics HTTP/1.1\r\nX-Slow: 1\r\n", 34, MSG_NOSIGNAL) == 34);
    slow.push_back(fd);
  }
  HttpEndpoint to;
  REQUIRE(parse_http_url("http://127.0.0.1:" + std::to_string(server.port()) + "/metrics", to, error));
  // Generous: 200 clients served in turn took 400 s; a scrape now takes milliseconds.
  HttpResponse r;
  bool answered = http_get(to, 30000, r, error);
  INFO(error);
  CHECK(answered);
  CHECK(r.status == 200);
  CHECK(r.body == "weave_up 1\n");
  for (int fd : slow)
    close(fd);
  server.stop();
}

// The fleet exports' HTTP pieces (runtime/http.h), on loopback: URLs and listen addresses are parsed
// or refused with a reason, a GET round trip through the tracer's own server, and the client's
// deadline holding against a peer that never answers (a collector that hangs must cost at most the
// timeout). The exports end to end, against a real collector and Prometheus: tests/e2e/test_fleet.cpp.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <chrono>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fleet.h"
#include "http.h"

using namespace weave;

TEST_CASE("fleet: OTLP URLs and listen addresses are parsed, names and https refused with a reason") {
  HttpEndpoint e;
  std::string error;
  REQUIRE(parse_http_url("http://127.0.0.1:4318", e, error));
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port == 4318);
  CHECK(e.path == "");
  REQUIRE(parse_http_url("http://[::1]:4318/v1/traces", e, error));
  CHECK(e.host == "::1");
  CHECK(e.path == "/v1/traces");
  CHECK(e.display() == "[::1]:4318");
  REQUIRE(parse_http_url("http://localhost", e, error));
  CHECK(e.port == 80);
  CHECK_FALSE(parse_http_url("https://127.0.0.1:4318", e, error));
  CHECK(error.find("https is not supported") != std::string::npos);
  CHECK_FALSE(parse_http_url("http://collector:4318", e, error));
  CHECK(error.find("not an IP address") != std::string::npos);
  CHECK_FALSE(parse_http_url("127.0.0.1:4318", e, error));
  CHECK_FALSE(parse_http_url("http://127.0.0.1:99999", e, error));
  CHECK(error.find("port") != std::string::npos);
  REQUIRE(parse_listen_address(":9464", e, error));
  CHECK(e.host == "0.0.0.0");
  REQUIRE(parse_listen_address("127.0.0.1:0", e, error));
  CHECK_FALSE(parse_listen_address("127.0.0.1", e, error));
  CHECK(error.find("give a port") != std::string::npos);
}

TEST_CASE("fleet: the tracer's server answers GET /metrics, 404 elsewhere, 405 for POST") {
  HttpEndpoint at;
  std::string error;
  REQUIRE(parse_listen_address("127.0.0.1:0", at, error));
  HttpServer server;
  REQUIRE(server.start(
      at,
      [](const std::string &path, std::string &type) {
        if (path != "/metrics")
          return std::string();
        type = "text/plain";
        return std::string(100000, 'x'); // larger than one read
      },
      error));
  HttpEndpoint to;
  REQUIRE(parse_http_url("http://127.0.0.1:" + std::to_string(server.port()) + "/metrics", to, error));
  HttpResponse r;
  REQUIRE(http_get(to, 5000, r, error));
  CHECK(r.status == 200);
  CHECK(r.body.size() == 100000);
  to.path = "/other";
  REQUIRE(http_get(to, 5000, r, error));
  CHECK(r.status == 404);
  REQUIRE(http_post(to, "application/json", "{}", 5000, r, error));
  CHECK(r.status == 405);
  CHECK(server.requests() == 3);
  server.stop();
  CHECK_FALSE(http_get(to, 2000, r, error)); // stopped: refused
}

TEST_CASE("fleet: a peer that accepts and never answers costs the client its timeout, no more") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
  REQUIRE(listen(fd, 4) == 0); // the kernel completes the handshake; nobody reads
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  HttpEndpoint to;
  std::string error;
  REQUIRE(parse_http_url("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)), to, error));
  HttpResponse r;
  auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(http_post(to, "application/json", std::string(1000, 'x'), 300, r, error));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s >= 0.29);
  // Not "within 1 s": a busy machine adds its scheduling delay. A timeout not honoured (or taken
  // per retry) shows as many times 0.3 s; 10 s is a deadline for that, not a measure of speed.
  CHECK(s < 10);
  CHECK(error.find("timed out") != std::string::npos);
  close(fd);
}

TEST_CASE("fleet: histogram bounds are increasing, 1 µs to 10 s") {
  const auto &b = MetricsExporter::bounds();
  REQUIRE(b.size() == 22);
  CHECK(b.front() == doctest::Approx(1e-6));
  CHECK(b.back() == doctest::Approx(10));
  for (size_t i = 1; i < b.size(); ++i)
    CHECK(b[i] > b[i - 1]);
}

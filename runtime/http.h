// HTTP/1.1 for the fleet exports (--otlp, --metrics): a client that POSTs one request per
// connection, and a server that answers GET requests one at a time. Just what OTLP/HTTP and a
// Prometheus scrape need, over plain sockets with deadlines on every step.
//
// Why not a library: the tracer links fully statically. Debian 12's cpp-httplib is built as a
// shared library (libcpp-httplib.so, a split header, no .a), and a static libcurl drags in OpenSSL,
// nghttp2, libidn2 and more. Both ends that talk to this code in the tests are real: the
// OpenTelemetry Collector's OTLP receiver and Prometheus (both Go's net/http).
//
// Hosts are IP addresses (or "localhost"): glibc's name resolution in a static binary needs the
// shared NSS modules of the very glibc it was linked with at run time, which a tracer copied to
// another host may not find, so the tracer does not resolve names at all and says so.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <sys/socket.h>
#include <thread>

namespace weave {

struct HttpEndpoint {
  std::string host; // as given: "127.0.0.1", "::1", "localhost"
  uint16_t port = 0;
  std::string path; // "/v1/traces"; empty for a listen address
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::string display() const; // "127.0.0.1:4318"
};

// "http://HOST:PORT[/PATH]" (PORT defaults to 80). HOST is an IPv4 address, [IPv6], or localhost.
bool parse_http_url(const std::string &url, HttpEndpoint &out, std::string &error);
// "HOST:PORT", "[IPv6]:PORT" or ":PORT" (all IPv4 interfaces); for listening.
bool parse_listen_address(const std::string &text, HttpEndpoint &out, std::string &error);

struct HttpResponse {
  int status = 0;   // 0: no response (error says why)
  std::string body; // POST: at most the first 4 KiB, for messages
};

// POSTs `body` and reads the response, all within `timeout_ms`. False when no complete status line
// arrived (connection refused, timeout...), with `error` saying why.
bool http_post(const HttpEndpoint &to, const std::string &content_type, const std::string &body,
               int timeout_ms, HttpResponse &response, std::string &error);

// GETs `to.path`, for tests and tools: the body up to 64 MiB.
bool http_get(const HttpEndpoint &to, int timeout_ms, HttpResponse &response, std::string &error);
bool http_request(const char *method, const HttpEndpoint &to, const std::string &content_type,
                  const std::string &body, int timeout_ms, HttpResponse &response, std::string &error,
                  size_t body_limit);

// For the exports' threads: SIGINT and SIGTERM go to the tracer's main thread, whose loop acts on
// them, and never interrupt a send or a scrape.
void block_signals();

// A server on its own thread answering GET requests, one connection at a time, each bounded to a
// second or two. `handler(path, content_type)` returns the body of a 200, or sets content_type to
// "" for a 404. Closing the listening socket stops it.
class HttpServer {
public:
  using Handler = std::function<std::string(const std::string &path, std::string &content_type)>;
  ~HttpServer();
  bool start(const HttpEndpoint &at, Handler handler, std::string &error);
  void stop();
  uint16_t port() const { return port_; } // the bound port (useful with :0)
  uint64_t requests() const { return requests_.load(); }

private:
  void serve();
  void answer(int fd);
  Handler handler_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<uint64_t> requests_{0};
};

} // namespace weave

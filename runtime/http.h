// HTTP/1.1 for the fleet exports (--otlp, --metrics): a client that POSTs one request per
// connection, and a server that answers GET requests. Just what OTLP/HTTP and a Prometheus scrape
// need, over plain sockets with deadlines on every step.
//
// The peer is not trusted (a "collector" may be anyone listening on its port while the real one is
// down; anyone who can reach --metrics may connect): both parsers are bounded by what was received
// (a head of at most 16 KiB, a body of at most the caller's limit, chunk sizes of at most 16 hex
// digits parsed strictly, a three-digit status) and every exchange by one overall deadline that
// no byte the peer sends extends. They are pure (bytes in, state out), so fuzz/fuzz_http.cpp feeds
// them directly.
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
#include <string_view>
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

// The largest request or response head either side accepts.
inline constexpr size_t kHttpMaxHead = 16 * 1024;

// HttpResponseParser reads one response incrementally: feed() what arrives, finish() when the peer
// closes, until it is done or failed. It keeps at most kHttpMaxHead + a chunk-size line of
// unparsed bytes and at most body_limit bytes of body; a longer body is cut there (truncated)
// and the rest not waited for. 1xx interim responses are skipped.
class HttpResponseParser {
public:
  explicit HttpResponseParser(size_t body_limit) : body_limit_(body_limit) {}
  void feed(const char *data, size_t size);
  void finish(); // the peer closed
  bool done() const { return state_ == State::Done; }
  bool failed() const { return state_ == State::Failed; }
  int status() const { return status_; }
  const std::string &body() const { return body_; }
  bool truncated() const { return truncated_; }
  const std::string &error() const { return error_; } // why it failed
  size_t received() const { return received_; }

private:
  enum class State { StatusLine, Headers, Body, ChunkSize, ChunkData, ChunkEnd, UntilClose, Done, Failed };
  void fail(std::string why);
  void parse();
  bool parse_status_line(std::string_view line);
  bool parse_header(std::string_view line);
  bool start_body();
  void take_body(size_t n);
  State state_ = State::StatusLine;
  size_t body_limit_;
  std::string pending_; // received, not yet parsed
  size_t head_bytes_ = 0;
  int status_ = 0;
  bool chunked_ = false;
  bool have_length_ = false;
  uint64_t length_ = 0; // Content-Length, or what is left of the current chunk
  std::string body_;
  bool truncated_ = false;
  size_t received_ = 0;
  std::string error_;
};

struct HttpRequestHead {
  std::string method;
  std::string path; // without the query
};
enum class HttpParse { Incomplete, Complete, Bad };
// A request head (what the /metrics server needs: method and path) from the bytes received so far:
// Incomplete until its blank line arrives, Bad (with `error`) when it is not HTTP/1.x or its head
// is longer than kHttpMaxHead.
HttpParse parse_http_request(std::string_view in, HttpRequestHead &out, std::string &error);

// `text` for a message: printable ASCII kept, anything else as \xNN, at most `max` bytes shown.
std::string printable_prefix(std::string_view text, size_t max = 40);

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

// A server on its own thread answering GET requests: one poll loop serving up to kMaxConnections
// connections at once, each bounded to kConnectionMs from its accept whatever the client sends
// (a slowloris client holds one slot for that long at most). When every slot is taken, a new
// connection evicts the oldest, so a stream of idle clients cannot keep a scrape out.
// `handler(path, content_type)` returns the body of a 200, or sets content_type to "" for a 404.
class HttpServer {
public:
  static constexpr size_t kMaxConnections = 64;
  static constexpr int kConnectionMs = 2000;
  using Handler = std::function<std::string(const std::string &path, std::string &content_type)>;
  ~HttpServer();
  bool start(const HttpEndpoint &at, Handler handler, std::string &error);
  void stop();
  uint16_t port() const { return port_; } // the bound port (useful with :0)
  uint64_t requests() const { return requests_.load(); }

private:
  struct Connection;
  void serve();
  bool step(Connection &c); // false: done with it
  Handler handler_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<uint64_t> requests_{0};
};

} // namespace weave

#include "http.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <csignal>
#include <unistd.h>

namespace weave {

namespace {

int64_t now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Fills out.addr from a numeric host. "localhost" is 127.0.0.1: resolving names is left out (http.h).
bool numeric_address(const std::string &host, uint16_t port, HttpEndpoint &out, std::string &error) {
  std::string h = host == "localhost" ? "127.0.0.1" : host;
  auto *v4 = reinterpret_cast<sockaddr_in *>(&out.addr);
  auto *v6 = reinterpret_cast<sockaddr_in6 *>(&out.addr);
  std::memset(&out.addr, 0, sizeof out.addr);
  if (inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    out.addr_len = sizeof *v4;
    return true;
  }
  if (inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    out.addr_len = sizeof *v6;
    return true;
  }
  error = "'" + host + "' is not an IP address: the tracer is a static program and does not resolve host "
          "names; give the address (e.g. 127.0.0.1, [::1])";
  return false;
}

// Splits "HOST:PORT" / "[V6]:PORT" / ":PORT" / "HOST" (port_required false).
bool split_host_port(const std::string &text, std::string &host, uint16_t &port, bool port_required,
                     uint16_t default_port, std::string &error) {
  std::string rest;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) {
      error = "'" + text + "': no closing ']'";
      return false;
    }
    host = text.substr(1, close - 1);
    rest = text.substr(close + 1);
  } else {
    size_t colon = text.rfind(':');
    host = colon == std::string::npos ? text : text.substr(0, colon);
    rest = colon == std::string::npos ? "" : text.substr(colon);
  }
  if (rest.empty()) {
    if (port_required) {
      error = "'" + text + "': give a port, HOST:PORT";
      return false;
    }
    port = default_port;
    return true;
  }
  if (rest[0] != ':' || rest.size() < 2 || rest.size() > 6 ||
      rest.find_first_not_of("0123456789", 1) != std::string::npos || std::stoul(rest.substr(1)) > 65535) {
    error = "'" + text + "': the port must be a number from 0 to 65535";
    return false;
  }
  port = static_cast<uint16_t>(std::stoul(rest.substr(1)));
  return true;
}

bool wait_fd(int fd, short events, int64_t deadline) {
  while (true) {
    int64_t left = deadline - now_ms();
    if (left <= 0)
      return false;
    struct pollfd p = {fd, events, 0};
    int n = poll(&p, 1, int(left));
    if (n > 0)
      return true;
    if (n < 0 && errno != EINTR)
      return false;
  }
}

bool send_all(int fd, const char *data, size_t size, int64_t deadline, std::string &error) {
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_fd(fd, POLLOUT, deadline)) {
        error = "timed out sending";
        return false;
      }
      continue;
    }
    error = std::string("send: ") + std::strerror(errno);
    return false;
  }
  return true;
}

// Reads a request or response head and what follows it, until the head is complete and (when it
// says how long the body is) the body too, the peer closes, or the deadline passes.
// A response without Content-Length (chunked, or ended by the close) is read to the close when
// `to_close`; a request without one has no body.
bool read_message(int fd, int64_t deadline, std::string &in, size_t limit, std::string &error,
                  bool to_close = false) {
  char buf[4096];
  while (true) {
    size_t head_end = in.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      // Content-Length, case-insensitively, if any.
      std::string head = in.substr(0, head_end);
      for (char &c : head)
        c = char(std::tolower(static_cast<unsigned char>(c)));
      size_t at = head.find("\r\ncontent-length:");
      if (at == std::string::npos && (!to_close || limit <= 4096))
        return true; // a GET, or a message whose status is all we want
      if (at != std::string::npos) {
        size_t length = std::strtoull(head.c_str() + at + 17, nullptr, 10);
        if (in.size() >= head_end + 4 + std::min(length, limit))
          return true;
      }
    }
    if (in.size() >= limit + 8192)
      return true;
    if (!wait_fd(fd, POLLIN, deadline)) {
      error = "timed out waiting for the response";
      return false;
    }
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0)
      return in.find("\r\n") != std::string::npos; // closed: a status line is enough
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      error = std::string("recv: ") + std::strerror(errno);
      return false;
    }
    in.append(buf, size_t(n));
  }
}

} // namespace

void block_signals() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

std::string HttpEndpoint::display() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool parse_http_url(const std::string &url, HttpEndpoint &out, std::string &error) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    error = "'" + url + "': https is not supported; the tracer sends OTLP/HTTP in plain text (to a "
            "collector on the host or in its network: its own exporter can use TLS from there)";
    return false;
  }
  if (url.rfind(scheme, 0) != 0) {
    error = "'" + url + "': give an http:// URL, e.g. http://127.0.0.1:4318";
    return false;
  }
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  out.path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.empty()) {
    error = "'" + url + "': no host";
    return false;
  }
  std::string why;
  if (!split_host_port(authority, out.host, out.port, false, 80, why) ||
      !numeric_address(out.host, out.port, out, why)) {
    error = "'" + url + "': " + why;
    return false;
  }
  return true;
}

bool parse_listen_address(const std::string &text, HttpEndpoint &out, std::string &error) {
  std::string why;
  if (!split_host_port(text, out.host, out.port, true, 0, why)) {
    error = why;
    return false;
  }
  if (out.host.empty())
    out.host = "0.0.0.0";
  if (!numeric_address(out.host, out.port, out, why)) {
    error = why;
    return false;
  }
  return true;
}

bool http_post(const HttpEndpoint &to, const std::string &content_type, const std::string &body,
               int timeout_ms, HttpResponse &response, std::string &error) {
  return http_request("POST", to, content_type, body, timeout_ms, response, error, 4096);
}

bool http_get(const HttpEndpoint &to, int timeout_ms, HttpResponse &response, std::string &error) {
  return http_request("GET", to, "", "", timeout_ms, response, error, 64u << 20);
}

bool http_request(const char *method, const HttpEndpoint &to, const std::string &content_type,
                  const std::string &body, int timeout_ms, HttpResponse &response, std::string &error,
                  size_t body_limit) {
  response = {};
  int64_t deadline = now_ms() + timeout_ms;
  int fd = socket(to.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  if (connect(fd, reinterpret_cast<const sockaddr *>(&to.addr), to.addr_len) != 0) {
    if (errno != EINPROGRESS) {
      error = "connect to " + to.display() + ": " + std::strerror(errno);
      return false;
    }
    if (!wait_fd(fd, POLLOUT, deadline)) {
      error = "connect to " + to.display() + ": timed out";
      return false;
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      error = "connect to " + to.display() + ": " + std::strerror(so_error);
      return false;
    }
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string head = std::string(method) + " " + (to.path.empty() ? std::string("/") : to.path) +
                     " HTTP/1.1\r\nHost: " + to.display() +
                     (content_type.empty() ? "" : "\r\nContent-Type: " + content_type) +
                     (body.empty() && std::string(method) == "GET" ? "" : "\r\nContent-Length: " + std::to_string(body.size())) +
                     "\r\nConnection: close\r\nUser-Agent: weave-tracer\r\n\r\n";
  if (!send_all(fd, head.data(), head.size(), deadline, error) ||
      !send_all(fd, body.data(), body.size(), deadline, error)) {
    error = to.display() + ": " + error;
    return false;
  }
  std::string in;
  if (!read_message(fd, deadline, in, body_limit, error, true)) {
    error = to.display() + ": " + error;
    return false;
  }
  // "HTTP/1.1 200 OK"
  if (in.rfind("HTTP/1.", 0) != 0 || in.size() < 12) {
    error = to.display() + ": not an HTTP response";
    return false;
  }
  response.status = std::atoi(in.c_str() + 9);
  size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos)
    return true;
  std::string response_head = in.substr(0, head_end);
  for (char &c : response_head)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  std::string raw = in.substr(head_end + 4);
  if (response_head.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
    // size in hex, CRLF, data, CRLF, ..., 0 CRLF CRLF
    size_t at = 0;
    while (at < raw.size()) {
      size_t eol = raw.find("\r\n", at);
      if (eol == std::string::npos)
        break;
      size_t size = std::strtoull(raw.c_str() + at, nullptr, 16);
      if (size == 0 || eol + 2 + size > raw.size())
        break;
      response.body.append(raw, eol + 2, size);
      at = eol + 2 + size + 2;
    }
  } else {
    response.body = raw;
  }
  if (response.body.size() > body_limit)
    response.body.resize(body_limit);
  return true;
}

HttpServer::~HttpServer() { stop(); }

bool HttpServer::start(const HttpEndpoint &at, Handler handler, std::string &error) {
  handler_ = std::move(handler);
  listen_fd_ = socket(at.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listen_fd_, reinterpret_cast<const sockaddr *>(&at.addr), at.addr_len) != 0 ||
      listen(listen_fd_, 16) != 0) {
    error = "listen on " + at.display() + ": " + std::strerror(errno);
    close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr *>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
  if (pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  thread_ = std::thread([this] { serve(); });
  return true;
}

void HttpServer::stop() {
  if (thread_.joinable()) {
    (void)!write(stop_pipe_[1], "x", 1);
    thread_.join();
  }
  for (int *fd : {&listen_fd_, &stop_pipe_[0], &stop_pipe_[1]})
    if (*fd >= 0) {
      close(*fd);
      *fd = -1;
    }
}

void HttpServer::serve() {
  block_signals();
  while (true) {
    struct pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    if (p[1].revents)
      return;
    if (!(p[0].revents & POLLIN))
      continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    answer(fd);
    close(fd);
  }
}

void HttpServer::answer(int fd) {
  // One request per connection, read and answered within two seconds: a client that stalls
  // delays the next scrape at most that long, and never the tracer's event loop.
  int64_t deadline = now_ms() + 2000;
  std::string in, error;
  if (!read_message(fd, deadline, in, 0, error) || in.find("\r\n\r\n") == std::string::npos)
    return;
  requests_++;
  std::string line = in.substr(0, in.find("\r\n"));
  size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  std::string method = line.substr(0, sp1);
  std::string path = sp1 == std::string::npos || sp2 <= sp1 ? "/" : line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  std::string status = "200 OK", content_type, body;
  if (method != "GET" && method != "HEAD") {
    status = "405 Method Not Allowed";
    body = "GET only\n";
    content_type = "text/plain";
  } else {
    body = handler_(path, content_type);
    if (content_type.empty()) {
      status = "404 Not Found";
      content_type = "text/plain";
      body = "not found: the metrics are at /metrics\n";
    }
  }
  std::string out = "HTTP/1.1 " + status + "\r\nContent-Type: " + content_type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (method != "HEAD")
    out += body;
  send_all(fd, out.data(), out.size(), deadline, error);
}

} // namespace weave

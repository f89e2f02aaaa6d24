#include "http.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <algorithm>
#include <cctype>
#include <csignal>
#include <vector>
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

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// Digits only, at most 19 of them (so it fits in 63 bits): "+1", "-4", " 12", "1e3" are not numbers.
bool parse_decimal(std::string_view s, uint64_t &out) {
  if (s.empty() || s.size() > 19)
    return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    out = out * 10 + uint64_t(c - '0');
  }
  return true;
}

} // namespace

std::string printable_prefix(std::string_view text, size_t max) {
  std::string out;
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (text.size() > max)
    out += "...";
  return out;
}

// ---- HttpResponseParser -----------------------------------------------------------------------

void HttpResponseParser::fail(std::string why) {
  state_ = State::Failed;
  error_ = std::move(why);
  pending_.clear();
}

void HttpResponseParser::feed(const char *data, size_t size) {
  // Framing costs bytes (chunk-size lines, 1xx heads), but not without bound: past the budget the
  // response must be complete.
  const uint64_t budget = 4 * uint64_t(body_limit_) + (1u << 20);
  uint64_t room = received_ < budget ? budget - received_ : 0;
  size_t take = size_t(std::min<uint64_t>(size, room));
  received_ += size;
  if (state_ == State::Done || state_ == State::Failed)
    return;
  pending_.append(data, take);
  parse();
  if (take < size && state_ != State::Done && state_ != State::Failed)
    fail("the response is more than " + std::to_string(budget) + " bytes for a body of at most " +
         std::to_string(body_limit_));
}

void HttpResponseParser::finish() {
  switch (state_) {
  case State::Done:
  case State::Failed:
    return;
  case State::UntilClose:
    state_ = State::Done;
    return;
  case State::StatusLine:
    if (received_ == 0)
      fail("the connection closed without a response");
    else if (pending_.rfind("HTTP/", 0) != 0 && std::string_view("HTTP/").substr(0, pending_.size()) != pending_)
      fail("not an HTTP response: it begins '" + printable_prefix(pending_) + "'");
    else
      fail("the connection closed in the status line ('" + printable_prefix(pending_) + "')");
    return;
  case State::Headers:
    fail("the connection closed in the response head (status " + std::to_string(status_) + ")");
    return;
  default:
    fail("the connection closed after " + std::to_string(body_.size()) + " bytes of the response body" +
         (chunked_ ? " (chunked, before its last chunk)"
                   : " of " + std::to_string(length_ + body_.size())));
    return;
  }
}

// "HTTP/1.x SP DDD [SP reason]": the status exactly three digits, 100 to 599.
bool HttpResponseParser::parse_status_line(std::string_view line) {
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[7] < '0' || line[7] > '9' ||
      line[8] != ' ') {
    fail("not an HTTP response: it begins '" + printable_prefix(line) + "'");
    return false;
  }
  std::string_view code = line.substr(9, 3);
  if (std::any_of(code.begin(), code.end(), [](char c) { return c < '0' || c > '9'; }) ||
      (line.size() > 12 && line[12] != ' ') || code[0] < '1' || code[0] > '5') {
    size_t end = line.find(' ', 9);
    fail("the status line '" + printable_prefix(line, 60) + "' has no status code (three digits, 100 to 599): '" +
         printable_prefix(line.substr(9, end == std::string_view::npos ? std::string_view::npos : end - 9), 24) +
         "'");
    return false;
  }
  status_ = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
  return true;
}

bool HttpResponseParser::parse_header(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0 ||
      !std::all_of(line.begin(), line.begin() + colon, is_token_char)) {
    fail("a malformed response header line: '" + printable_prefix(line) + "'");
    return false;
  }
  std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
  if (iequals(name, "content-length")) {
    uint64_t n = 0;
    if (!parse_decimal(value, n) || (have_length_ && n != length_)) {
      fail("the response's Content-Length '" + printable_prefix(value) + "' is not one decimal number");
      return false;
    }
    have_length_ = true;
    length_ = n;
  } else if (iequals(name, "transfer-encoding")) {
    // The last coding decides (RFC 9112 6.1): chunked, or the body runs to the close.
    size_t comma = value.rfind(',');
    chunked_ = iequals(trim(comma == std::string_view::npos ? value : value.substr(comma + 1)), "chunked");
    if (!chunked_) {
      fail("the response's Transfer-Encoding '" + printable_prefix(value) + "' does not end with chunked");
      return false;
    }
  }
  return true;
}

bool HttpResponseParser::start_body() {
  // A 1xx is an interim response: the real one follows.
  if (status_ >= 100 && status_ < 200) {
    state_ = State::StatusLine;
    have_length_ = chunked_ = false;
    length_ = 0;
    return true;
  }
  if (status_ == 204 || status_ == 304) {
    state_ = State::Done;
    return true;
  }
  if (chunked_) {
    state_ = State::ChunkSize; // Transfer-Encoding overrides Content-Length (RFC 9112 6.3)
  } else if (have_length_) {
    state_ = length_ == 0 ? State::Done : State::Body;
  } else {
    state_ = State::UntilClose;
  }
  return true;
}

// Takes n bytes of body from pending_ (n <= pending_.size()), up to the limit; done at the limit.
void HttpResponseParser::take_body(size_t n) {
  size_t room = body_limit_ - body_.size();
  body_.append(pending_, 0, std::min(n, room));
  pending_.erase(0, n);
  if (n > room) {
    truncated_ = true;
    state_ = State::Done;
  }
}

void HttpResponseParser::parse() {
  while (true) {
    switch (state_) {
    case State::Done:
    case State::Failed:
      pending_.clear();
      return;
    case State::StatusLine:
    case State::Headers: {
      // Say at once when the first bytes cannot start a response.
      if (state_ == State::StatusLine && head_bytes_ == 0) {
        std::string_view prefix = std::string_view(pending_).substr(0, 5);
        if (prefix != std::string_view("HTTP/").substr(0, prefix.size())) {
          fail("not an HTTP response: it begins '" + printable_prefix(pending_) + "'");
          return;
        }
      }
      size_t eol = pending_.find("\r\n");
      if (eol == std::string::npos) {
        if (head_bytes_ + pending_.size() > kHttpMaxHead)
          fail("the response head is longer than " + std::to_string(kHttpMaxHead) + " bytes");
        return;
      }
      head_bytes_ += eol + 2;
      if (head_bytes_ > kHttpMaxHead) {
        fail("the response head is longer than " + std::to_string(kHttpMaxHead) + " bytes");
        return;
      }
      std::string line = pending_.substr(0, eol);
      pending_.erase(0, eol + 2);
      if (state_ == State::StatusLine) {
        if (!parse_status_line(line))
          return;
        state_ = State::Headers;
      } else if (line.empty()) {
        head_bytes_ = 0;
        if (!start_body())
          return;
      } else if (!parse_header(line)) {
        return;
      }
      continue;
    }
    case State::Body: {
      if (pending_.empty())
        return;
      size_t n = size_t(std::min<uint64_t>(length_, pending_.size()));
      length_ -= n;
      take_body(n);
      if (state_ == State::Body && length_ == 0)
        state_ = State::Done;
      continue;
    }
    case State::UntilClose:
      if (pending_.empty())
        return;
      take_body(pending_.size());
      continue;
    case State::ChunkSize: {
      // 1 to 16 hex digits, then optional ";extensions", then CRLF. Nothing else: no sign, no
      // spaces, no wrap-around.
      size_t eol = pending_.find("\r\n");
      if (eol == std::string::npos) {
        if (pending_.size() > 1024)
          fail("a chunk-size line longer than 1024 bytes");
        return;
      }
      if (eol > 1024) {
        fail("a chunk-size line longer than 1024 bytes");
        return;
      }
      std::string_view line(pending_.data(), eol);
      size_t digits = 0;
      uint64_t size = 0;
      while (digits < line.size() && std::isxdigit(static_cast<unsigned char>(line[digits]))) {
        char c = line[digits];
        size = size * 16 + uint64_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        if (++digits > 16)
          break;
      }
      if (digits == 0 || digits > 16 || (digits < line.size() && line[digits] != ';')) {
        fail("a malformed chunk size '" + printable_prefix(line) + "' (1 to 16 hex digits)");
        return;
      }
      pending_.erase(0, eol + 2);
      if (size == 0) {
        state_ = State::Done; // the last chunk; trailers, if any, are not needed
        continue;
      }
      length_ = size;
      state_ = State::ChunkData;
      continue;
    }
    case State::ChunkData: {
      if (pending_.empty())
        return;
      size_t n = size_t(std::min<uint64_t>(length_, pending_.size()));
      length_ -= n;
      take_body(n);
      if (state_ == State::ChunkData && length_ == 0)
        state_ = State::ChunkEnd;
      continue;
    }
    case State::ChunkEnd:
      if (pending_.size() < 2)
        return;
      if (pending_.compare(0, 2, "\r\n") != 0) {
        fail("a chunk's data is not followed by CRLF");
        return;
      }
      pending_.erase(0, 2);
      state_ = State::ChunkSize;
      continue;
    }
  }
}

// ---- Requests ---------------------------------------------------------------------------------

HttpParse parse_http_request(std::string_view in, HttpRequestHead &out, std::string &error) {
  size_t end = in.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (in.size() > kHttpMaxHead) {
      error = "the request head is longer than " + std::to_string(kHttpMaxHead) + " bytes";
      return HttpParse::Bad;
    }
    return HttpParse::Incomplete;
  }
  if (end + 4 > kHttpMaxHead) {
    error = "the request head is longer than " + std::to_string(kHttpMaxHead) + " bytes";
    return HttpParse::Bad;
  }
  // METHOD SP TARGET SP HTTP/1.x
  std::string_view line = in.substr(0, in.find("\r\n"));
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp1 == 0 || sp2 == std::string_view::npos || sp2 == sp1 + 1 ||
      line.substr(sp2 + 1).size() != 8 || line.substr(sp2 + 1, 7) != "HTTP/1." ||
      !std::all_of(line.begin(), line.begin() + sp1, is_token_char)) {
    error = "not an HTTP/1.x request line: '" + printable_prefix(line) + "'";
    return HttpParse::Bad;
  }
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (std::any_of(target.begin(), target.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; })) {
    error = "a request target with control characters";
    return HttpParse::Bad;
  }
  out.method = std::string(line.substr(0, sp1));
  out.path = std::string(target.substr(0, target.find('?')));
  return HttpParse::Complete;
}


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
  // The URL goes into the request head: a CR, LF or any other control character or space in it
  // would let it write headers (or a second request) of its own.
  for (char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      error = "'" + printable_prefix(url, 200) + "': a URL cannot contain spaces or control characters (" +
              (c == '\r' ? std::string("CR") : c == '\n' ? std::string("LF") : printable_prefix(std::string(1, c))) + ")";
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
  if (text.empty()) {
    error = "no address: give HOST:PORT, e.g. 127.0.0.1:9464 (:PORT listens on every interface)";
    return false;
  }
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
  // Read until the response is complete or failed, the peer closes, or the deadline passes:
  // whatever the peer sends, no more than the parser's bounds and no later than `deadline`.
  HttpResponseParser parser(body_limit);
  char buf[16384];
  while (!parser.done() && !parser.failed()) {
    if (!wait_fd(fd, POLLIN, deadline)) {
      error = to.display() + ": timed out waiting for the response (" +
              (parser.received() ? std::to_string(parser.received()) + " bytes received)" : "nothing received)");
      return false;
    }
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0) {
      parser.finish();
      break;
    }
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      error = to.display() + ": recv: " + std::strerror(errno);
      return false;
    }
    parser.feed(buf, size_t(n));
  }
  if (parser.failed()) {
    error = to.display() + ": " + parser.error();
    return false;
  }
  response.status = parser.status();
  response.body = parser.body();
  return true;
}

HttpServer::~HttpServer() { stop(); }

bool HttpServer::start(const HttpEndpoint &at, Handler handler, std::string &error) {
  handler_ = std::move(handler);
  // Non-blocking: serve() accepts until the backlog is empty, and must not wait there.
  listen_fd_ = socket(at.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listen_fd_, reinterpret_cast<const sockaddr *>(&at.addr), at.addr_len) != 0 ||
      listen(listen_fd_, SOMAXCONN) != 0) {
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

struct HttpServer::Connection {
  int fd = -1;
  int64_t deadline = 0; // from its accept: nothing the client sends extends it
  std::string in;       // the request so far (at most kHttpMaxHead + one read)
  std::string out;      // the response, once the request is complete
  size_t sent = 0;
};

// Reads what the connection has, answers once its request head is complete, sends what the socket
// takes. False when the connection is finished (answered, bad, closed or failed).
bool HttpServer::step(Connection &c) {
  if (c.out.empty()) {
    char buf[4096];
    bool closed = false;
    while (true) {
      ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n == 0) {
        closed = true; // half-closed after its request, perhaps: still answered
        break;
      }
      if (n < 0) {
        if (errno == EINTR)
          continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
          break;
        return false;
      }
      c.in.append(buf, size_t(n));
      if (c.in.size() > kHttpMaxHead + sizeof buf)
        break;
    }
    HttpRequestHead request;
    std::string error;
    HttpParse parsed = parse_http_request(c.in, request, error);
    if (parsed == HttpParse::Incomplete)
      return !closed;
    std::string status = "200 OK", content_type, body;
    if (parsed == HttpParse::Bad) {
      status = "400 Bad Request";
      content_type = "text/plain";
      body = error + "\n";
    } else {
      requests_++;
      if (request.method != "GET" && request.method != "HEAD") {
        status = "405 Method Not Allowed";
        body = "GET only\n";
        content_type = "text/plain";
      } else {
        body = handler_(request.path, content_type);
        if (content_type.empty()) {
          status = "404 Not Found";
          content_type = "text/plain";
          body = "not found: the metrics are at /metrics\n";
        }
      }
    }
    c.out = "HTTP/1.1 " + status + "\r\nContent-Type: " + content_type +
            "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    if (request.method != "HEAD")
      c.out += body;
    c.in.clear();
  }
  while (c.sent < c.out.size()) {
    ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;
    if (n <= 0)
      return false;
    c.sent += size_t(n);
  }
  return false;
}

void HttpServer::serve() {
  block_signals();
  std::vector<Connection> connections;
  auto drop = [&](size_t i) {
    close(connections[i].fd);
    connections.erase(connections.begin() + long(i));
  };
  while (true) {
    // Connections past their deadline go first, whatever they are doing.
    int64_t now = now_ms();
    for (size_t i = connections.size(); i-- > 0;)
      if (connections[i].deadline <= now)
        drop(i);
    std::vector<pollfd> p = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    int64_t wake = -1;
    for (const Connection &c : connections) {
      p.push_back({c.fd, short(c.out.empty() ? POLLIN : POLLOUT), 0});
      wake = wake < 0 ? c.deadline : std::min(wake, c.deadline);
    }
    int timeout = wake < 0 ? -1 : int(std::max<int64_t>(1, wake - now));
    if (poll(p.data(), p.size(), timeout) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[1].revents)
      break;
    // Serve the connections that are ready, then take new ones.
    for (size_t i = connections.size(); i-- > 0;)
      if (p[i + 2].revents && !step(connections[i]))
        drop(i);
    if (p[0].revents & POLLIN) {
      // Everything waiting, so that the kernel's backlog never holds a scrape behind idle clients.
      while (true) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
          break;
        if (connections.size() >= kMaxConnections)
          drop(0); // the oldest: the one that has had the longest to send its request
        connections.push_back({fd, now_ms() + kConnectionMs, {}, {}, 0});
      }
    }
  }
  for (Connection &c : connections)
    close(c.fd);
}

} // namespace weave

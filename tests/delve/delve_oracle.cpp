#include "delve_oracle.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <memory>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using nlohmann::json;

namespace delve_oracle {

namespace {

using Clock = std::chrono::steady_clock;

// reflect.Kind, as Delve's api.Variable reports it.
enum Kind {
  Bool = 1, Int = 2, Int8, Int16, Int32, Int64, Uint, Uint8, Uint16, Uint32, Uint64, Uintptr,
  Float32, Float64, Complex64, Complex128, Array, Chan, Func, Interface, Map, Ptr, Slice, String, Struct,
  UnsafePointer
};
// api.Variable flags.
constexpr int kReturnArgument = 16;
constexpr int kFakeAddress = 32;

std::string read_text(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- the Delve process and its JSON-RPC connection ----

// dlv in a process group of its own (the program it debugs joins it), so that a run that times out
// or fails kills exactly what it started.
class Dlv {
public:
  Dlv(const Options &options, const std::string &binary) {
    out_path_ = options.work_dir + "/dlv.out";
    std::vector<std::string> argv = {options.dlv, "exec", "--headless", "--api-version=2", "--accept-multiclient",
                                     "--listen=127.0.0.1:0"};
    argv.insert(argv.end(), options.dlv_flags.begin(), options.dlv_flags.end());
    argv.push_back(binary);
    argv.push_back("--");
    argv.insert(argv.end(), options.args.begin(), options.args.end());
    // Emptied before the fork: a line left from an earlier run must not be taken for this one's.
    std::ofstream(out_path_, std::ios::trunc).close();
    pid_ = fork();
    if (pid_ < 0)
      throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      setpgid(0, 0);
      int null = open("/dev/null", O_RDONLY);
      int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(null, 0);
      dup2(out, 1);
      dup2(out, 2);
      std::vector<char *> args;
      for (auto &a : argv)
        args.push_back(const_cast<char *>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
      _exit(127);
    }
    setpgid(pid_, pid_);
  }
  ~Dlv() { kill_all(); }

  // The port Delve listens on, from its "API server listening at: 127.0.0.1:PORT" line.
  int port(Clock::time_point deadline) {
    static const std::regex listening(R"(API server listening at: 127\.0\.0\.1:(\d+))");
    while (Clock::now() < deadline) {
      std::smatch m;
      std::string out = read_text(out_path_);
      if (std::regex_search(out, m, listening))
        return std::stoi(m[1]);
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("dlv exited before listening: " + out);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("dlv did not listen in time: " + read_text(out_path_));
  }

  // Waits for dlv to exit by itself (after a Detach); kills its group when it does not.
  void finish(int timeout_ms) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (pid_ > 0 && Clock::now() < deadline) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill_all();
  }

  std::string output() const { return read_text(out_path_); }

private:
  void kill_all() {
    if (pid_ <= 0)
      return;
    kill(-pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  pid_t pid_ = -1;
  std::string out_path_;
};

// Go's net/rpc/jsonrpc: {"method", "params": [arg], "id"} in, {"id", "result", "error"} out, one
// JSON object a line (Go's json.Encoder ends each with a newline and escapes newlines in strings).
class Rpc {
public:
  Rpc(int port, Clock::time_point deadline, const std::string &log_path) : deadline_(deadline) {
    if (!log_path.empty())
      log_ = std::make_unique<std::ofstream>(log_path);
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0)
      throw std::runtime_error(std::string("connect to dlv: ") + strerror(errno));
  }
  ~Rpc() {
    if (fd_ >= 0)
      close(fd_);
  }

  json call(const std::string &method, const json &arg) {
    json request = {{"method", "RPCServer." + method}, {"params", json::array({arg})}, {"id", ++id_}};
    std::string text = request.dump() + "\n";
    for (size_t sent = 0; sent < text.size();) {
      ssize_t n = send(fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (n <= 0)
        throw std::runtime_error("send to dlv failed");
      sent += static_cast<size_t>(n);
    }
    std::string text_in = line();
    if (log_)
      *log_ << "> " << text << "< " << text_in << "\n";
    json reply = json::parse(text_in, nullptr, true, true);
    if (reply.value("id", -1) != id_)
      throw std::runtime_error("dlv answered another request: " + reply.dump().substr(0, 200));
    if (!reply["error"].is_null())
      throw std::runtime_error(method + ": " + reply["error"].dump());
    return reply["result"];
  }

private:
  std::string line() {
    for (;;) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return l;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0)
        throw std::runtime_error("timed out waiting for dlv");
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) <= 0)
        continue;
      char chunk[65536];
      ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0)
        throw std::runtime_error("dlv closed the connection");
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  int fd_ = -1;
  int id_ = 0;
  std::unique_ptr<std::ofstream> log_; // each request and its reply, when WEAVE_DELVE_LOG is set
  std::string buffer_;
  Clock::time_point deadline_;
};

std::string base64_decode(const std::string &in) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    auto pos = chars.find(c);
    if (pos == std::string::npos)
      break; // '=' padding
    val = (val << 6) + static_cast<int>(pos);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xff));
      bits -= 8;
    }
  }
  return out;
}

// ---- comparing values ----

using MemoryReader = std::function<std::optional<std::string>(uint64_t addr, size_t len)>;

struct Ctx {
  Counts &counts;
  const std::map<std::string, std::string> *left_out = nullptr; // this function's, from the manifest
  MemoryReader read_memory; // may be empty
  std::set<std::string> truncated; // top-level names the tracer cut (string_max)
};

// weave's JSON string, as bytes: U+E080..U+E0FF (from parse_events' \udcXX) back into bytes.
std::string weave_bytes(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0xEE && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x82) {
      // U+E080..U+E0BF: EE 82 80..BF; U+E0C0..U+E0FF: EE 83 80..BF
      out.push_back(static_cast<char>(0x80 + (static_cast<unsigned char>(s[i + 2]) - 0x80)));
      i += 2;
    } else if (c == 0xEE && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x83) {
      out.push_back(static_cast<char>(0xC0 + (static_cast<unsigned char>(s[i + 2]) - 0x80)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string printable(const std::string &bytes, size_t max = 80) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return "\"" + out + (bytes.size() > max ? "...\"" : "\"");
}

void skip(Ctx &ctx, const std::string &reason) { ++ctx.counts.skipped[reason]; }

void mismatch(Ctx &ctx, const std::string &path, const std::string &weave, const std::string &delve) {
  ++ctx.counts.compared;
  ctx.counts.mismatches.push_back(path + ": weave " + weave + ", delve " + delve);
}

void check(Ctx &ctx, bool equal, const std::string &path, const std::string &weave, const std::string &delve) {
  if (equal)
    ++ctx.counts.compared;
  else
    mismatch(ctx, path, weave, delve);
}

std::optional<uint64_t> weave_address(const json &w) {
  if (w.is_string()) {
    auto s = w.get<std::string>();
    if (s.rfind("0x", 0) == 0)
      return std::stoull(s.substr(2), nullptr, 16);
  }
  if (w.is_number_unsigned())
    return w.get<uint64_t>();
  return std::nullopt;
}

// Delve replaces bytes that are not UTF-8 with U+FFFD when it encodes a string as JSON.
bool has_replacement(const std::string &s) { return s.find("\xEF\xBF\xBD") != std::string::npos; }

// Strips addresses and numbers from Delve's error texts, so reasons group.
std::string reason_text(const std::string &message) {
  static const std::regex numbers(R"(0x[0-9a-fA-F]+|\b\d+\b)");
  return std::regex_replace(message, numbers, "N");
}

// A variable's children (Go's JSON may leave an empty list out).
const json &kids(const json &d) {
  static const json none = json::array();
  return d.is_object() && d.contains("children") && d.at("children").is_array() ? d.at("children") : none;
}

void compare_value(Ctx &ctx, const json &w, const json &d, const std::string &path, bool truncated);
bool zero_size(const json &d);

// A string or []byte: the bytes weave printed against what Delve read.
void compare_bytes(Ctx &ctx, const std::string &wbytes, std::string dbytes, uint64_t dlen, const std::string &path,
                   bool truncated, bool lossy, uint64_t base) {
  if (lossy) {
    // Delve's JSON cannot carry bytes that are not UTF-8: read them from the program's memory.
    std::optional<std::string> raw;
    if (ctx.read_memory && base != 0)
      raw = ctx.read_memory(base, dlen);
    if (!raw) {
      skip(ctx, "bytes that are not UTF-8 (Delve's JSON replaces them) and no memory to read");
      return;
    }
    dbytes = *raw;
  }
  if (truncated) {
    check(ctx, wbytes.size() < dlen, path + " (length)", std::to_string(wbytes.size()) + "+ (truncated)",
          std::to_string(dlen));
  } else if (dlen <= dbytes.size()) {
    check(ctx, wbytes.size() == dlen, path + " (length)", std::to_string(wbytes.size()), std::to_string(dlen));
  }
  size_t n = std::min(wbytes.size(), dbytes.size());
  check(ctx, wbytes.compare(0, n, dbytes, 0, n) == 0, path, printable(wbytes), printable(dbytes));
}

bool float_equal(const json &w, const std::string &dvalue, bool is32) {
  if (w.is_string()) // NaN, +Inf, -Inf
    return w.get<std::string>() == dvalue;
  if (!w.is_number())
    return false;
  if (is32)
    return static_cast<float>(w.get<double>()) == std::strtof(dvalue.c_str(), nullptr);
  return w.get<double>() == std::strtod(dvalue.c_str(), nullptr);
}

// The string field that is an error's text, for the two types whose Error() returns a field as it is
// (errors.New's *errors.errorString.s, fmt.Errorf's *fmt.wrapError.msg): Delve does not call Error().
const json *error_text(const json &dynamic) {
  std::string type = dynamic.value("type", "");
  std::string field = type == "*errors.errorString" ? "s" : type == "*fmt.wrapError" ? "msg" : "";
  if (field.empty() || dynamic.value("kind", 0) != Ptr || kids(dynamic).empty())
    return nullptr;
  for (auto &c : kids(kids(dynamic)[0]))
    if (c.value("name", "") == field && c.value("kind", 0) == String)
      return &c;
  return nullptr;
}

void compare_value(Ctx &ctx, const json &w, const json &d, const std::string &path, bool truncated) {
  std::string unreadable = d.value("unreadable", "");
  if (!unreadable.empty() && unreadable == "empty OP stack" && d.value("LocationExpr", "") == "[block] ") {
    skip(ctx, "DWARF gives no location (optimized out)");
    return;
  }
  if (!unreadable.empty()) {
    if (getenv("WEAVE_DELVE_LOG"))
      fprintf(stderr, "unreadable: %s %s: %s\n", path.c_str(), d.value("type", "").c_str(), unreadable.c_str());
    skip(ctx, "Delve cannot read it: " + reason_text(unreadable));
    return;
  }
  int kind = d.value("kind", 0);
  std::string value = d.value("value", "");
  const json &children = kids(d);
  switch (kind) {
  case Bool:
    check(ctx, w.is_boolean() && w.get<bool>() == (value == "true"), path, w.dump(), value);
    return;
  case Int: case Int8: case Int16: case Int32: case Int64:
  case Uint: case Uint8: case Uint16: case Uint32: case Uint64: case Uintptr: {
    std::string wtext = w.dump();
    if (auto a = weave_address(w); a && w.is_string())
      wtext = std::to_string(*a);
    check(ctx, w.is_number_integer() || w.is_string() ? wtext == value : false, path, w.dump(), value);
    return;
  }
  case Float32: case Float64:
    check(ctx, float_equal(w, value, kind == Float32), path, w.dump(), value);
    return;
  case Complex64: case Complex128: {
    if (!w.is_object() || children.size() != 2) {
      mismatch(ctx, path, w.dump(), value);
      return;
    }
    check(ctx, float_equal(w["real"], children[0].value("value", ""), kind == Complex64), path + ".real",
          w["real"].dump(), children[0].value("value", ""));
    check(ctx, float_equal(w["imag"], children[1].value("value", ""), kind == Complex64), path + ".imag",
          w["imag"].dump(), children[1].value("value", ""));
    return;
  }
  case String: {
    if (!w.is_string()) {
      mismatch(ctx, path, w.dump(), printable(value));
      return;
    }
    compare_bytes(ctx, weave_bytes(w.get<std::string>()), value, d.value("len", 0ull), path, truncated,
                  has_replacement(value), d.value("base", 0ull));
    return;
  }
  case Ptr: case UnsafePointer: {
    auto a = weave_address(w);
    uint64_t daddr = std::strtoull(value.c_str(), nullptr, 10);
    if (a && *a != daddr && *a != 0 && daddr != 0) {
      // Heap and stack addresses are not the same in two runs of the program (Delve's stops change
      // when the runtime allocates): nil or not is compared, the address itself only when equal.
      ++ctx.counts.compared;
      skip(ctx, "a non-nil pointer's address (addresses differ between the two runs)");
      return;
    }
    check(ctx, a && *a == daddr, path, w.dump(), value);
    return;
  }
  case Map:
    if (!w.is_object() || !w.contains("len")) {
      mismatch(ctx, path, w.dump(), "map of len " + std::to_string(d.value("len", 0ll)));
      return;
    }
    check(ctx, w["len"] == d.value("len", 0ll), path + ".len", w["len"].dump(), std::to_string(d.value("len", 0ll)));
    return;
  case Chan: {
    // Delve shows the runtime.hchan: qcount is the length, dataqsiz the capacity; nil has neither.
    long long len = 0, cap = 0;
    for (auto &c : children) {
      if (c["name"] == "qcount")
        len = std::stoll(c.value("value", "0"));
      if (c["name"] == "dataqsiz")
        cap = std::stoll(c.value("value", "0"));
    }
    if (!w.is_object() || !w.contains("len") || !w.contains("cap")) {
      mismatch(ctx, path, w.dump(), "chan of len " + std::to_string(len));
      return;
    }
    check(ctx, w["len"] == len, path + ".len", w["len"].dump(), std::to_string(len));
    check(ctx, w["cap"] == cap, path + ".cap", w["cap"].dump(), std::to_string(cap));
    return;
  }
  case Func: {
    std::string dname = value.empty() ? "nil" : value;
    std::string wname = w.is_null() ? "nil" : w.is_string() ? w.get<std::string>() : w.dump();
    check(ctx, wname == dname, path, wname, dname);
    return;
  }
  case Slice: {
    uint64_t len = d.value("len", 0ull);
    if (w.is_string()) { // []byte, which weave shows as a string
      std::string dbytes;
      for (auto &c : children)
        dbytes.push_back(static_cast<char>(std::stoi(c.value("value", "0"))));
      compare_bytes(ctx, weave_bytes(w.get<std::string>()), dbytes, len, path, truncated, false, 0);
      return;
    }
    if (w.is_object() && w.contains("len") && w.contains("cap") && !w.contains("items")) {
      // A slice of zero-size elements: weave shows its length and capacity alone.
      check(ctx, w["len"] == len, path + ".len", w["len"].dump(), std::to_string(len));
      check(ctx, w["cap"] == d.value("cap", 0ull), path + ".cap", w["cap"].dump(),
            std::to_string(d.value("cap", 0ull)));
      if (children.empty() || zero_size(children[0]))
        skip(ctx, "the items of a slice of zero-size elements");
      else
        mismatch(ctx, path + " (items)", "none", std::to_string(children.size()));
      return;
    }
    if (!w.is_object() || !w.contains("len") || !w.contains("cap") || !w.contains("items")) {
      mismatch(ctx, path, w.dump().substr(0, 200), "slice of len " + std::to_string(len));
      return;
    }
    check(ctx, w["len"] == len, path + ".len", w["len"].dump(), std::to_string(len));
    check(ctx, w["cap"] == d.value("cap", 0ull), path + ".cap", w["cap"].dump(), std::to_string(d.value("cap", 0ull)));
    const json &items = w["items"];
    check(ctx, items.size() <= len, path + " (items)", std::to_string(items.size()), "len " + std::to_string(len));
    for (size_t i = 0; i < items.size() && i < children.size(); ++i)
      compare_value(ctx, items[i], children[i], path + "[" + std::to_string(i) + "]", false);
    return;
  }
  case Array: {
    if (!w.is_array()) {
      mismatch(ctx, path, w.dump().substr(0, 200), "array");
      return;
    }
    uint64_t len = d.value("len", 0ull);
    check(ctx, w.size() <= len, path + " (items)", std::to_string(w.size()), "len " + std::to_string(len));
    for (size_t i = 0; i < w.size() && i < children.size(); ++i)
      compare_value(ctx, w[i], children[i], path + "[" + std::to_string(i) + "]", false);
    return;
  }
  case Struct: {
    if (!w.is_object()) {
      mismatch(ctx, path, w.dump().substr(0, 200), "struct " + d.value("type", ""));
      return;
    }
    std::set<std::string> seen;
    for (auto &c : children) {
      std::string name = c.value("name", "");
      seen.insert(name);
      if (!w.contains(name)) {
        if (getenv("WEAVE_DELVE_LOG"))
          fprintf(stderr, "left out: %s.%s %s\n", path.c_str(), name.c_str(), c.value("type", "").c_str());
        skip(ctx, zero_size(c) ? "a zero-size struct field the tracer's value leaves out"
                       : "a struct field the tracer's value leaves out");
        continue;
      }
      compare_value(ctx, w[name], c, path + "." + name, false);
    }
    for (auto &[name, _] : w.items())
      if (!seen.count(name))
        skip(ctx, "a struct field Delve does not list");
    return;
  }
  case Interface: {
    if (children.empty() || children[0].value("kind", 0) == 0) {
      check(ctx, w.is_null(), path, w.dump(), "nil");
      return;
    }
    const json &dyn = children[0];
    std::string dtype = dyn.value("type", "");
    if (!w.is_object() || !w.contains("type")) {
      mismatch(ctx, path, w.dump().substr(0, 200), dtype);
      return;
    }
    check(ctx, w["type"] == dtype, path + " (dynamic type)", w["type"].dump(), dtype);
    int dkind = dyn.value("kind", 0);
    if (w.contains("value") && weave_address(w["value"]) && w["value"].is_string() && dkind != Ptr &&
        dkind != UnsafePointer) {
      // A map, chan or func in an interface: weave shows the data word, Delve the value behind it.
      skip(ctx, "an interface value the tracer shows by address");
    } else if (w.contains("value")) {
      compare_value(ctx, w["value"], dyn, path + ".(" + dtype + ")", false);
    } else if (w.contains("error")) {
      if (const json *text = error_text(dyn))
        compare_value(ctx, w["error"], *text, path + ".Error()", false);
      else
        skip(ctx, "an error's text that needs a call to Error()");
    } else {
      skip(ctx, "an interface value the tracer shows by address");
    }
    return;
  }
  default:
    skip(ctx, "a kind this comparison does not know: " + std::to_string(kind));
  }
}

// Go 1.19 describes some interface parameters with one register named twice
// (DW_OP_reg0 DW_OP_piece 8 DW_OP_reg0 DW_OP_piece 8): DWARF itself is wrong there.
bool names_a_register_twice(const std::string &location) {
  static const std::regex reg(R"(DW_OP_reg(\d+))");
  std::set<std::string> seen;
  for (auto it = std::sregex_iterator(location.begin(), location.end(), reg); it != std::sregex_iterator(); ++it)
    if (!seen.insert((*it)[1]).second)
      return true;
  return false;
}

// The bytes the DW_OP_piece operations of a location cover (0: not a composite location).
uint64_t piece_bytes(const std::string &location) {
  static const std::regex piece(R"(DW_OP_piece 0x([0-9a-f]+))");
  uint64_t sum = 0;
  for (auto it = std::sregex_iterator(location.begin(), location.end(), piece); it != std::sregex_iterator(); ++it)
    sum += std::stoull((*it)[1], nullptr, 16);
  return sum;
}

// A value of a type of size zero (an empty struct, an array of length zero, or of zero-size elements).
bool zero_size(const json &d) {
  int kind = d.value("kind", 0);
  if (kind == Array)
    return d.value("len", 0) == 0 || (!kids(d).empty() && zero_size(kids(d)[0]));
  if (kind == Struct) {
    for (auto &c : kids(d))
      if (!zero_size(c))
        return false;
    return d.value("len", 0) == static_cast<long long>(kids(d).size());
  }
  return false;
}

// The size of a value in memory, from Delve's view of it (amd64); 0 when it cannot tell.
uint64_t size_of(const json &d) {
  int kind = d.value("kind", 0);
  if (kind >= Int && kind <= Uintptr) {
    // Delve reports every signed integer as reflect.Int and every unsigned one as reflect.Uint:
    // the size is in the type's name (a named integer type's is not, and stays unknown).
    static const std::map<std::string, uint64_t> sizes = {
        {"int8", 1},  {"uint8", 1},  {"byte", 1},  {"int16", 2},  {"uint16", 2}, {"int32", 4},   {"uint32", 4},
        {"rune", 4},  {"int64", 8},  {"uint64", 8}, {"int", 8},   {"uint", 8},   {"uintptr", 8}};
    auto it = sizes.find(d.value("realType", d.value("type", "")));
    return it == sizes.end() ? 0 : it->second;
  }
  switch (kind) {
  case Bool: return 1;
  case Float32: return 4;
  case Float64: case Complex64:
  case Ptr: case UnsafePointer: case Chan: case Map: case Func: return 8;
  case Complex128: case String: case Interface: return 16;
  case Slice: return 24;
  case Array: {
    uint64_t len = d.value("len", 0ull);
    if (len == 0)
      return 0;
    return kids(d).empty() ? 0 : len * size_of(kids(d)[0]);
  }
  case Struct: {
    uint64_t end = 0, base = d.value("addr", 0ull);
    for (auto &c : kids(d)) {
      uint64_t s = size_of(c), a = c.value("addr", 0ull);
      if (zero_size(c)) {
        // Go pads a struct that ends in a zero-size field, so a pointer to it stays inside.
        end = std::max(end, a - base + 1);
        continue;
      }
      if (s == 0 || a < base)
        return 0;
      end = std::max(end, a - base + s);
    }
    return end;
  }
  default: return 0;
  }
}

// Parameters whose DWARF stack locations overlap another parameter's: Go 1.19 puts some stack-passed
// parameters 8 bytes off (main.Collections' pts at CFA+0x20, over p at CFA+0x30), so one of the two
// locations is wrong and Delve reads the wrong words.
std::set<std::string> overlapping(const json &delve_args) {
  std::vector<std::pair<uint64_t, const json *>> on_stack;
  for (auto &d : delve_args)
    if (!(d.value("flags", 0) & (kFakeAddress | kReturnArgument)) && d.value("addr", 0ull) != 0)
      on_stack.push_back({d.value("addr", 0ull), &d});
  std::sort(on_stack.begin(), on_stack.end(), [](auto &a, auto &b) { return a.first < b.first; });
  std::set<std::string> out;
  for (size_t i = 0; i + 1 < on_stack.size(); ++i) {
    uint64_t size = size_of(*on_stack[i].second);
    if (size > 0 && on_stack[i].first + size > on_stack[i + 1].first) {
      out.insert((*on_stack[i].second)["name"].get<std::string>());
      out.insert((*on_stack[i + 1].second)["name"].get<std::string>());
    }
  }
  return out;
}

bool holds_float(const json &d) {
  int kind = d.value("kind", 0);
  if (kind >= Float32 && kind <= Complex128)
    return true;
  if (kind == Struct || kind == Array)
    for (auto &c : kids(d))
      if (holds_float(c))
        return true;
  return false;
}

void compare_args(Ctx &ctx, const std::string &where, const json &weave_args, const json &delve_args) {
  auto overlaps = overlapping(delve_args);
  std::set<std::string> listed;
  for (auto &d : delve_args) {
    if (d.value("flags", 0) & kReturnArgument)
      continue; // a result: not set at entry
    std::string name = d.value("name", "");
    listed.insert(name);
    if (!weave_args.contains(name)) {
      // weave warns at build time about each parameter `args: all` leaves out.
      if (ctx.left_out && ctx.left_out->count(name))
        skip(ctx, "weave leaves it out by design: " + ctx.left_out->at(name));
      else if (holds_float(d) && (d.value("flags", 0) & kFakeAddress))
        skip(ctx, "a float in a register (weave refuses by design)");
      else
        skip(ctx, "a parameter the tracer's event leaves out");
      continue;
    }
    std::string location = d.value("LocationExpr", "");
    if (names_a_register_twice(location)) {
      skip(ctx, "DWARF names one register twice");
      continue;
    }
    // Go 1.19 describes a struct passed in registers piece by piece but leaves out its padding
    // (main.Header: Port 2, Flags 1, ID 4, Host 16 bytes = 23 of 24), so a debugger that assembles
    // the pieces shifts every field after the padding.
    uint64_t pieces = piece_bytes(location), size = size_of(d);
    if (pieces > 0 && size > 0 && pieces != size) {
      skip(ctx, "DWARF register pieces leave out a struct's padding");
      continue;
    }
    if (overlaps.count(name)) {
      if (getenv("WEAVE_DELVE_LOG"))
        fprintf(stderr, "overlap: %s\n", (where + ": " + name).c_str());
      skip(ctx, "DWARF stack locations overlap");
      continue;
    }
    compare_value(ctx, weave_args[name], d, where + ": " + name, ctx.truncated.count(name) > 0);
  }
  for (auto &[name, _] : weave_args.items())
    if (!listed.count(name))
      skip(ctx, "a parameter DWARF does not list (blank or unnamed)");
}

} // namespace

std::vector<json> parse_events(const std::string &text) {
  static const std::regex surrogate(R"(\\udc([89a-fA-F][0-9a-fA-F]))");
  std::vector<json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{')
      continue;
    lines.push_back(json::parse(std::regex_replace(line, surrogate, "\\ue0$1")));
  }
  return lines;
}

void compare_call(const std::string &where, const json &weave_args, const json &delve_args, Counts &counts) {
  Ctx ctx{counts};
  compare_args(ctx, where, weave_args, delve_args);
}

namespace {

// One breakpoint to set: its key in the result, and the api.Breakpoint fields that place it.
struct BreakpointAt {
  std::string key;
  json place; // {"functionName": F} or {"addr": PC}
};

// Runs `binary` under Delve to its end with the breakpoints, and returns the variables read at every
// hit (the arguments, then with `locals` the locals), with the key and the goroutine id, in the order
// Delve stopped at them.
using Stops = std::vector<std::tuple<std::string, long long, json>>;
Stops run_breakpoints(const std::string &binary, const std::vector<BreakpointAt> &at, bool locals,
                     const Options &options, Counts &counts);

} // namespace

Hits run_delve(const std::string &binary, const std::vector<std::string> &functions, const Options &options,
               Counts &counts) {
  std::vector<BreakpointAt> at;
  for (const std::string &f : functions)
    at.push_back({f, {{"functionName", f}}});
  Hits hits;
  for (auto &[f, g, args] : run_breakpoints(binary, at, false, options, counts))
    hits[{f, g}].push_back(std::move(args));
  return hits;
}

namespace {

Stops run_breakpoints(const std::string &binary, const std::vector<BreakpointAt> &at, bool locals,
                      const Options &options, Counts &counts) {
  Stops hits;
  auto deadline = Clock::now() + std::chrono::milliseconds(options.timeout_ms);
  json cfg = {{"FollowPointers", true},
              {"MaxVariableRecurse", 3},
              {"MaxStringLen", options.max_string},
              {"MaxArrayValues", options.max_array},
              {"MaxStructFields", -1}};
  try {
    Dlv dlv(options, binary);
    Rpc rpc(dlv.port(deadline), deadline, getenv("WEAVE_DELVE_LOG") ? options.work_dir + "/rpc.log" : "");
    std::map<long long, std::string> by_id;
    for (auto &[f, place] : at) {
      try {
        json spec = place;
        spec["LoadArgs"] = cfg;
        if (locals)
          spec["LoadLocals"] = cfg;
        json request = json::object();
        request["Breakpoint"] = spec;
        json bp = rpc.call("CreateBreakpoint", request);
        by_id[bp["Breakpoint"]["id"].get<long long>()] = f;
      } catch (const std::exception &e) {
        ++counts.skipped["a function Delve cannot set a breakpoint on"];
        counts.mismatches.push_back(f + ": no breakpoint: " + std::string(e.what()).substr(0, 200));
      }
    }
    counts.functions = by_id.size();
    auto examine = [&](uint64_t addr, size_t len) -> std::optional<std::string> {
      try {
        json mem = rpc.call("ExamineMemory", {{"Address", addr}, {"Length", len}});
        return base64_decode(mem["Mem"].get<std::string>());
      } catch (const std::exception &) {
        return std::nullopt;
      }
    };
    std::vector<std::tuple<std::string, long long, json>> order; // hits in the order Delve saw them
    for (;;) {
      json state = rpc.call("Command", {{"name", "continue"}})["State"];
      if (state.value("exited", false))
        break;
      bool any = false;
      // Every thread stopped at one of our breakpoints (several may hit at once); Go's JSON leaves
      // out empty fields, so each is looked up with a default.
      json threads = state.contains("Threads") && state["Threads"].is_array() ? state["Threads"]
                                                                              : json::array({state.value("currentThread", json())});
      for (auto &t : threads) {
        if (!t.is_object() || !t.contains("breakPoint") || !t["breakPoint"].is_object())
          continue;
        auto id = t["breakPoint"].value("id", -1ll);
        if (!by_id.count(id))
          continue;
        any = true;
        json info = t.value("breakPointInfo", json::object());
        json args = info.is_object() ? info.value("arguments", json::array()) : json::array();
        if (!args.is_array())
          args = json::array();
        if (locals && info.is_object() && info.contains("locals") && info["locals"].is_array())
          for (auto &l : info["locals"])
            args.push_back(l);
        order.emplace_back(by_id[id], t.value("goroutineID", 0ll), args);
      }
      if (!any)
        throw std::runtime_error("dlv stopped for no breakpoint of ours: " + state.dump().substr(0, 300));
      for (auto &[f, g, args] : order) {
        // Delve's JSON replaces bytes that are not UTF-8: read such strings' bytes now, while the
        // program is stopped at the call.
        std::function<void(json &)> fill = [&](json &v) {
          if (v.value("kind", 0) == String && has_replacement(v.value("value", "")) && !v.contains("raw")) {
            auto raw = examine(v.value("base", 0ull), std::min<uint64_t>(v.value("len", 0ull), options.max_string));
            if (raw)
              v["raw"] = json::binary(std::vector<uint8_t>(raw->begin(), raw->end()));
          }
          if (v.contains("children"))
            for (auto &c : v["children"])
              fill(c);
        };
        for (auto &a : args)
          fill(a);
        hits.emplace_back(f, g, args);
      }
      order.clear();
    }
    try {
      rpc.call("Detach", {{"Kill", true}});
    } catch (const std::exception &) {
      // dlv may close the connection as it exits
    }
    dlv.finish(5000);
  } catch (const std::exception &e) {
    counts.error = e.what();
  }
  return hits;
}

} // namespace

LeftOut left_out_from_manifest(const json &manifest) {
  static const std::regex entry(R"(^parameter ([^:]+): .*(\[[a-z0-9-]+\])\s*$)");
  LeftOut out;
  for (auto &p : manifest.value("probes", json::array()))
    for (auto &text : p.value("skipped", json::array())) {
      std::smatch m;
      std::string t = text.is_string() ? text.get<std::string>() : "";
      if (std::regex_search(t, m, entry))
        out[p.value("function", "")][m[1]] = m[2];
    }
  return out;
}

std::vector<std::string> functions_from_manifest(const json &manifest) {
  std::vector<std::string> functions;
  std::set<std::string> seen;
  for (auto &p : manifest.value("probes", json::array()))
    if (p.value("kind", "") == "entry" && !p.contains("line") && seen.insert(p.value("function", "")).second)
      functions.push_back(p.value("function", ""));
  return functions;
}

void compare_hits(const Hits &hits_in, const std::vector<std::string> &functions, const std::vector<json> &events,
                  Counts &counts, const LeftOut &left_out) {
  Hits hits = hits_in;
  std::map<std::pair<std::string, long long>, std::vector<const json *>> entries;
  std::set<std::string> wanted(functions.begin(), functions.end());
  for (auto &e : events)
    if (e.value("kind", "") == "entry" && wanted.count(e.value("function", "")))
      entries[{e["function"].get<std::string>(), e.value("goid", 0ll)}].push_back(&e);
  std::set<std::pair<std::string, long long>> keys;
  for (auto &[k, _] : entries)
    keys.insert(k);
  for (auto &[k, _] : hits)
    keys.insert(k);
  for (auto &key : keys) {
    auto &ws = entries[key];
    auto &ds = hits[key];
    std::string who = key.first + " goroutine " + std::to_string(key.second);
    if (ws.size() != ds.size())
      counts.mismatches.push_back(who + ": calls: weave " + std::to_string(ws.size()) + ", delve " +
                                  std::to_string(ds.size()));
    for (size_t i = 0; i < ws.size() && i < ds.size(); ++i) {
      Ctx ctx{counts};
      if (auto it = left_out.find(key.first); it != left_out.end())
        ctx.left_out = &it->second;
      if (ws[i]->contains("truncated"))
        for (auto &t : (*ws[i])["truncated"])
          ctx.truncated.insert(t.get<std::string>());
      // Raw bytes read at the breakpoint stand in for strings Delve's JSON replaced.
      const json &dargs = ds[i];
      ctx.read_memory = [&dargs](uint64_t addr, size_t len) -> std::optional<std::string> {
        std::optional<std::string> found;
        std::function<void(const json &)> find = [&](const json &v) {
          if (found)
            return;
          if (v.contains("raw") && v.value("base", 0ull) == addr) {
            auto &bin = v["raw"].get_binary();
            found = std::string(bin.begin(), bin.end()).substr(0, len);
          }
          if (v.contains("children"))
            for (auto &c : v["children"])
              find(c);
        };
        for (auto &a : dargs)
          find(a);
        return found;
      };
      ++counts.calls;
      compare_args(ctx, who + " call " + std::to_string(i + 1), (*ws[i]).value("args", json::object()), dargs);
    }
  }
}

Counts compare(const std::string &binary, const std::vector<std::string> &functions, const std::vector<json> &events,
               const Options &options, const LeftOut &left_out) {
  Counts counts;
  Hits hits = run_delve(binary, functions, options, counts);
  if (counts.error.empty())
    compare_hits(hits, functions, events, counts, left_out);
  return counts;
}

std::vector<LinePoint> line_points_from_manifest(const json &manifest) {
  std::vector<LinePoint> points;
  for (auto &p : manifest.value("probes", json::array())) {
    if (!p.contains("line") || !p["line"].is_object())
      continue;
    LinePoint point;
    point.pc = p["line"].value("pc", 0ull);
    point.probe = p.value("name", "");
    for (auto &c : p.value("captures", json::array()))
      if (c.contains("unavailable"))
        point.refused[c.value("expr", "")] = c["unavailable"].get<std::string>();
    // "NAME: why" for values `locals: all` leaves out.
    for (auto &text : p.value("skipped", json::array()))
      if (text.is_string()) {
        std::string t = text.get<std::string>();
        if (auto colon = t.find(": "); colon != std::string::npos && colon > 0)
          point.refused.emplace(t.substr(0, colon), t.substr(colon + 2));
      }
    points.push_back(std::move(point));
  }
  return points;
}

LineHits run_delve_lines(const std::string &binary, const std::vector<LinePoint> &points, const Options &options,
                         Counts &counts) {
  std::vector<BreakpointAt> at;
  for (const LinePoint &p : points)
    at.push_back({std::to_string(p.pc), {{"addr", p.pc}}});
  // Matched per PC in the order Delve stopped there: the tracer's events of one PC come in the order
  // the program ran it, whichever goroutine ran it.
  LineHits out;
  for (auto &[key, g, vars] : run_breakpoints(binary, at, true, options, counts))
    out[std::stoull(key)].push_back(std::move(vars));
  return out;
}

void compare_line_hits(const LineHits &hits, const std::vector<LinePoint> &points, const std::vector<json> &events,
                       Counts &counts) {
  std::map<uint64_t, std::vector<const json *>> seen;
  for (auto &e : events)
    if (e.value("kind", "") == "line" && e.contains("pc"))
      if (auto pc = weave_address(e["pc"]))
        seen[*pc].push_back(&e);
  constexpr int kShadowed = 2;
  for (const LinePoint &point : points) {
    auto found = hits.find(point.pc);
    static const std::vector<json> none;
    const std::vector<json> &ds = found == hits.end() ? none : found->second;
    auto &ws = seen[point.pc];
    char pc[32];
    snprintf(pc, sizeof pc, "%#llx", static_cast<unsigned long long>(point.pc));
    std::string who = point.probe + " pc " + pc;
    if (ws.size() != ds.size())
      counts.mismatches.push_back(who + ": hits: weave " + std::to_string(ws.size()) + ", delve " +
                                  std::to_string(ds.size()));
    for (size_t i = 0; i < ws.size() && i < ds.size(); ++i) {
      Ctx ctx{counts};
      ++counts.calls;
      std::string where = who + " hit " + std::to_string(i + 1);
      const json &locals = ws[i]->contains("locals") ? (*ws[i])["locals"] : json::object();
      std::set<std::string> listed;
      for (auto &d : ds[i]) {
        std::string name = d.value("name", "");
        if (d.value("flags", 0) & kShadowed) {
          skip(ctx, "hidden by an inner declaration of the same name (both show the inner one)");
          continue;
        }
        if (d.value("flags", 0) & kReturnArgument) {
          skip(ctx, "a result (not yet set at a line)");
          continue;
        }
        listed.insert(name);
        if (!locals.contains(name)) {
          auto why = point.refused.find(name);
          skip(ctx, why == point.refused.end() ? "not among weave's locals at the line"
                                               : "weave leaves it out: " + reason_text(why->second));
          continue;
        }
        if (locals[name].is_null()) {
          auto why = point.refused.find(name);
          std::string unreadable = d.value("unreadable", "");
          if (!unreadable.empty()) { // neither reads it
            skip(ctx, "weave refuses it, and Delve cannot read it: " + reason_text(unreadable));
            continue;
          }
          ++counts.refused;
          skip(ctx, "weave refuses it: " + (why == point.refused.end() ? std::string("(no reason in the manifest)")
                                                                         : reason_text(why->second)));
          continue;
        }
        compare_value(ctx, locals[name], d, where + ": " + name, false);
      }
      for (auto &[name, _] : locals.items())
        if (!listed.count(name)) {
          if (getenv("WEAVE_DELVE_LOG"))
            fprintf(stderr, "not listed by Delve: %s: %s\n", where.c_str(), name.c_str());
          skip(ctx, "a local Delve does not list at the PC");
        }
    }
  }
}

std::string report(const Counts &counts, size_t max_mismatches) {
  std::ostringstream out;
  out << "delve oracle: " << counts.functions << " functions, " << counts.calls << " calls, " << counts.compared
      << " values compared, " << counts.mismatches.size() << " mismatches\n";
  for (auto &[reason, n] : counts.skipped)
    out << "  skipped " << n << ": " << reason << "\n";
  if (counts.refused)
    out << "  " << counts.refused << " values Delve reads that weave refuses (the \"weave refuses it\" reasons above)\n";
  for (size_t i = 0; i < counts.mismatches.size() && i < max_mismatches; ++i)
    out << "  MISMATCH " << counts.mismatches[i] << "\n";
  if (counts.mismatches.size() > max_mismatches)
    out << "  ... " << counts.mismatches.size() - max_mismatches << " more\n";
  if (!counts.error.empty())
    out << "  ERROR " << counts.error << "\n";
  return out.str();
}

} // namespace delve_oracle

// Real services nobody here wrote, traced as a user would trace them: Caddy, etcd and nats-server,
// built from the Go module proxy with Go 1.26 (tests/services/build.sh: with DWARF, stripped, PIE),
// each driven by its own real client (curl; the official etcd and NATS Go clients), each with the
// spec a user would write, and every traced value compared with what the client sent and, where the
// server logs it, with the server's own log (Caddy's access log, nats-server's protocol trace).
//
// Each case traces its own copy of the server (uprobes follow the file, so parallel cases never see
// each other's calls), on ports the server picked or that were free a moment before, and kills the
// server and the tracer by the pids it started. Without root every case exits 77 (skipped), and so
// it does when the services cannot be built because the module proxy is unreachable.
#include "harness.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <netinet/in.h>
#include <regex>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The bin directory of the built services (bin/VARIANT/NAME); the first call may build them all
// from nothing (cold: minutes), later ones only check the stamps.
std::string services_bin() {
  static std::string bin;
  if (!bin.empty())
    return bin;
  auto built = e2e::run({"sh", e2e::source("tests/services/build.sh")}, 3600 * 1000);
  if (built.status == 77) {
    MESSAGE("skipped: " << built.err);
    std::exit(77);
  }
  INFO(built.err);
  REQUIRE(built.status == 0);
  bin = built.out.substr(0, built.out.find('\n'));
  REQUIRE(!bin.empty());
  if (!built.err.empty())
    MESSAGE(built.err);
  return bin;
}

// The server of `variant` copied into `dir` (its own inode: the tracer follows this file only).
std::string own_copy(const std::string &variant, const std::string &name, const std::string &dir) {
  std::string copy = dir + "/" + name;
  std::string built = services_bin() + "/" + variant + "/" + name;
  if (variant == "pie" && !fs::exists(built)) {
    MESSAGE("skipped: no PIE build of " << name << " (WEAVE_SERVICES_PIE leaves it out)");
    std::exit(77);
  }
  fs::copy_file(built, copy, fs::copy_options::overwrite_existing);
  return copy;
}

// Builds the tracer for `spec` on `binary`; the build's output, and its status (0 when built).
e2e::Result build(const std::string &dir, const std::string &binary, const std::string &spec) {
  std::ofstream(dir + "/spec.yaml") << spec;
  fs::remove_all(dir + "/out");
  return e2e::run({e2e::weave(), dir + "/spec.yaml", binary, "-o", dir + "/out"}, 900000);
}

// The tracer running (every process of the binary, JSON lines into dir/events.jsonl), attached.
e2e::Background start_tracer(const std::string &dir) {
  e2e::Background traced = e2e::spawn({dir + "/out/tracer", "--format", "json", "-o", dir + "/events.jsonl"}, dir);
  bool attached = traced.wait_for_err("Ctrl-C to stop", 300000);
  INFO(traced.read_err());
  REQUIRE(attached);
  return traced;
}

// Waits until the server's stderr says `text`, or it exits.
void wait_ready(e2e::Background &server, const std::string &text) {
  bool ready = false;
  for (int i = 0; i < 600 && !ready; ++i) { // 5 min, or until it has exited
    ready = server.wait_for_err(text, 500);
    if (!ready && waitpid(server.pid, nullptr, WNOHANG) == server.pid)
      break;
  }
  INFO(server.read_err());
  REQUIRE(ready);
}

// Stops the server (SIGTERM, by its pid), then the tracer (SIGINT), and returns the tracer's events.
std::vector<json> stop(e2e::Background &server, e2e::Background &traced, const std::string &dir) {
  if (server.pid > 0) { // not yet stopped by the case itself (wait() leaves -1: never kill(-1))
    kill(server.pid, SIGTERM);
    server.wait(60000);
  }
  kill(traced.pid, SIGINT);
  int status = traced.wait(60000);
  INFO(traced.read_err());
  REQUIRE(status == 0);
  return e2e::json_lines(e2e::read_file(dir + "/events.jsonl"));
}

// A probe's events of one kind, in time order.
std::vector<json> events_of(const std::vector<json> &events, const std::string &function, const std::string &kind) {
  std::vector<json> out;
  for (const json &e : events)
    if (e.value("function", "") == function && e.value("kind", "") == kind)
      out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const json &a, const json &b) { return a["ts_ns"] < b["ts_ns"]; });
  return out;
}

// Go's own traceback of every goroutine (what SIGQUIT prints): the ids of the goroutines whose
// stack has a frame of `function`.
std::set<int64_t> goroutines_running(const std::string &traceback, const std::string &function) {
  std::set<int64_t> out;
  std::istringstream in(traceback);
  std::string line;
  int64_t goid = -1;
  static const std::regex header(R"(^goroutine (\d+) .*:$)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, header))
      goid = std::stoll(m[1]);
    else if (goid >= 0 && line.rfind(function + "(", 0) == 0)
      out.insert(goid);
  }
  return out;
}

// Line `line` of a source file the binary was built from, found as -trimpath names it: the
// standard library's under GOROOT, a module's under the services' module cache.
std::string source_line(const std::string &file, int64_t line) {
  const char *go = std::getenv("WEAVE_SERVICES_GO");
  auto goroot = e2e::run({go ? go : "/usr/local/go/bin/go", "env", "GOROOT"});
  std::string root = goroot.out.substr(0, goroot.out.find('\n'));
  std::string path = file.find('@') != std::string::npos
                         ? fs::path(services_bin()).parent_path().string() + "/gomod/" + file
                         : root + "/src/" + file;
  std::ifstream in(path);
  std::string text;
  for (int64_t i = 0; i < line && std::getline(in, text); ++i) {
  }
  INFO(path << ":" << line);
  REQUIRE(in.good());
  return text;
}

// Counts the values compared, for the summary each case prints.
struct Tally {
  size_t values = 0;
  template <class A, class B> void eq(const A &traced, const B &truth, const std::string &what) {
    INFO(what);
    CHECK(traced == truth);
    ++values;
  }
};

// Every return of `function` paired with its entry: one per entry, each with a duration.
void check_returns(const std::vector<json> &events, const std::string &function, size_t calls, Tally &t) {
  auto returns = events_of(events, function, "return");
  t.eq(returns.size(), calls, function + ": returns");
  for (const json &r : returns) {
    INFO(r.dump());
    CHECK(r.contains("duration_ns"));
    CHECK(!r.contains("faults"));
  }
}

// A string value as JSON has it, or "<fault>".
std::string str(const json &args, const std::string &key) {
  if (!args.contains(key) || !args[key].is_string())
    return "<" + (args.contains(key) ? args[key].dump() : std::string("absent")) + ">";
  return args[key].get<std::string>();
}

// "/ok/a%2Fb0" -> "/ok/a/b0": a logged URI's path as Go decodes it into URL.Path.
std::string percent_decoded(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool variant_stripped(const std::string &variant) { return variant == "stripped"; }

// Stripped binaries have no DWARF: the spec declares the signature by the binary's own type names,
// which weave resolves from the runtime's type descriptors.
void build_or_fail(const std::string &dir, const std::string &binary, const std::string &spec) {
  auto built = build(dir, binary, spec);
  INFO(built.err);
  REQUIRE(built.status == 0);
}

// ---------------------------------------------------------------------------------------------
// Caddy: curl over HTTP/1.0, HTTP/1.1 and h2c; the access log is Caddy's own record.

const char *kCaddyFunction = "github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP";

// Default settings: an exactly named function also probes its inlined copies (none here), and the
// binary's go.opentelemetry.io/otel/semconv init (inline records with no call site) is read whole.
const char *kCaddySpec = R"Y(probes:
  - function: github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP
    capture: [r.Method, r.URL.Path, r.URL.RawQuery, r.Host, r.Proto, r.ContentLength]
    return: true
)Y";

const char *kCaddyTypedSpec = R"Y(probes:
  - function: github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP
    params:
      - {name: s, type: "*github.com/caddyserver/caddy/v2/modules/caddyhttp.Server"}
      - {name: w, type: "net/http.ResponseWriter"}
      - {name: r, type: "*net/http.Request"}
    results: []
    capture: [r.Method, r.URL.Path, r.URL.RawQuery, r.Host, r.Proto, r.ContentLength]
    return: true
)Y";

struct HttpRequest {
  std::string version; // curl's option
  std::string proto;   // what the server sees
  std::string method, path, raw_query, host, body;
};

void trace_caddy(const std::string &variant) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("services_caddy_" + variant);
  std::string caddy = own_copy(variant, "caddy", dir);
  build_or_fail(dir, caddy, variant_stripped(variant) ? kCaddyTypedSpec : kCaddySpec);

  int port = e2e::free_port();
  std::string access_log = dir + "/access.log";
  std::ofstream(dir + "/Caddyfile") << "{\n"
                                       "\tadmin off\n"
                                       "\tpersist_config off\n"
                                       "\tauto_https off\n"
                                       "\tservers {\n"
                                       "\t\tprotocols h1 h2 h2c\n"
                                       "\t}\n"
                                       "}\n"
                                       "http://:" << port << " {\n"
                                       "\tbind " << e2e::loopback() << "\n"
                                       "\tlog {\n"
                                       "\t\toutput file " << access_log << "\n"
                                       "\t\tformat json\n"
                                       "\t}\n"
                                       // The body placeholder reads the whole body: HTTP/2 streams
                                       // end cleanly, and the access log's bytes_read is its size.
                                       "\trespond \"weave {method} {path} {http.request.body}\" 200\n"
                                       "}\n";
  e2e::Background traced = start_tracer(dir);
  setenv("XDG_DATA_HOME", (dir + "/data").c_str(), 1);
  setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
  setenv("GOTRACEBACK", "all", 1);
  e2e::Background server = e2e::spawn({caddy, "run", "--config", dir + "/Caddyfile", "--adapter", "caddyfile"}, dir);
  wait_ready(server, "serving initial configuration");

  // Each protocol with each method and a path that decodes (%2F), a query, a Host of its own and
  // bodies of several sizes; HEAD asks for no body and gets none.
  std::vector<HttpRequest> requests;
  std::string local = e2e::loopback() + ":" + std::to_string(port);
  const std::vector<std::pair<std::string, std::string>> versions = {
      {"--http1.0", "HTTP/1.0"}, {"--http1.1", "HTTP/1.1"}, {"--http2-prior-knowledge", "HTTP/2.0"}};
  for (int round = 0; round < 3; ++round)
    for (const auto &[option, proto] : versions) {
      std::string n = std::to_string(round);
      requests.push_back({option, proto, "GET", "/ok/" + n, "", local, ""});
      requests.push_back({option, proto, "GET", "/ok/a/b" + n, "x=" + n + "&y=z", "weave-" + n + ".test", ""});
      requests.push_back({option, proto, "POST", "/post/" + n, "", local, std::string(size_t(round) * 97 + 5, 'p')});
      requests.push_back({option, proto, "HEAD", "/head", "q", local, ""});
    }
  for (const HttpRequest &r : requests) {
    std::string url = "http://" + local + r.path + (r.raw_query.empty() ? "" : "?" + r.raw_query);
    if (r.path.rfind("/ok/a/b", 0) == 0) // the same path with its slash escaped: Go decodes it
      url = "http://" + local + "/ok/a%2Fb" + r.path.substr(7) + "?" + r.raw_query;
    std::vector<std::string> argv = {"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", r.version, "-H",
                                     "Host: " + r.host};
    if (r.method == "HEAD")
      argv.push_back("-I");
    else if (r.method == "POST")
      argv.insert(argv.end(), {"--data-binary", r.body});
    argv.push_back(url);
    auto got = e2e::run(argv);
    INFO(url << " " << got.err);
    REQUIRE(got.status == 0);
    CHECK(got.out == "200");
  }
  // Go's own record of the goroutines alive now: its traceback of all of them (SIGABRT with
  // GOTRACEBACK=all; Caddy handles SIGQUIT itself). The goroutine running net/http's accept loop is
  // the parent of every HTTP/1.x handler goroutine.
  kill(server.pid, SIGABRT);
  server.wait(60000);
  std::set<int64_t> accepting = goroutines_running(server.read_err(), "net/http.(*Server).Serve");
  INFO(server.read_err());
  REQUIRE(!accepting.empty());
  auto events = stop(server, traced, dir);

  Tally t;
  auto entries = events_of(events, kCaddyFunction, "entry");
  REQUIRE(entries.size() == requests.size());
  // Where each handler's goroutine came from: the created_by of its entry. An HTTP/1.x request's
  // goroutine was started by the accept loop, an HTTP/2 request's by its connection's goroutine,
  // each at a `go` statement of the source the binary was built from.
  std::set<int64_t> h2_parents;
  for (size_t i = 0; i < requests.size(); ++i) {
    const json &e = entries[i];
    INFO(e.dump());
    REQUIRE(e.contains("created_by"));
    const json &c = e["created_by"];
    static const std::regex go_statement(R"(^\s*go\s.*\(.*)");
    t.eq(std::regex_match(source_line(c.value("file", ""), c.value("line", int64_t(0))), go_statement), true,
         "created_by names a go statement");
    t.eq(c.value("goid", int64_t(-1)) != e.value("goid", int64_t(-1)), true, "created_by is another goroutine");
    if (requests[i].proto == "HTTP/2.0") {
      h2_parents.insert(c.value("goid", int64_t(-1)));
      t.eq(accepting.count(c.value("goid", int64_t(-1))), size_t(0), "an HTTP/2 handler's parent: its connection's");
    } else {
      t.eq(c.value("function", ""), std::string("net/http.(*Server).Serve"), "created_by function");
      t.eq(accepting.count(c.value("goid", int64_t(-1))), size_t(1), "created by the accept loop's goroutine");
    }
  }
  // Each curl is a connection of its own: as many HTTP/2 connection goroutines as HTTP/2 requests.
  t.eq(h2_parents.size(), size_t(std::count_if(requests.begin(), requests.end(),
                                                [](const HttpRequest &r) { return r.proto == "HTTP/2.0"; })),
       "one parent per HTTP/2 connection");
  check_returns(events, kCaddyFunction, requests.size(), t);
  std::vector<json> logged = e2e::json_lines(e2e::read_file(access_log));
  REQUIRE(logged.size() == requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const HttpRequest &r = requests[i];
    const json &a = entries[i]["args"];
    const json &log = logged[i]["request"];
    std::string uri = log.value("uri", "");
    INFO(entries[i].dump() << "\n" << logged[i].dump());
    CHECK(!entries[i].contains("faults"));
    t.eq(str(a, "r.Method"), r.method, "method");
    t.eq(str(a, "r.Method"), log.value("method", ""), "method, logged");
    t.eq(str(a, "r.URL.Path"), r.path, "path");
    t.eq(str(a, "r.URL.Path"), percent_decoded(uri.substr(0, uri.find('?'))), "path, logged");
    t.eq(str(a, "r.URL.RawQuery"), r.raw_query, "query");
    t.eq(str(a, "r.URL.RawQuery"), uri.find('?') == std::string::npos ? "" : uri.substr(uri.find('?') + 1),
         "query, logged");
    t.eq(str(a, "r.Host"), r.host, "host");
    t.eq(str(a, "r.Host"), log.value("host", ""), "host, logged");
    t.eq(str(a, "r.Proto"), r.proto, "proto");
    t.eq(str(a, "r.Proto"), log.value("proto", ""), "proto, logged");
    t.eq(a.value("r.ContentLength", json()), json(int64_t(r.body.size())), "content length");
    t.eq(a.value("r.ContentLength", json()), logged[i].value("bytes_read", json()), "content length, bytes read");
    if (log.contains("headers") && log["headers"].contains("Content-Length"))
      t.eq(a.value("r.ContentLength", json()).dump(), log["headers"]["Content-Length"][0].get<std::string>(),
           "content length, logged");
  }
  MESSAGE("caddy " << variant << ": " << requests.size() << " requests, " << entries.size() << " calls of "
                   << std::string(kCaddyFunction) << ", " << t.values << " values compared");
}

// ---------------------------------------------------------------------------------------------
// etcd: puts through the official Go client, which prints what it sent and the revision it got.

const char *kEtcdFunction = "go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).Put";

// The revision each put got is read at the return through the result, `~r0.Header.Revision`.
const char *kEtcdSpec = R"Y(probes:
  - function: go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).Put
    capture: [r.Key, r.Value, "len(r.Value)", r.Lease]
    capture_at_return: ["~r0.Header.Revision"]
    return: true
)Y";

const char *kEtcdTypedSpec = R"Y(probes:
  - function: go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).Put
    params:
      - {name: s, type: "*go.etcd.io/etcd/server/v3/etcdserver.EtcdServer"}
      - {name: ctx, type: "context.Context"}
      - {name: r, type: "*go.etcd.io/etcd/api/v3/etcdserverpb.PutRequest"}
    results:
      - {name: ~r0, type: "*go.etcd.io/etcd/api/v3/etcdserverpb.PutResponse"}
      - {name: ~r1, type: error}
    capture: [r.Key, r.Value, "len(r.Value)", r.Lease]
    capture_at_return: ["~r0.Header.Revision"]
    return: true
)Y";

void trace_etcd(const std::string &variant) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("services_etcd_" + variant);
  std::string etcd = own_copy(variant, "etcd", dir);
  build_or_fail(dir, etcd, variant_stripped(variant) ? kEtcdTypedSpec : kEtcdSpec);

  std::string client_url = "http://" + e2e::loopback() + ":" + std::to_string(e2e::free_port());
  std::string peer_url = "http://" + e2e::loopback() + ":" + std::to_string(e2e::free_port());
  e2e::Background traced = start_tracer(dir);
  e2e::Background server = e2e::spawn({etcd, "--name", "weave", "--data-dir", dir + "/data", "--listen-client-urls",
                                       client_url, "--advertise-client-urls", client_url, "--listen-peer-urls",
                                       peer_url, "--initial-advertise-peer-urls", peer_url, "--initial-cluster",
                                       "weave=" + peer_url},
                                      dir);
  wait_ready(server, "ready to serve client requests");
  const int puts = 24;
  auto client = e2e::run({services_bin() + "/default/etcd-client", "-endpoint", client_url, "-n",
                          std::to_string(puts)},
                         300000);
  INFO(client.err);
  REQUIRE(client.status == 0);
  auto sent = e2e::json_lines(client.out);
  REQUIRE(sent.size() == size_t(puts));
  auto events = stop(server, traced, dir);

  Tally t;
  auto entries = events_of(events, kEtcdFunction, "entry");
  auto returns = events_of(events, kEtcdFunction, "return");
  REQUIRE(entries.size() == sent.size());
  check_returns(events, kEtcdFunction, sent.size(), t);
  for (size_t i = 0; i < sent.size(); ++i) {
    const json &a = entries[i]["args"];
    INFO(entries[i].dump() << "\n" << returns[i].dump() << "\n" << sent[i].dump());
    CHECK(!entries[i].contains("faults"));
    std::string value = sent[i]["value"];
    t.eq(str(a, "r.Key"), sent[i]["key"].get<std::string>(), "key");
    // Longer values are cut at string_max (64 by default), marked truncated; their length is whole.
    t.eq(str(a, "r.Value"), value.substr(0, 64), "value");
    bool truncated = entries[i].contains("truncated") &&
                     std::find(entries[i]["truncated"].begin(), entries[i]["truncated"].end(), "r.Value") !=
                         entries[i]["truncated"].end();
    t.eq(truncated, value.size() > 64, "value truncated");
    t.eq(a.value("len(r.Value)", json()), json(value.size()), "len(value)");
    t.eq(a.value("r.Lease", json()), sent[i]["lease"], "lease");
    t.eq(returns[i]["results"].value("~r1", json("absent")), json(nullptr), "no error: the client got its revision");
    t.eq(returns[i]["results"].value("~r0.Header.Revision@return", json("absent")), sent[i]["revision"],
         "revision, read through the result");
  }
  // Each put is one revision more than the one before: the server applied them in the order traced.
  for (size_t i = 1; i < sent.size(); ++i)
    CHECK(sent[i]["revision"].get<int64_t>() == sent[i - 1]["revision"].get<int64_t>() + 1);
  MESSAGE("etcd " << variant << ": " << puts << " puts, " << entries.size() << " calls of "
                  << std::string(kEtcdFunction) << ", " << t.values << " values compared");
}

// ---------------------------------------------------------------------------------------------
// nats-server: the official Go client publishes; nats-server's protocol trace (-V) logs each PUB.

const char *kNatsPub = "github.com/nats-io/nats-server/v2/server.(*client).processPub";
const char *kNatsMsg = "github.com/nats-io/nats-server/v2/server.(*client).processInboundClientMsg";

// `c.pa` is a promoted field: client embeds parseState, which holds pa.
const char *kNatsSpec = R"Y(probes:
  - function: github.com/nats-io/nats-server/v2/server.(*client).processPub
    capture: [arg]
    capture_at_return: [c.pa.subject, c.pa.reply, c.pa.size]
    return: true
    stack: 1
  - function: github.com/nats-io/nats-server/v2/server.(*client).processInboundClientMsg
    capture: [c.pa.subject, c.pa.reply, c.pa.size, "len(msg)"]
    return: true
)Y";

const char *kNatsTypedSpec = R"Y(probes:
  - function: github.com/nats-io/nats-server/v2/server.(*client).processPub
    params:
      - {name: c, type: "*github.com/nats-io/nats-server/v2/server.client"}
      - {name: arg, type: "[]byte"}
    results: [{name: ~r0, type: error}]
    capture: [arg]
    capture_at_return: [c.pa.subject, c.pa.reply, c.pa.size]
    return: true
    stack: 1
  - function: github.com/nats-io/nats-server/v2/server.(*client).processInboundClientMsg
    params:
      - {name: c, type: "*github.com/nats-io/nats-server/v2/server.client"}
      - {name: msg, type: "[]byte"}
    capture: [c.pa.subject, c.pa.reply, c.pa.size, "len(msg)"]
    return: true
)Y";

void trace_nats(const std::string &variant) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("services_nats_" + variant);
  std::string nats = own_copy(variant, "nats-server", dir);
  build_or_fail(dir, nats, variant_stripped(variant) ? kNatsTypedSpec : kNatsSpec);

  e2e::Background traced = start_tracer(dir);
  // -p -1: a port of the server's choosing, which it logs; -V: each protocol line it reads, logged.
  e2e::Background server = e2e::spawn({nats, "-a", "127.0.0.1", "-p", "-1", "-V"}, dir);
  wait_ready(server, "Server is ready");
  std::smatch m;
  std::string log = server.read_err();
  REQUIRE(std::regex_search(log, m, std::regex("Listening for client connections on 127\\.0\\.0\\.1:([0-9]+)")));
  const int messages = 24;
  auto client = e2e::run({services_bin() + "/default/nats-client", "-url", "nats://127.0.0.1:" + m[1].str(), "-n",
                          std::to_string(messages)},
                         300000);
  INFO(client.err);
  REQUIRE(client.status == 0);
  auto sent = e2e::json_lines(client.out);
  REQUIRE(sent.size() == size_t(messages));
  auto events = stop(server, traced, dir);

  // The server's own record: `<<- [PUB subject [reply] size]` for each PUB it read.
  std::vector<std::string> pubs;
  log = server.read_err();
  std::regex pub_line("<<- \\[PUB ([^\\]]*)\\]");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), pub_line); it != std::sregex_iterator(); ++it)
    pubs.push_back((*it)[1].str());
  REQUIRE(pubs.size() == sent.size());

  Tally t;
  auto entries = events_of(events, kNatsPub, "entry");
  auto returns = events_of(events, kNatsPub, "return");
  check_returns(events, kNatsPub, entries.size(), t);
  // processInboundClientMsg also carries the server's own messages ($SYS...): ours are weave.*.
  std::vector<json> inbound;
  size_t others = 0;
  for (const json &e : events_of(events, kNatsMsg, "entry")) {
    if (str(e["args"], "c.pa.subject").rfind("weave.", 0) == 0)
      inbound.push_back(e);
    else
      ++others;
  }
  REQUIRE(inbound.size() == sent.size());
  // The parser calls processPub once per PUB it reads, and again on its own copy of the arguments
  // when the payload did not arrive in the same read (clonePubArg): the caller tells them apart.
  size_t next = 0, clones = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    INFO(entries[k].dump());
    REQUIRE(entries[k].contains("stack"));
    REQUIRE(!entries[k]["stack"].empty());
    std::string caller = entries[k]["stack"][0].value("function", "");
    bool clone = caller.size() >= 13 && caller.compare(caller.size() - 13, 13, ").clonePubArg") == 0;
    size_t i = next;
    if (clone) {
      REQUIRE(next > 0);
      i = next - 1;
      ++clones;
    } else {
      t.eq(caller, std::string("github.com/nats-io/nats-server/v2/server.(*client).parse"), "processPub's caller");
      REQUIRE(next < sent.size());
      ++next;
    }
    std::string subject = sent[i]["subject"], reply = sent[i]["reply"];
    int size = sent[i]["size"];
    std::string arg = subject + (reply.empty() ? "" : " " + reply) + " " + std::to_string(size);
    const json &a = entries[k]["args"];
    const json &r = returns[k]["results"];
    INFO(returns[k].dump() << "\n" << sent[i].dump());
    CHECK(!entries[k].contains("faults"));
    t.eq(str(a, "arg"), arg, "PUB arguments");
    t.eq(str(a, "arg"), pubs[i], "PUB arguments, logged");
    t.eq(str(r, "c.pa.subject@return"), subject, "subject parsed");
    t.eq(str(r, "c.pa.reply@return"), reply, "reply parsed");
    t.eq(r.value("c.pa.size@return", json()), json(size), "size parsed");
    t.eq(r.value("~r0", json("absent")), json(nullptr), "no error: the server answered no -ERR");
  }
  t.eq(next, sent.size(), "PUBs read");
  for (size_t i = 0; i < sent.size(); ++i) {
    std::string subject = sent[i]["subject"], reply = sent[i]["reply"];
    int size = sent[i]["size"];
    const json &in = inbound[i]["args"];
    INFO(inbound[i].dump() << "\n" << sent[i].dump());
    CHECK(!inbound[i].contains("faults"));
    t.eq(str(in, "c.pa.subject"), subject, "subject delivered");
    t.eq(str(in, "c.pa.reply"), reply, "reply delivered");
    t.eq(in.value("c.pa.size", json()), json(size), "size delivered");
    t.eq(in.value("len(msg)", json()), json(size + 2), "len(msg): the payload and its CRLF");
  }
  MESSAGE("nats " << variant << ": " << messages << " messages, " << entries.size() << " calls of "
                  << std::string(kNatsPub) << " (" << clones << " on a copy of the arguments), " << inbound.size()
                  << " of " << std::string(kNatsMsg) << " (and " << others << " of the server's own), " << t.values
                  << " values compared");
}

// ---------------------------------------------------------------------------------------------
// Caddy's interface values and errors: the tracer names each dynamic type from Caddy's own type
// descriptors (25,000 of them), read from the binary as they appear; a module compiled into this
// Caddy (plugins/caddytypes) prints the same values' types with %T and reflect.

// The plugin build: Caddy plus the module, built by plugins/build.sh into the services cache.
std::string caddytypes_binary(const std::string &dir) {
  services_bin(); // the module downloads and build cache it shares
  auto built = e2e::run({"sh", e2e::source("tests/services/plugins/build.sh")}, 3600 * 1000);
  if (built.status == 77) {
    MESSAGE("skipped: " << built.err);
    std::exit(77);
  }
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::string copy = dir + "/caddytypes";
  fs::copy_file(built.out.substr(0, built.out.find('\n')) + "/caddytypes", copy, fs::copy_options::overwrite_existing);
  return copy;
}

const char *kCaddyTypesSpec = R"Y(probes:
  - function: main.Check
    capture: [path, w, body, next, err]
    return: true
)Y";

TEST_CASE("caddy: interface and error types named from the binary, as Caddy's own module prints them (%T)") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("services_caddy_types");
  std::string caddy = caddytypes_binary(dir);
  build_or_fail(dir, caddy, kCaddyTypesSpec);
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  CHECK_FALSE(manifest.contains("types"));
  CHECK(manifest.contains("type_descriptors"));
  MESSAGE("manifest: " << fs::file_size(dir + "/out/probes.json") << " bytes");

  int port = e2e::free_port();
  fs::create_directories(dir + "/site");
  std::ofstream(dir + "/site/index.html") << "weave\n";
  json route_types = {{"handle", {{{"handler", "weave_types"}}}}};
  json ok = {{"match", {{{"path", {"/ok*"}}}}}, {"handle", {{{"handler", "static_response"}, {"body", "ok {http.request.body}"}}}}};
  json teapot = {{"match", {{{"path", {"/err*"}}}}},
                 {"handle", {{{"handler", "error"}, {"status_code", 418}, {"error", "teapot"}}}}};
  json files = {{"handle", {{{"handler", "file_server"}, {"root", dir + "/site"}}}}};
  json config = {{"admin", {{"disabled", true}, {"config", {{"persist", false}}}}},
                 {"apps",
                  {{"http",
                    {{"servers",
                      {{"s",
                        {{"listen", {"127.0.0.1:" + std::to_string(port)}},
                         {"protocols", {"h1", "h2", "h2c"}},
                         {"automatic_https", {{"disable", true}}},
                         {"routes", {route_types, ok, teapot, files}}}}}}}}}}};
  std::ofstream(dir + "/caddy.json") << config.dump(2);
  e2e::Background traced = start_tracer(dir);
  setenv("XDG_DATA_HOME", (dir + "/data").c_str(), 1);
  setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
  setenv("WEAVE_TYPES_TRUTH", (dir + "/truth.jsonl").c_str(), 1);
  e2e::Background server = e2e::spawn({caddy, "run", "--config", dir + "/caddy.json"}, dir);
  wait_ready(server, "serving initial configuration");
  // Each protocol: a static response, an error (a HandlerError), a file, a missing file (another
  // error), a POST with a body (a body of another type than GET's). The static response reads the
  // whole body (its placeholder), so an HTTP/2 stream ends cleanly instead of being reset mid-upload.
  std::string local = "http://127.0.0.1:" + std::to_string(port);
  size_t requests = 0;
  for (const char *version : {"--http1.1", "--http2-prior-knowledge", "--http1.0"})
    for (const char *path : {"/ok/a", "/err/b", "/index.html", "/missing", "/ok/post"}) {
      std::vector<std::string> argv = {"curl", "-sS", "-o", "/dev/null", version, local + path};
      if (std::string(path) == "/ok/post")
        argv.insert(argv.end() - 1, {"--data-binary", "body"});
      auto got = e2e::run(argv);
      INFO(std::string(version) << " " << path << ": " << got.err);
      REQUIRE(got.status == 0);
      ++requests;
    }
  unsetenv("WEAVE_TYPES_TRUTH");
  auto events = stop(server, traced, dir);
  auto entries = events_of(events, "main.Check", "entry");
  auto returns = events_of(events, "main.Check", "return");
  std::vector<json> truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  REQUIRE(truth.size() == requests);
  REQUIRE(entries.size() == requests);
  REQUIRE(returns.size() == requests);
  std::set<std::string> names;
  size_t compared = 0;
  for (size_t i = 0; i < requests; ++i) {
    const json &want = truth[i];
    const json &a = entries[i]["args"];
    INFO(entries[i].dump() << "\n" << want.dump());
    REQUIRE(a.value("path", "") == want["path"].get<std::string>());
    // A type's name as %T prints it: each package path replaced by its package's name.
    auto as_printed = [&](std::string name) {
      for (auto &[path, pkg] : want["packages"].items())
        for (size_t at = name.find(path + "."); at != std::string::npos; at = name.find(path + ".", at + 1))
          if (at == 0 || std::string("*[]]) ,").find(name[at - 1]) != std::string::npos)
            name.replace(at, path.size(), pkg.get<std::string>());
      return name;
    };
    auto compare = [&](const json &got, const json &expected, const std::string &what) {
      INFO(what);
      if (expected.is_null()) {
        CHECK(got.is_null());
        return;
      }
      REQUIRE(got.is_object());
      REQUIRE(got["type"].is_string());
      CHECK(got["type"] == expected["type"]);
      CHECK(as_printed(got["type"]) == expected["T"]);
      names.insert(got["type"].get<std::string>());
      ++compared;
    };
    compare(a["w"], want["w"], "w");
    compare(a["body"], want["body"], "body");
    compare(a["next"], want["next"], "next");
    compare(a["err"], want["err"], "err");
    compare(returns[i]["results"]["~r0"], want["err"], "~r0");
  }
  // The writer, the body (Caddy wraps both), the next handler and the error: each named.
  CHECK(names.size() >= 4);
  std::string listed;
  for (const auto &n : names)
    listed += " " + n;
  MESSAGE("caddy: " << requests << " requests, " << compared << " dynamic types named as Caddy prints them:" << listed);
}

} // namespace

// `weave funcs BIN '*'` lists every function of each server: each text symbol Go's own `go tool nm`
// reports is among the names weave lists, whole-list compared (nm spells `.abi0` assembly functions
// with their ABI suffix and a function-local type's `·N` as `.N`; runtime.text, runtime.etext and
// go:textfipsstart/end mark section bounds, not functions, and have no .gopclntab entry).
void funcs_lists_every_function(const std::string &variant, const std::string &name) {
  std::string binary = services_bin() + "/" + variant + "/" + name;
  auto listed = e2e::run({e2e::weave(), "funcs", binary, "*"}, 900000);
  INFO(listed.err.substr(0, 2000));
  REQUIRE(listed.status == 0);
  CHECK(listed.err.find("error[") == std::string::npos);
  std::set<std::string> names;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == ' ')
      continue;
    std::string n = line.substr(0, line.find("  "));
    for (size_t at; (at = n.find("\xc2\xb7")) != std::string::npos;) // U+00B7 '·', which nm spells '.'
      n.replace(at, 2, ".");
    names.insert(n);
  }
  auto nm = e2e::run({"/usr/local/go/bin/go", "tool", "nm", binary}, 900000);
  INFO(nm.err.substr(0, 2000));
  REQUIRE(nm.status == 0);
  size_t symbols = 0;
  std::vector<std::string> missing;
  std::istringstream nm_lines(nm.out);
  for (std::string line; std::getline(nm_lines, line);) {
    std::istringstream fields(line);
    std::string addr, kind, sym;
    if (!(fields >> addr >> kind) || (kind != "T" && kind != "t"))
      continue;
    std::getline(fields >> std::ws, sym);
    if (sym == "runtime.text" || sym == "runtime.etext" || sym == "go:textfipsstart" || sym == "go:textfipsend")
      continue;
    if (sym.size() > 5 && sym.compare(sym.size() - 5, 5, ".abi0") == 0)
      sym.resize(sym.size() - 5);
    ++symbols;
    if (!names.count(sym))
      missing.push_back(sym);
  }
  CHECK(symbols > 1000);
  INFO("first missing: " << (missing.empty() ? std::string() : missing.front()));
  CHECK(missing.size() == 0);
  MESSAGE(name << " " << variant << ": weave funcs listed " << names.size() << " names; all " << symbols
                << " text symbols of go tool nm among them");
}

TEST_CASE("caddy with DWARF: curl's requests, as sent and as logged") { trace_caddy("default"); }
TEST_CASE("caddy stripped") { trace_caddy("stripped"); }
TEST_CASE("caddy PIE") { trace_caddy("pie"); }
TEST_CASE("etcd with DWARF: the Go client's puts") { trace_etcd("default"); }
TEST_CASE("etcd stripped") { trace_etcd("stripped"); }
TEST_CASE("etcd PIE") { trace_etcd("pie"); }
TEST_CASE("nats-server with DWARF: the Go client's messages, as sent and as logged") { trace_nats("default"); }
TEST_CASE("nats-server stripped") { trace_nats("stripped"); }
TEST_CASE("nats-server PIE") { trace_nats("pie"); }

TEST_CASE("weave funcs lists every function of caddy") { funcs_lists_every_function("default", "caddy"); }
TEST_CASE("weave funcs lists every function of etcd") { funcs_lists_every_function("default", "etcd"); }
TEST_CASE("weave funcs lists every function of nats-server") { funcs_lists_every_function("default", "nats-server"); }

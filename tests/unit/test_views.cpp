// The views of runtime/views.h on hand-made events: --graph's call trees (CallGraph, and GraphView
// decoding real records through the text printer) and the latency summary at exit. The real tracer
// on the Go fixture is tests/e2e/test_views.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <unistd.h>
#include <vector>

#include "event.h"
#include "manifest.h"
#include "output.h"
#include "views.h"

#include "allocation_counter.h" // the hot-path tests below count allocations

using namespace weave;
using nlohmann::json;

namespace {

constexpr uint64_t kStart = 1'000'000'000;
constexpr uint64_t us = 1000;

// Probes as `weave build` makes them: a function's entry and its return are two probes.
enum : uint32_t { A_IN, A_OUT, B_IN, B_OUT, EVENT };

CallGraph make_graph(CallGraph::Limits limits = CallGraph::Limits()) {
  return CallGraph(
      {{"main.A", false}, {"main.A", true}, {"main.B", false}, {"main.B", true}, {"main.E", false}},
      kStart, limits);
}

GraphCall in(uint32_t probe, uint64_t goid, uint64_t ts, std::string_view text,
             uint32_t tid = 200) {
  GraphCall c;
  c.probe = probe;
  c.pid = 100;
  c.tid = tid;
  c.goid = goid;
  c.ts_ns = kStart + ts;
  c.text = text;
  return c;
}

GraphCall out(uint32_t probe, uint64_t goid, uint64_t ts, uint64_t duration, std::string_view text,
              uint32_t tid = 200) {
  GraphCall c = in(probe, goid, ts, text, tid);
  c.is_return = true;
  c.duration_ns = duration;
  return c;
}

// Feeds the calls in order; returns everything printed, finish() included.
std::string run(CallGraph &graph, const std::vector<GraphCall> &calls, bool finish = true) {
  std::string text;
  for (const GraphCall &c : calls)
    graph.add(c, text);
  if (finish)
    graph.finish(text);
  return text;
}

} // namespace

TEST_CASE("graph: interleaved goroutines each get their own tree, printed when it completes") {
  CallGraph graph = make_graph();
  std::string text;
  graph.add(in(A_IN, 1, 1000 * us, "main.A(x=1)"), text);
  graph.add(in(A_IN, 2, 1100 * us, "main.A(x=2)"), text);
  graph.add(in(B_IN, 1, 1200 * us, "main.B(y=3)"), text);
  graph.add(out(B_OUT, 1, 1250 * us, 50 * us, "main.B(~r0=4)"), text);
  CHECK(text.empty()); // goroutine 1's outermost call is still open
  graph.add(out(A_OUT, 2, 1300 * us, 200 * us, "main.A(~r0=5)"), text);
  CHECK(text == "goroutine 2 (pid 100):\n"
                "  0.001100 main.A(x=2) = (~r0=5)  200µs\n");
  graph.add(out(A_OUT, 1, 2000 * us, 1000 * us, "main.A()"), text);
  CHECK(text == "goroutine 2 (pid 100):\n"
                "  0.001100 main.A(x=2) = (~r0=5)  200µs\n"
                "goroutine 1 (pid 100):\n"
                "  0.001000 main.A(x=1) {\n"
                "  0.001200   main.B(y=3) = (~r0=4)  50µs\n"
                "  0.002000 } main.A  1ms\n");
  CHECK(graph.buffered_lines() == 0);
  std::string rest;
  graph.finish(rest);
  CHECK(rest.empty());
}

TEST_CASE("graph: a goroutine's tree goes under the call that spawned it while that call is open") {
  CallGraph graph = make_graph();
  auto child = [](GraphCall c, uint64_t parent_goid, uint64_t spawn_call) {
    c.created_by = "created by goroutine " + std::to_string(parent_goid) + " in main.A at m.go:3";
    c.parent_goid = parent_goid;
    c.spawn_call = spawn_call;
    return c;
  };
  GraphCall a = in(A_IN, 5, 10 * us, "main.A(x=1)");
  a.call = 1;
  a.created_by = "created by goroutine 1 in main.main at m.go:9";
  GraphCall b = child(in(B_IN, 6, 20 * us, "main.B(y=2)"), 5, 1);
  b.call = 2;
  GraphCall b_out = out(B_OUT, 6, 30 * us, 10 * us, "main.B(~r0=3)");
  b_out.call = 2;
  GraphCall a_out = out(A_OUT, 5, 40 * us, 30 * us, "main.A()");
  a_out.call = 1;
  // Goroutine 7 begins inside A too, but ends after A returned: a tree of its own, headed.
  GraphCall late = child(in(B_IN, 7, 25 * us, "main.B(y=4)"), 5, 1);
  late.call = 3;
  GraphCall late_out = out(B_OUT, 7, 50 * us, 25 * us, "main.B(~r0=5)");
  late_out.call = 3;
  CHECK(run(graph, {a, b, late, b_out, a_out, late_out}) ==
        "goroutine 5 (pid 100), created by goroutine 1 in main.main at m.go:9:\n"
        "  0.000010 main.A(x=1) {  #1\n"
        "             goroutine 6 (pid 100), created by goroutine 5 in main.A at m.go:3:\n"
        "  0.000020   main.B(y=2) = (~r0=3)  10µs  #2\n"
        "  0.000040 } main.A  30µs  #1\n"
        "goroutine 7 (pid 100), created by goroutine 5 in main.A at m.go:3:\n"
        "  0.000025 main.B(y=4) = (~r0=5)  25µs  #3\n");
  CHECK(graph.buffered_lines() == 0);
}

TEST_CASE("graph: recursion nests a level per call, the innermost on one line") {
  CallGraph graph = make_graph();
  CHECK(run(graph,
            {in(A_IN, 7, 10 * us, "main.A(n=2)"), in(A_IN, 7, 20 * us, "main.A(n=1)"),
             in(A_IN, 7, 30 * us, "main.A(n=0)"), out(A_OUT, 7, 35 * us, 5 * us, "main.A(~r0=0)"),
             out(A_OUT, 7, 40 * us, 20 * us, "main.A(~r0=0)"),
             out(A_OUT, 7, 50 * us, 40 * us, "main.A(~r0=0)")}) ==
        "goroutine 7 (pid 100):\n"
        "  0.000010 main.A(n=2) {\n"
        "  0.000020   main.A(n=1) {\n"
        "  0.000030     main.A(n=0) = (~r0=0)  5µs\n"
        "  0.000040   } main.A = (~r0=0)  20µs\n"
        "  0.000050 } main.A = (~r0=0)  40µs\n");
}

TEST_CASE("graph: a call that panics is closed when a traced caller returns past it") {
  // The caller's return pairs with its own entry by timestamp (ts - duration), so the calls the
  // panic unwound are closed first, whatever they contain.
  CallGraph graph = make_graph();
  CHECK(run(graph,
            {in(A_IN, 1, 10 * us, "main.A(x=1)"), in(B_IN, 1, 20 * us, "main.B(n=1)"),
             in(B_IN, 1, 30 * us, "main.B(n=2)"), out(B_OUT, 1, 31 * us, 1 * us, "main.B(~r0=2)"),
             out(A_OUT, 1, 50 * us, 40 * us, "main.A()")}) ==
        "goroutine 1 (pid 100):\n"
        "  0.000010 main.A(x=1) {\n"
        "  0.000020   main.B(n=1) {\n"
        "  0.000030     main.B(n=2) = (~r0=2)  1µs\n"
        "             } main.B  (no return: unwound)\n"
        "  0.000050 } main.A  40µs\n");
  // Nothing inside it: one line.
  CallGraph other = make_graph();
  CHECK(run(other, {in(A_IN, 1, 10 * us, "main.A(x=1)"), in(B_IN, 1, 20 * us, "main.B(n=1)"),
                    out(A_OUT, 1, 50 * us, 40 * us, "main.A()")}) ==
        "goroutine 1 (pid 100):\n"
        "  0.000010 main.A(x=1) {\n"
        "  0.000020   main.B(n=1)  (no return: unwound)\n"
        "  0.000050 } main.A  40µs\n");
}

TEST_CASE("graph: calls still open at exit, a panic at the top included") {
  CallGraph graph = make_graph();
  std::string text =
      run(graph, {in(A_IN, 3, 10 * us, "main.A(x=1)"), in(B_IN, 3, 20 * us, "main.B(n=1)")}, false);
  CHECK(text.empty());
  CHECK(graph.buffered_lines() == 2);
  graph.finish(text);
  CHECK(text == "goroutine 3 (pid 100):\n"
                "  0.000010 main.A(x=1) {\n"
                "  0.000020   main.B(n=1)  (still open at exit)\n"
                "           } main.A  (still open at exit)\n");

  // A panicking call with no traced caller stays open: the next call of the goroutine nests under
  // it until exit (nothing in the events says it ended).
  CallGraph top = make_graph();
  CHECK(run(top, {in(B_IN, 1, 10 * us, "main.B(n=1)"), in(B_IN, 1, 20 * us, "main.B(n=2)"),
                  out(B_OUT, 1, 21 * us, 1 * us, "main.B(~r0=2)")}) ==
        "goroutine 1 (pid 100):\n"
        "  0.000010 main.B(n=1) {\n"
        "  0.000020   main.B(n=2) = (~r0=2)  1µs\n"
        "           } main.B  (still open at exit)\n");
}

TEST_CASE("graph: goid 0 (ABI0 code) groups by thread, returns without a duration pair by name") {
  CallGraph graph = make_graph();
  CHECK(run(graph,
            {in(A_IN, 0, 10 * us, "main.A(x=1)", 201), in(A_IN, 0, 11 * us, "main.A(x=2)", 202),
             out(A_OUT, 0, 12 * us, 0, "main.A(~r0=2)", 202),
             out(A_OUT, 0, 13 * us, 0, "main.A(~r0=1)", 201)}) ==
        "thread 202 (pid 100, no goroutine id):\n"
        "  0.000011 main.A(x=2) = (~r0=2)\n"
        "thread 201 (pid 100, no goroutine id):\n"
        "  0.000010 main.A(x=1) = (~r0=1)\n");
}

TEST_CASE("graph: consecutive trees of a goroutine share its header, in the events' order") {
  CallGraph graph = make_graph();
  auto leaf = [](uint64_t goid, uint64_t t) {
    return std::vector<GraphCall>{in(A_IN, goid, t * us, "main.A(x=1)"),
                                  out(A_OUT, goid, (t + 1) * us, us, "main.A(~r0=1)")};
  };
  std::vector<GraphCall> calls;
  for (auto [goid, t] :
       std::vector<std::pair<uint64_t, uint64_t>>{{1, 10}, {1, 20}, {2, 30}, {1, 40}})
    for (const GraphCall &c : leaf(goid, t))
      calls.push_back(c);
  std::string expected = "goroutine 1 (pid 100):\n"
                         "  0.000010 main.A(x=1) = (~r0=1)  1µs\n"
                         "  0.000020 main.A(x=1) = (~r0=1)  1µs\n"
                         "goroutine 2 (pid 100):\n"
                         "  0.000030 main.A(x=1) = (~r0=1)  1µs\n"
                         "goroutine 1 (pid 100):\n"
                         "  0.000040 main.A(x=1) = (~r0=1)  1µs\n";
  CHECK(run(graph, calls) == expected);
  CallGraph again = make_graph();
  CHECK(run(again, calls) == expected); // deterministic

  // At exit, the trees still open print in the order they started, whatever their goroutine ids.
  CallGraph open = make_graph();
  CHECK(run(open, {in(A_IN, 9, 10 * us, "main.A(x=9)"), in(A_IN, 3, 20 * us, "main.A(x=3)"),
                   in(A_IN, 5, 30 * us, "main.A(x=5)")}) ==
        "goroutine 9 (pid 100):\n"
        "  0.000010 main.A(x=9)  (still open at exit)\n"
        "goroutine 3 (pid 100):\n"
        "  0.000020 main.A(x=3)  (still open at exit)\n"
        "goroutine 5 (pid 100):\n"
        "  0.000030 main.A(x=5)  (still open at exit)\n");
}

TEST_CASE("graph: entry-only functions are one-line events, and returns whose entry was not seen") {
  CallGraph graph = make_graph();
  CHECK(
      run(graph, {in(EVENT, 1, 5 * us, "main.E(z=0)"), in(A_IN, 1, 10 * us, "main.A(x=1)"),
                  in(EVENT, 1, 20 * us, "main.E(z=1)"), out(A_OUT, 1, 30 * us, 20 * us, "main.A()"),
                  out(B_OUT, 1, 40 * us, 35 * us, "main.B(~r0=7)")}) ==
      "goroutine 1 (pid 100):\n"
      "  0.000005 main.E(z=0)\n"
      "  0.000010 main.A(x=1) {\n"
      "  0.000020   main.E(z=1)\n"
      "  0.000030 } main.A  20µs\n"
      "  0.000040 \u2190 main.B(~r0=7)  35µs  (entry not seen)\n");
}

TEST_CASE("graph: a stack goes under its call") {
  CallGraph graph = make_graph();
  GraphCall b = in(B_IN, 1, 20 * us, "main.B(n=1)");
  b.stack = "    main.caller (main.go:12)\n    main.main (main.go:20)\n";
  CHECK(run(graph, {in(A_IN, 1, 10 * us, "main.A(x=1)"), b, out(B_OUT, 1, 21 * us, us, "main.B()"),
                    out(A_OUT, 1, 30 * us, 20 * us, "main.A()")}) ==
        "goroutine 1 (pid 100):\n"
        "  0.000010 main.A(x=1) {\n"
        "  0.000020   main.B(n=1) {\n"
        "                 main.caller (main.go:12)\n"
        "                 main.main (main.go:20)\n"
        "  0.000021   } main.B  1µs\n"
        "  0.000030 } main.A  20µs\n");
}

TEST_CASE("graph: bounded buffers drop lines, say how many and where, and keep the tree's end") {
  CallGraph graph =
      make_graph({.lines_per_goroutine = 3, .lines_total = 100, .open_calls_max = 10});
  std::vector<GraphCall> calls = {in(A_IN, 1, 10 * us, "main.A(x=1)")};
  static const char *args[] = {"main.B(n=0)", "main.B(n=1)", "main.B(n=2)", "main.B(n=3)",
                               "main.B(n=4)"};
  for (uint64_t i = 0; i < 5; ++i) {
    calls.push_back(in(B_IN, 1, (20 + 2 * i) * us, args[i]));
    calls.push_back(out(B_OUT, 1, (21 + 2 * i) * us, us, "main.B()"));
  }
  calls.push_back(out(A_OUT, 1, 100 * us, 90 * us, "main.A()"));
  std::string text = run(graph, calls);
  CHECK(text ==
        "goroutine 1 (pid 100):\n"
        "  0.000010 main.A(x=1) {\n"
        "  0.000020   main.B(n=0)  1µs\n"
        "  0.000022   main.B(n=1)  1µs\n"
        "           ... 6 lines dropped here (at most 3 are buffered per goroutine, 100 in all)\n"
        "  0.000100 } main.A  90µs\n");
  CHECK(graph.dropped_lines() == 6);
  CHECK(graph.buffered_lines() == 0);

  // The cap over all goroutines: the second goroutine gets one line, then the rest is dropped.
  CallGraph total = make_graph({.lines_per_goroutine = 10, .lines_total = 3, .open_calls_max = 10});
  CHECK(run(total,
            {in(A_IN, 1, 10 * us, "main.A(x=1)"), in(B_IN, 1, 11 * us, "main.B(n=1)"),
             in(A_IN, 2, 12 * us, "main.A(x=2)"), in(B_IN, 2, 13 * us, "main.B(n=2)"),
             out(B_OUT, 2, 14 * us, us, "main.B()"), out(A_OUT, 2, 15 * us, 3 * us, "main.A()"),
             out(B_OUT, 1, 16 * us, 5 * us, "main.B()"),
             out(A_OUT, 1, 17 * us, 7 * us, "main.A()")}) ==
        "goroutine 2 (pid 100):\n"
        "  0.000012 main.A(x=2) {\n"
        "           ... 2 lines dropped here (at most 10 are buffered per goroutine, 3 in all)\n"
        "  0.000015 } main.A  3µs\n"
        "goroutine 1 (pid 100):\n"
        "  0.000010 main.A(x=1) {\n"
        "  0.000011   main.B(n=1)  5µs\n"
        "  0.000017 } main.A  7µs\n");

  // Calls that never return, over and over: the tree is printed at the open-call limit.
  CallGraph deep = make_graph({.lines_per_goroutine = 10, .lines_total = 100, .open_calls_max = 2});
  CHECK(run(deep, {in(B_IN, 1, 10 * us, "main.B(n=1)"), in(B_IN, 1, 20 * us, "main.B(n=2)"),
                   in(B_IN, 1, 30 * us, "main.B(n=3)")}) ==
        "goroutine 1 (pid 100):\n"
        "  0.000010 main.B(n=1) {\n"
        "  0.000020   main.B(n=2)  (no return seen before the open-call limit)\n"
        "           } main.B  (no return seen before the open-call limit)\n"
        "  0.000030 main.B(n=3)  (still open at exit)\n");
}

namespace {

// A manifest like `weave build` writes for main.Say(s string) string and main.Tick(n int) (entry
// only): entry and return probes, the return's duration at 64.
json views_manifest() {
  auto field = [](const char *kind, int offset, int max_len = -1) {
    json f = {{"name", ""}, {"kind", kind}, {"go_type", "?"}, {"size", 8}, {"offset", offset}};
    if (max_len >= 0)
      f["max_len"] = max_len;
    return f;
  };
  auto capture = [](const char *expr, json field) {
    return json{{"expr", expr}, {"type", "?"}, {"fault_bit", 0}, {"fields", {field}}};
  };
  auto probe = [](int id, const char *function, const char *kind, int size, json capture) {
    json p = {{"id", id},
              {"name", function},
              {"function", function},
              {"program", std::string("p") + std::to_string(id)},
              {"event_size", size},
              {"attach", {{{"kind", kind}, {"file_offset", 4096 + id}, {"cookie", id}}}},
              {"captures", {capture}}};
    if (std::string(kind) == "return")
      p["duration_offset"] = 64;
    return p;
  };
  return {
      {"format", 1},
      {"target", {{"path", "./x"}, {"build_id", "b"}, {"go_version", "go1.19"}, {"arch", "amd64"}}},
      {"event_header_size", 64},
      {"probes",
       {probe(0, "main.Say", "entry", 88, capture("s", field("string", 64, 16))),
        probe(1, "main.Say", "return", 96, capture("~r0", field("string", 72, 16))),
        probe(2, "main.Tick", "entry", 72, capture("n", field("int", 64)))}}};
}

Manifest parse_ok(const json &j) {
  std::string error;
  std::optional<Manifest> m = parse_manifest(j.dump(), error);
  INFO(error);
  REQUIRE(m.has_value());
  return *m;
}

std::vector<uint8_t> record(uint32_t probe, uint32_t kind, uint64_t goid, uint64_t ts,
                            size_t size) {
  std::vector<uint8_t> bytes(size, 0);
  weave_event_header h = {kStart + ts, goid, 0, 0, 100, 200, probe, static_cast<__u16>(kind), 0};
  std::memcpy(bytes.data(), &h, sizeof h);
  return bytes;
}

void put_u64(std::vector<uint8_t> &r, size_t offset, uint64_t v) {
  std::memcpy(r.data() + offset, &v, 8);
}

void put_string(std::vector<uint8_t> &r, size_t offset, std::string_view s) {
  put_u64(r, offset, s.size());
  std::memcpy(r.data() + offset + 8, s.data(), std::min<size_t>(s.size(), 16));
}

std::string read_all(int fd) {
  std::string text;
  lseek(fd, 0, SEEK_SET);
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<size_t>(n));
  return text;
}

} // namespace

TEST_CASE("graph view: real records through the text printer, strings with two spaces included") {
  Manifest m = parse_ok(views_manifest());
  FILE *file = tmpfile();
  REQUIRE(file);
  Calls calls(m, kStart);
  GraphView view(calls, kStart, fileno(file));
  calls.add_sink(&view);
  auto say = record(0, WEAVE_EVENT_ENTRY, 5, 10 * us, 88);
  put_string(say, 64, "a  b\n");
  auto tick = record(2, WEAVE_EVENT_ENTRY, 5, 11 * us, 72);
  put_u64(tick, 64, uint64_t(-3));
  auto said = record(1, WEAVE_EVENT_RETURN, 5, 12 * us, 96);
  put_u64(said, 64, 2 * us);
  put_string(said, 72, "x  y");
  auto lone = record(1, WEAVE_EVENT_RETURN, 6, 13 * us, 96); // its entry was never seen
  put_string(lone, 72, "z");
  for (auto *r : {&say, &tick, &said, &lone})
    calls.on_record(r->data(), r->size());
  std::vector<uint8_t> short_record(20, 0);
  calls.on_record(short_record.data(), short_record.size()); // malformed: ignored
  view.finish();
  CHECK_FALSE(view.failed());
  // Every line of a call ends with its id, the Calls stage's (JSON's "call").
  CHECK(read_all(fileno(file)) == "goroutine 5 (pid 100):\n"
                                  "  0.000010 main.Say(s=\"a  b\\n\") {  #1\n"
                                  "  0.000011   main.Tick(n=-3)  #2\n"
                                  "  0.000012 } main.Say = (~r0=\"x  y\")  2µs  #1\n"
                                  "goroutine 6 (pid 100):\n"
                                  "  0.000013 \u2190 main.Say(~r0=\"z\")  (entry not seen)  #3\n");
  fclose(file);
}

TEST_CASE("graph view: no heap allocation per event once a goroutine's buffers have grown") {
  Manifest m = parse_ok(views_manifest());
  int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  REQUIRE(null_fd >= 0);
  Calls calls(m, kStart);
  GraphView view(calls, kStart, null_fd);
  calls.add_sink(&view);
  auto say = record(0, WEAVE_EVENT_ENTRY, 5, 0, 88);
  put_string(say, 64, "hello");
  auto said = record(1, WEAVE_EVENT_RETURN, 5, 0, 96);
  put_string(said, 72, "world");
  auto call = [&](uint64_t i) {
    weave_event_header h;
    std::memcpy(&h, say.data(), sizeof h);
    h.ts_ns = kStart + i * 1000;
    std::memcpy(say.data(), &h, sizeof h);
    calls.on_record(say.data(), say.size());
    h.ts_ns += 500;
    h.kind = WEAVE_EVENT_RETURN;
    h.probe_id = 1;
    std::memcpy(said.data(), &h, sizeof h);
    put_u64(said, 64, 500);
    calls.on_record(said.data(), said.size());
  };
  // Warmed up until the call ids at the end of the lines have as many digits as in the measured
  // calls (ids 10001..40000): a longer line may grow a buffer once, which is not per event.
  for (uint64_t i = 0; i < 5000; ++i)
    call(i);
  view.flush();
  g_allocations = 0;
  g_count_allocations = true;
  for (uint64_t i = 5000; i < 20000; ++i)
    call(i);
  view.flush();
  g_count_allocations = false;
  CHECK(g_allocations == 0);
  close(null_fd);
}

TEST_CASE("summary: exact percentiles, power-of-two histogram, and the printed table") {
  LatencySummary summary(std::vector<std::string>{"main.Sleepy", "main.Sleepy", "main.Fast"});
  CHECK(summary.empty());
  CHECK(summary.lines().empty());
  for (uint64_t ns : {20'200'000, 10'000'000, 20'000'000, 10'500'000})
    summary.add(1, ns);
  summary.add(2, 900);
  summary.add(2, 0); // no duration: not a call that can be timed
  CHECK_FALSE(summary.empty());
  LatencySummary::Stats s = summary.stats(1);
  CHECK(s.calls == 4);
  CHECK(s.min == 10'000'000);
  CHECK(s.p50 == 10'500'000); // nearest rank: the 2nd of 4
  CHECK(s.p99 == 20'200'000); // the 4th
  CHECK(s.max == 20'200'000);
  CHECK(s.exact);
  CHECK(summary.stats(2).calls == 1);
  CHECK(summary.stats(0).calls == 0);
  std::array<uint64_t, 64> h = summary.histogram(1);
  CHECK(h[23] == 2); // [2^23, 2^24) ns = [8.39ms, 16.8ms)
  CHECK(h[24] == 2);
  CHECK(std::accumulate(h.begin(), h.end(), uint64_t(0)) == 4);

  std::string bar(LatencySummary::kBarWidth, '@');
  std::vector<std::string> expected = {
      "latency of the calls that returned, at exit:",
      "  function     calls    min     p50     p99     max",
      "  main.Sleepy      4   10ms  10.5ms  20.2ms  20.2ms",
      "  main.Fast        1  900ns   900ns   900ns   900ns",
      "  main.Sleepy:",
      "    [8.39ms, 16.8ms) 2 |" + bar + "|",
      "    [16.8ms, 33.6ms) 2 |" + bar + "|",
      "  main.Fast:",
      "    [512ns, 1.02µs) 1 |" + bar + "|",
  };
  std::vector<std::string> lines = summary.lines();
  CHECK(lines.size() == expected.size());
  for (size_t i = 0; i < std::min(lines.size(), expected.size()); ++i)
    CHECK(lines[i] == expected[i]);
}

TEST_CASE("summary: empty buckets between, short bars, and more functions than are listed") {
  std::vector<std::string> names;
  for (int i = 0; i < 25; ++i)
    names.push_back("main.F" + std::to_string(i));
  LatencySummary summary(names);
  for (int i = 0; i < 25; ++i)
    for (int n = 0; n <= i; ++n)
      summary.add(static_cast<uint32_t>(i), 1000);
  for (int n = 0; n < 80; ++n)
    summary.add(24, 1000);
  summary.add(24, 5000); // two empty buckets later, one call: a bar of one '@'
  std::vector<std::string> lines = summary.lines();
  CHECK(lines[2].rfind("  main.F24  ", 0) == 0); // most calls first
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string &l) {
          return l.rfind("  main.F", 0) == 0 && l.find(':') == std::string::npos;
        }) == 20);
  CHECK(std::find(lines.begin(), lines.end(), "  ... and 5 more functions with fewer calls") !=
        lines.end());
  auto at = std::find(lines.begin(), lines.end(), "  main.F24:");
  REQUIRE(at != lines.end());
  std::string spaces(LatencySummary::kBarWidth - 1, ' ');
  CHECK(at[1] == "    [512ns, 1.02µs)  105 |" + std::string(LatencySummary::kBarWidth, '@') + "|");
  CHECK(at[2] == "    [1.02µs, 2.05µs)   0 |" + std::string(LatencySummary::kBarWidth, ' ') + "|");
  CHECK(at[3] == "    [2.05µs, 4.1µs)    0 |" + std::string(LatencySummary::kBarWidth, ' ') + "|");
  CHECK(at[4] == "    [4.1µs, 8.19µs)    1 |@" + spaces + "|");
  CHECK(at[5] == "  main.F23:");
}

TEST_CASE("summary: past the exact samples, percentiles come from the histogram within 1/32") {
  LatencySummary summary(std::vector<std::string>{"main.Busy"});
  // 100,000 durations from 1 µs to ~1 ms, in an order that is not sorted.
  const uint64_t n = 100000;
  for (uint64_t i = 0; i < n; ++i)
    summary.add(0, 1000 + (i * 7919 % n) * 10);
  LatencySummary::Stats s = summary.stats(0);
  CHECK(s.calls == n);
  CHECK_FALSE(s.exact);
  CHECK(s.min == 1000);
  CHECK(s.max == 1000 + (n - 1) * 10);
  double p50 = 1000 + (n / 2 - 1) * 10.0, p99 = 1000 + (n * 99 / 100 - 1) * 10.0;
  CHECK(std::abs(double(s.p50) - p50) <= p50 / 32);
  CHECK(std::abs(double(s.p99) - p99) <= p99 / 32);
  std::vector<std::string> lines = summary.lines();
  CHECK(lines[2].find("~") != std::string::npos);
  CHECK(std::find(lines.begin(), lines.end(),
                  "  ~: estimated from a histogram (exact up to 1024 calls)") != lines.end());
}

TEST_CASE("summary: recording allocates only while a function's exact samples grow") {
  LatencySummary summary(std::vector<std::string>{"main.A", "main.B"});
  g_allocations = 0;
  g_count_allocations = true;
  for (uint64_t i = 0; i < LatencySummary::kExactSamples; ++i)
    summary.add(0, 1000 + i);
  size_t growing = g_allocations;
  g_allocations = 0;
  for (uint64_t i = 0; i < 100000; ++i)
    summary.add(0, 1000 + i);
  g_count_allocations = false;
  CHECK(growing <= 16); // the histogram once, the samples' doublings
  CHECK(g_allocations == 0);
}

TEST_CASE("summary and views: decoded from records, entries and unpaired returns do not count") {
  Manifest m = parse_ok(views_manifest());
  Calls calls(m, kStart);
  Views views(calls, {.graph = false, .summary = true}, kStart, -1);
  calls.add_sink(&views);
  auto entry = record(0, WEAVE_EVENT_ENTRY, 5, 10 * us, 88);
  auto paired = record(1, WEAVE_EVENT_RETURN, 5, 20 * us, 96);
  put_u64(paired, 64, 3 * us);
  auto unpaired = record(1, WEAVE_EVENT_RETURN, 5, 30 * us, 96);
  auto truncated = paired;
  truncated.resize(60); // shorter than its probe's event: malformed
  for (auto *r : {&entry, &paired, &unpaired, &truncated})
    calls.on_record(r->data(), r->size());
  CHECK(views.flush());
  views.finish();
  CHECK_FALSE(views.failed());
  std::vector<std::string> lines = views.summary_lines();
  REQUIRE(lines.size() >= 3);
  CHECK(lines[2] == "  main.Say      1  3µs  3µs  3µs  3µs");

  Calls calls_off(m, kStart);
  Views off(calls_off, {.graph = false, .summary = false}, kStart, -1);
  calls_off.add_sink(&off);
  calls_off.on_record(paired.data(), paired.size());
  CHECK(off.summary_lines().empty());
}

TEST_CASE("durations read like the text output's") {
  auto text = [](uint64_t ns) {
    std::string s;
    append_duration(s, ns);
    return s;
  };
  CHECK(text(850) == "850ns");
  CHECK(text(12'345) == "12.3µs");
  CHECK(text(4'560'000) == "4.56ms");
  CHECK(text(1'200'000'000) == "1.2s");
  CHECK(text(999'000'000'000) == "999s");
  CHECK(text(1'500'000'000'000) == "1500s");
}

TEST_CASE("perfetto: strings that are not UTF-8 keep every byte, in slices and instants alike") {
  // The JSON lines write such bytes as \udcXX escapes, which a strict JSON parser refuses as lone
  // surrogates: the trace once lost the arguments of such calls and dropped such instants.
  json j = views_manifest();
  json note = j["probes"][0];
  note["id"] = 3;
  note["name"] = note["function"] = "main.Note";
  note["program"] = "p3";
  note["attach"][0]["cookie"] = 3;
  note["attach"][0]["file_offset"] = 4099;
  j["probes"].push_back(note);
  Manifest m = parse_ok(j);
  char dir[] = "/tmp/weave-perfetto-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string path = std::string(dir) + "/trace.json";
  Calls calls(m, kStart);
  Views views(calls, {.graph = false, .summary = false, .perfetto = path}, kStart, -1);
  calls.add_sink(&views);
  std::string error;
  REQUIRE(views.open_files(error));
  auto say = record(0, WEAVE_EVENT_ENTRY, 5, 10 * us, 88);
  put_string(say, 64, "a\xff" "b");
  auto tick = record(2, WEAVE_EVENT_ENTRY, 5, 11 * us, 72);
  put_u64(tick, 64, 7);
  auto noted = record(3, WEAVE_EVENT_ENTRY, 5, 12 * us, 88);
  put_string(noted, 64, "\xc3\xa9\xc3");
  auto said = record(1, WEAVE_EVENT_RETURN, 5, 13 * us, 96);
  put_u64(said, 64, 3 * us);
  put_string(said, 72, "\xfe");
  for (auto *r : {&say, &tick, &noted, &said})
    calls.on_record(r->data(), r->size());
  views.finish();
  CHECK(views.folded_error().empty());
  std::string text;
  {
    FILE *f = std::fopen(path.c_str(), "r");
    REQUIRE(f);
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;)
      text.append(buffer, n);
    std::fclose(f);
  }
  std::remove(path.c_str());
  rmdir(dir);
  INFO(text);
  CHECK(text.find("{\"ph\":\"i\",\"s\":\"t\",\"name\":\"main.Tick\",\"ts\":11.000,\"pid\":100,\"tid\":5,"
                  "\"args\":{\"n\":7}}") != std::string::npos);
  CHECK(text.find("{\"ph\":\"i\",\"s\":\"t\",\"name\":\"main.Note\",\"ts\":12.000,\"pid\":100,\"tid\":5,"
                  "\"args\":{\"s\":\"\xc3\xa9\\udcc3\"}}") != std::string::npos);
  CHECK(text.find("{\"ph\":\"X\",\"name\":\"main.Say\",\"ts\":10.000,\"dur\":3.000,\"pid\":100,\"tid\":5,"
                  "\"args\":{\"args\":{\"s\":\"a\\udcffb\"},\"results\":{\"~r0\":\"\\udcfe\"}}}") !=
        std::string::npos);
  // Valid JSON text once the escapes are read as the bytes they stand for.
  std::string latin = text;
  for (size_t at; (at = latin.find("\\udc")) != std::string::npos;)
    latin.replace(at, 4, "\\u00");
  json trace = json::parse(latin, nullptr, false);
  REQUIRE_FALSE(trace.is_discarded());
  CHECK(trace["traceEvents"].size() == 4); // the track's name, two instants, one slice
}

TEST_CASE("probes[].name: two probes on one function print apart, in text lines and in --graph") {
  // Only JSON, --stats and the summary used the name: text and --graph printed the function alone,
  // so two probes on one function (two `when:` conditions) gave identical lines.
  json j = views_manifest();
  for (int from : {0, 1}) {
    json p = j["probes"][from];
    int id = 3 + from;
    p["id"] = id;
    p["name"] = "slow";
    p["program"] = "p" + std::to_string(id);
    p["attach"][0]["cookie"] = (uint64_t{3} << 24) | static_cast<uint64_t>(id); // pairs with entry 3
    p["attach"][0]["file_offset"] = 4096 + id;
    j["probes"].push_back(p);
  }
  Manifest m = parse_ok(j);
  auto say = record(0, WEAVE_EVENT_ENTRY, 5, 10 * us, 88);
  put_string(say, 64, "x");
  auto slow = record(3, WEAVE_EVENT_ENTRY, 5, 11 * us, 88);
  put_string(slow, 64, "x");
  auto slow_ret = record(4, WEAVE_EVENT_RETURN, 5, 12 * us, 96);
  put_u64(slow_ret, 64, 1 * us);
  put_string(slow_ret, 72, "y");
  auto said = record(1, WEAVE_EVENT_RETURN, 5, 13 * us, 96);
  put_u64(said, 64, 3 * us);
  put_string(said, 72, "y");

  EventPrinter printer(m, OutputFormat::Text, kStart);
  std::string text;
  for (auto *r : {&say, &slow, &slow_ret, &said})
    REQUIRE(printer.format(r->data(), r->size(), text));
  CHECK(text == "0.000010 pid=100 tid=200 goid=5 main.Say(s=\"x\")\n"
                "0.000011 pid=100 tid=200 goid=5 slow: main.Say(s=\"x\")\n"
                "0.000012 pid=100 tid=200 goid=5 \u2190 slow: main.Say(~r0=\"y\")  1µs\n"
                "0.000013 pid=100 tid=200 goid=5 \u2190 main.Say(~r0=\"y\")  3µs\n");

  FILE *file = tmpfile();
  REQUIRE(file);
  Calls calls(m, kStart);
  GraphView view(calls, kStart, fileno(file));
  calls.add_sink(&view);
  for (auto *r : {&say, &slow, &slow_ret, &said})
    calls.on_record(r->data(), r->size());
  view.finish();
  CHECK(read_all(fileno(file)) == "goroutine 5 (pid 100):\n"
                                  "  0.000010 main.Say(s=\"x\") {  #1\n"
                                  "  0.000011   slow: main.Say(s=\"x\") = (~r0=\"y\")  1µs  #2\n"
                                  "  0.000013 } main.Say = (~r0=\"y\")  3µs  #1\n");
  fclose(file);
}

TEST_CASE("calls: ids pair by entry time, and a goroutine whose calls never return is held only so far") {
  Manifest m = parse_ok(views_manifest());
  Calls calls(m, kStart);
  struct Seen final : EventSink {
    std::vector<CallEvent> events;
    void on_event(const CallEvent &e) override {
      events.push_back(e);
      events.back().entry = nullptr; // points into the stage only while it is handed out
      events.back().unwound.clear();
    }
  } seen;
  calls.add_sink(&seen);
  // 5000 entries on goroutine 5, none returning: at most kMaxOpenPerTrack are held.
  const uint64_t n = 5000;
  for (uint64_t i = 0; i < n; ++i) {
    auto entry = record(0, WEAVE_EVENT_ENTRY, 5, i * 10, 88);
    REQUIRE(calls.on_record(entry.data(), entry.size()));
  }
  CHECK(calls.open_calls() <= Calls::kMaxOpenPerTrack);
  CHECK(calls.open_calls() + calls.dropped() == n);
  // The last call's return pairs with it by its entry time; the first call's was forgotten.
  auto last = record(1, WEAVE_EVENT_RETURN, 5, (n - 1) * 10 + 7, 96);
  put_u64(last, 64, 7);
  REQUIRE(calls.on_record(last.data(), last.size()));
  const CallEvent &r = seen.events.back();
  CHECK(r.entry_seen);
  CHECK(r.call == n); // ids count up from 1 in the order calls are first seen
  CHECK(r.parent == n - 1);
  CHECK(r.entry_ts_ns == kStart + (n - 1) * 10);
  auto first = record(1, WEAVE_EVENT_RETURN, 5, 1'000'000, 96);
  put_u64(first, 64, 1'000'000);
  REQUIRE(calls.on_record(first.data(), first.size()));
  CHECK_FALSE(seen.events.back().entry_seen);
  CHECK(seen.events.back().call == n + 1); // an id of its own
  // A return in the middle closes the calls opened after it as unwound.
  uint64_t open_before = calls.open_calls();
  auto middle = record(1, WEAVE_EVENT_RETURN, 5, (n - 10) * 10 + 3, 96);
  put_u64(middle, 64, 3);
  REQUIRE(calls.on_record(middle.data(), middle.size()));
  CHECK(seen.events.back().call == n - 9);
  CHECK(calls.open_calls() == open_before - 9); // itself and the 8 opened after it
  std::vector<uint8_t> short_record(20, 0);
  CHECK_FALSE(calls.on_record(short_record.data(), short_record.size()));
  CHECK(calls.malformed() == 1);
}

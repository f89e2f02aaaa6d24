// when_return_expect.h — what test_when_return.cpp's spec (kSpec) must give on tests/e2e/failing
// -rounds 3, checked against the program's own record of every call (its stdout): when_return
// emits exactly the failing calls with their entry values, the nil guard emits none of the nil
// calls, && and || decide past faults, and --stats counts the rest as filtered. Shared by
// test_when_return (amd64, 386) and the arm64 VM test.
#pragma once

#include "harness.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace when_return_expect {

using nlohmann::json;

const char *const kSpec = "probes:\n"
                          "  - function: main.Process\n"
                          "    capture: [o.ID, n]\n"
                          "    return: true\n"
                          "    when_return: 'err != nil'\n"
                          "  - function: main.Respond\n"
                          "    capture: [o.Qty]\n"
                          "    return: true\n"
                          "    when_return: 'n < 0 || status >= 500'\n"
                          "  - function: main.Lookup\n"
                          "    when: 'p != nil && p.Name == \"x\"'\n"
                          "  - function: main.CheckAnd\n"
                          "    when: 'flag && p.Qty == 1'\n"
                          "  - function: main.CheckOr\n"
                          "    when: 'flag || p.Qty == 1'\n"
                          "  - function: main.CheckAndFirst\n"
                          "    when: 'p.Qty == 1 && flag'\n"
                          "  - function: main.CheckNot\n"
                          "    when: '!(p.Qty == 1) && flag'\n";

// Three-valued truth: a value read through a nil pointer is unknown (nullopt).
using Truth = std::optional<bool>;
inline Truth t_and(Truth a, Truth b) {
  if (a == false || b == false)
    return false;
  if (!a || !b)
    return std::nullopt;
  return true;
}
inline Truth t_or(Truth a, Truth b) {
  if (a == true || b == true)
    return true;
  if (!a || !b)
    return std::nullopt;
  return false;
}
inline Truth t_not(Truth a) { return a ? Truth(!*a) : std::nullopt; }

inline std::vector<json> of(const std::vector<json> &events, const std::string &function) {
  std::vector<json> out;
  for (const json &e : events)
    if (e["function"] == function)
      out.push_back(e);
  return out;
}

inline bool faulted(const json &e, const std::string &expr) {
  if (!e.contains("faults"))
    return false;
  for (const json &f : e["faults"])
    if (f == expr)
      return true;
  return false;
}

// "main.Process  entry  hits events lost filtered ..." from --stats.
inline std::vector<int> stats_row(const std::string &err, const std::string &function, const std::string &kind) {
  std::smatch m;
  std::regex row(std::regex_replace(function, std::regex(R"(\.)"), R"(\.)") + R"(\s+)" + kind +
                 R"(\s+\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+))");
  if (!std::regex_search(err, m, row))
    return {};
  return {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
}


// The program's stdout (-rounds 3), the tracer's JSON events (--format json --stats) and its stderr.
inline void check(const std::string &truth_text, const std::string &events_text, const std::string &err) {
  std::vector<json> truth = e2e::json_lines(truth_text);
  REQUIRE(truth.size() == 3 * 8 * 5);
  std::vector<json> events = e2e::json_lines(events_text);

  // when_return: 'err != nil': exactly the failing calls, each entry followed by its return.
  std::vector<json> want;
  int processed = 0;
  for (const json &t : truth)
    if (t["fn"] == "Process") {
      ++processed;
      if (t["failed"] == true)
        want.push_back(t);
    }
  REQUIRE(want.size() >= 6);
  REQUIRE(want.size() < static_cast<size_t>(processed));
  std::vector<json> process = of(events, "main.Process");
  REQUIRE(process.size() == 2 * want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const json &t = want[i], &e = process[2 * i], &r = process[2 * i + 1];
    CAPTURE(t.dump());
    CAPTURE(e.dump());
    CAPTURE(r.dump());
    REQUIRE(e["kind"] == "entry");
    REQUIRE(r["kind"] == "return");
    CHECK(r["goid"] == e["goid"]);
    CHECK(r["ts_ns"].get<uint64_t>() - e["ts_ns"].get<uint64_t>() == r["duration_ns"].get<uint64_t>());
    CHECK(e["args"]["n"] == t["n"]);
    if (t["nil"] == true) {
      CHECK(e["args"]["o.ID"].is_null()); // read through the nil order: marked, not a value
      CHECK(faulted(e, "o.ID"));
    } else {
      CHECK(e["args"]["o.ID"] == t["id"]);
      CHECK(!e.contains("faults"));
    }
    CHECK(r["results"]["v"] == t["r0"]);
    // The error's dynamic type, as the program's own %T names it.
    const json &err = r["results"]["err"];
    CHECK(err["type"] == t["err_type"]);
    // Its message where the tracer reads one (an errors.New or %w error: the message is the
    // dynamic value's first string); a struct error shows its address until interfaces are
    // shown by content.
    if (t["err_type"] == "*main.ValidationError")
      CHECK(err.contains("value"));
    else
      CHECK(err["error"] == t["err"]);
    CHECK(!r.contains("faults"));
  }

  // when_return: 'n < 0 || status >= 500' over named results.
  std::vector<json> want_respond;
  for (const json &t : truth)
    if (t["fn"] == "Respond" && (t["rn"].get<int64_t>() < 0 || t["status"].get<int64_t>() >= 500))
      want_respond.push_back(t);
  REQUIRE(!want_respond.empty());
  std::vector<json> respond = of(events, "main.Respond");
  REQUIRE(respond.size() == 2 * want_respond.size());
  for (size_t i = 0; i < want_respond.size(); ++i) {
    const json &t = want_respond[i], &r = respond[2 * i + 1];
    CAPTURE(r.dump());
    CHECK(respond[2 * i]["kind"] == "entry");
    CHECK(respond[2 * i]["args"]["o.Qty"].is_null() == (t["nil"] == true));
    CHECK(r["results"]["n"] == t["rn"]);
    CHECK(r["results"]["status"] == t["status"]);
  }

  // The nil guard: no nil call, nothing read through nil, exactly the calls named "x".
  std::vector<std::string> want_lookup, got_lookup;
  for (const json &t : truth)
    if (t["fn"] == "Lookup" && t["nil"] == false && t["name"] == "x")
      want_lookup.push_back("x");
  for (const json &e : of(events, "main.Lookup")) {
    CAPTURE(e.dump());
    CHECK(!e.contains("faults"));
    CHECK(e["args"]["p"].is_string());
    CHECK(e["args"]["p"] != "0x0");
    got_lookup.push_back(e["args"]["p.Name"].get<std::string>());
  }
  CHECK(!want_lookup.empty());
  CHECK(got_lookup == want_lookup);

  // && and || past a fault: the calls each condition does not rule out, in order, and a nil
  // order's p.Qty marked exactly when the call went through.
  struct Row {
    std::string function, key;
    Truth (*condition)(bool flag, Truth qty_is_1);
  };
  const Row rows[] = {
      {"main.CheckAnd", "and", [](bool flag, Truth q) { return t_and(flag, q); }},
      {"main.CheckOr", "or", [](bool flag, Truth q) { return t_or(flag, q); }},
      {"main.CheckAndFirst", "and_first", [](bool flag, Truth q) { return t_and(q, flag); }},
      {"main.CheckNot", "not", [](bool flag, Truth q) { return t_and(t_not(q), flag); }},
  };
  for (const Row &row : rows) {
    CAPTURE(row.function);
    std::vector<std::string> expected, got;
    int unknown_through = 0, decided_past_fault = 0;
    for (const json &t : truth) {
      if (t["fn"] != "Check")
        continue;
      bool flag = t["flag"].get<bool>();
      Truth q = t["nil"] == true ? Truth() : Truth(t["qty"].get<int64_t>() == 1);
      Truth verdict = row.condition(flag, q);
      std::string call = fmt::format("k={} flag={} qty={}", t["k"].get<int>(), flag,
                                     t["nil"] == true ? std::string("<fault>") : std::to_string(t["qty"].get<int64_t>()));
      if (verdict != false)
        expected.push_back(call);
      if (!verdict)
        ++unknown_through;
      if (!q && verdict) // false && fault, true || fault: decided whatever p.Qty would have been
        ++decided_past_fault;
    }
    CHECK(unknown_through > 0);
    CHECK(decided_past_fault > 0);
    // Calls are matched to the program's by order: one goroutine makes them all.
    std::vector<json> checks = of(events, row.function);
    size_t next = 0;
    for (const json &e : checks) {
      CAPTURE(e.dump());
      bool nil = e["args"]["p.Qty"].is_null();
      CHECK(nil == faulted(e, "p.Qty"));
      got.push_back(fmt::format("flag={} qty={}", e["args"]["flag"].get<bool>(),
                                nil ? std::string("<fault>") : std::to_string(e["args"]["p.Qty"].get<int64_t>())));
      ++next;
    }
    std::vector<std::string> expected_values;
    for (const std::string &s : expected)
      expected_values.push_back(s.substr(s.find(' ') + 1));
    CHECK(got == expected_values);
  }

  // --stats: the calls ruled out at the return are filtered, entry and return alike.
  CHECK(err.find("stats do not add up") == std::string::npos);
  for (const char *kind : {"entry", "return"}) {
    CAPTURE(kind);
    std::vector<int> row = stats_row(err, "main.Process", kind);
    REQUIRE(row.size() == 4);
    CHECK(row[0] == processed);                                 // hits
    CHECK(row[1] == static_cast<int>(want.size()));            // events: the failing calls
    CHECK(row[2] == 0);                                         // lost
    CHECK(row[3] == processed - static_cast<int>(want.size())); // filtered: the others
  }
  CHECK(err.find("evicted") == std::string::npos);
  CHECK(err.find("still in flight") == std::string::npos);
}

} // namespace when_return_expect

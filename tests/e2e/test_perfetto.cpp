// End to end, for real: --perfetto writes the calls as a timeline in the Chrome trace-event JSON
// format. Every paired call is one complete slice on its goroutine's track, as long as the
// return event says, with the captures the fixture recorded passing as its arguments; entries of
// probes without returns are instants; slices on a track nest, never overlap partially.
#include "harness.h"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using nlohmann::json;

TEST_CASE("--perfetto: paired calls are slices on their goroutine's track, values as arguments") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("perfetto");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.(*Server).Handle\n"
                                       "    capture: [s.Name, req.Path]\n"
                                       "    return: true\n"
                                       "  - function: main.Nested\n"
                                       "    capture: [r.Path]\n"
                                       "  - function: main.Deep\n"
                                       "    capture: [n]\n"
                                       "    return: true\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::string file = dir + "/trace.json";
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--perfetto", file, "--", e2e::fixture("fixture"),
                          "-truth", dir + "/truth.jsonl", "-rounds", "4", "-deep", "20"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  json trace = json::parse(e2e::read_file(file));
  REQUIRE(trace["traceEvents"].is_array());
  std::vector<json> truth_handle, truth_nested;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
    if (t["function"] == "main.(*Server).Handle")
      truth_handle.push_back(t["args"]);
    if (t["function"] == "main.Nested")
      truth_nested.push_back(t["args"]);
  }
  std::vector<uint64_t> durations; // of the Handle returns, in order
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == "main.(*Server).Handle" && e["kind"] == "return")
      durations.push_back(e["duration_ns"]);
  std::vector<json> handle, nested;
  std::set<std::pair<long long, long long>> named;
  std::map<std::pair<long long, long long>, std::vector<std::pair<double, double>>> slices; // by track
  size_t deep = 0;
  for (const json &ev : trace["traceEvents"]) {
    std::pair<long long, long long> track{ev["pid"], ev["tid"]};
    if (ev["ph"] == "M") {
      CHECK(ev["name"] == "thread_name");
      named.insert(track);
      continue;
    }
    CHECK(named.count(track) == 1); // every track is named before it is used
    if (ev["ph"] == "X") {
      slices[track].push_back({ev["ts"].get<double>(), ev["ts"].get<double>() + ev["dur"].get<double>()});
      if (ev["name"] == "main.(*Server).Handle")
        handle.push_back(ev);
      deep += ev["name"] == "main.Deep";
    } else if (ev["ph"] == "i" && ev["name"] == "main.Nested") {
      nested.push_back(ev);
    }
  }
  REQUIRE(truth_handle.size() == 4);
  REQUIRE(handle.size() == truth_handle.size());
  REQUIRE(durations.size() == handle.size());
  for (size_t i = 0; i < handle.size(); ++i) {
    CAPTURE(i);
    CHECK(handle[i]["args"]["args"]["s.Name"] == truth_handle[i]["s.Name"]);
    CHECK(handle[i]["args"]["args"]["req.Path"] == truth_handle[i]["req.Path"]);
    CHECK(handle[i]["args"]["results"].contains("~r0"));
    CHECK(std::llround(handle[i]["dur"].get<double>() * 1000) == static_cast<long long>(durations[i]));
  }
  REQUIRE(nested.size() == truth_nested.size());
  for (size_t i = 0; i < nested.size(); ++i)
    CHECK(nested[i]["args"]["r.Path"] == truth_nested[i]["r.Path"]);
  CHECK(deep == 21); // -deep 20: Deep(20) .. Deep(0), nested on one track
  for (auto &[track, list] : slices) {
    // Sorted by start (longer first on a tie), each slice ends inside every slice still open.
    std::sort(list.begin(), list.end(), [](auto &a, auto &b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> open;
    for (auto &[begin, end] : list) {
      while (!open.empty() && open.back() <= begin)
        open.pop_back();
      if (!open.empty())
        CHECK(end <= open.back() + 1e-6);
      open.push_back(end);
    }
  }
}

namespace {

// JSON text whose \udcXX escapes (a byte that is not UTF-8, as the tracer and the fixture write
// it) are read as U+00XX, which nlohmann accepts: both sides of a comparison go through it.
json parse_escaped(std::string text) {
  for (size_t at; (at = text.find("\\udc")) != std::string::npos;)
    text.replace(at, 4, "\\u00");
  return json::parse(text);
}

// What parse_escaped reads for the bytes `raw`: valid UTF-8 kept, each other byte as U+00XX.
std::string as_escaped(const std::string &raw) {
  std::string out;
  for (size_t i = 0; i < raw.size();) {
    auto c = static_cast<unsigned char>(raw[i]);
    size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool valid = n > 0 && i + n <= raw.size();
    for (size_t k = 1; valid && k < n; ++k)
      valid = (static_cast<unsigned char>(raw[i + k]) & 0xc0) == 0x80;
    if (valid) {
      out.append(raw, i, n);
      i += n;
    } else {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
      ++i;
    }
  }
  return out;
}

// The fixture records a string that is not UTF-8 as {"hex": "..."} of its bytes.
std::string truth_string(const json &value) {
  if (value.is_string())
    return value;
  std::string hex = value["hex"], raw;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return as_escaped(raw);
}

} // namespace

TEST_CASE("--perfetto: strings that are not UTF-8 keep every byte, in slices and in instants") {
  // The trace re-parsed each JSON line with a parser that refuses \udcXX: such a call lost its
  // arguments and an entry-only probe's instant was dropped, with exit 0.
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("perfetto-bytes");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.Strings\n"
                                       "    capture: [s, long]\n"
                                       "  - function: main.Strings\n"
                                       "    name: paired\n"
                                       "    capture: [s]\n"
                                       "    return: true\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::string file = dir + "/trace.json";
  auto traced = e2e::run({dir + "/out/tracer", "--no-summary", "--perfetto", file, "--", e2e::fixture("fixture"),
                          "-truth", dir + "/truth.jsonl", "-rounds", "2"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth;
  std::istringstream lines(e2e::read_file(dir + "/truth.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    json t = parse_escaped(line);
    if (t["function"] == "main.Strings")
      truth.push_back(t["args"]);
  }
  REQUIRE(truth.size() == 4); // two calls a round, one of them with bytes that are not UTF-8
  json trace = parse_escaped(e2e::read_file(file));
  std::vector<json> instants, slices;
  for (const json &ev : trace["traceEvents"]) {
    if (ev["ph"] == "i" && ev["name"] == "main.Strings")
      instants.push_back(ev["args"]);
    if (ev["ph"] == "X" && ev["name"] == "main.Strings")
      slices.push_back(ev["args"]["args"]);
  }
  REQUIRE(instants.size() == truth.size());
  REQUIRE(slices.size() == truth.size());
  size_t not_utf8 = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    CAPTURE(i);
    std::string s = truth_string(truth[i]["s"]);
    not_utf8 += truth[i]["s"].is_object();
    CHECK(instants[i]["s"] == s);
    CHECK(instants[i]["long"] == truth[i]["long"].get<std::string>().substr(0, 64));
    CHECK(slices[i]["s"] == s);
  }
  CHECK(not_utf8 == 2);
}

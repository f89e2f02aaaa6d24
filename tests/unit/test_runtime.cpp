// The tracer runtime's pure parts: the payload format, manifest validation, and event formatting.
// The real thing (BPF, uprobes, the Go fixture) is tested by runtime/testdata/tracer_e2e.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "calls.h"
#include "event.h"
#include "manifest.h"
#include "output.h"
#include "payload.h"
#include "ring.h"

#include <linux/bpf.h> // BPF_RINGBUF_*: the kernel's record header
#include "stats.h"
#include "symbolize.h"
#include "gobinary/elf_notes.h"
#include "gobinary/pclntab.h"

#include "allocation_counter.h" // the hot-path tests below count allocations

using namespace weave;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A fresh directory under /tmp, removed when the test ends.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "weave-rt-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string slurp(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

uint64_t le64(const std::string &bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// The manifest of the brief's example, extended to every field kind and a struct nested two deep.
json example_manifest() {
  auto field = [](const char *name, const char *kind, int offset, int max_len = -1) {
    json f = {{"name", name}, {"kind", kind}, {"go_type", "?"}, {"size", 8}, {"offset", offset}};
    if (max_len >= 0)
      f["max_len"] = max_len;
    return f;
  };
  json captures = json::array({
      {{"expr", "a"}, {"type", "int8"}, {"fault_bit", 0}, {"fields", {field("", "int", 64)}}},
      {{"expr", "s"},
       {"type", "string"},
       {"fault_bit", 1},
       {"fields", {field("", "string", 72, 8)}}},
      {{"expr", "h"},
       {"type", "main.Header"},
       {"fault_bit", 2},
       {"fields",
        {field("Port", "uint", 88), field("Inner.Host", "string", 96, 8),
         field("Inner.Ok", "bool", 112)}}},
      {{"expr", "p"}, {"type", "*int"}, {"fault_bit", 3}, {"fields", {field("", "pointer", 120)}}},
      {{"expr", "u"}, {"type", "uint64"}, {"fault_bit", 4}, {"fields", {field("", "uint", 128)}}},
      {{"expr", "i"}, {"type", "int64"}, {"fault_bit", 5}, {"fields", {field("", "int", 136)}}},
      {{"expr", "bad"},
       {"type", "string"},
       {"fault_bit", 6},
       {"fields", {field("", "string", 144, 8)}}},
      {{"expr", "missing"},
       {"type", "main.Header"},
       {"fault_bit", 7},
       {"fields", {field("Port", "uint", 160)}}},
  });
  return {
      {"format", 1},
      {"weave_version", "0.1.0"},
      {"target",
       {{"path", "./fixture"},
        {"build_id", "abc/def"},
        {"go_version", "go1.19.8"},
        {"arch", "amd64"},
        {"pointer_size", 8}}},
      {"options", {{"string_max", 8}}},
      {"event_header_size", 64},
      {"goid", {{"offset", 152}, {"source", "DWARF runtime.g.goid"}}},
      {"probes",
       {{{"id", 0},
         {"name", "handle"},
         {"function", "main.(*Server).Handle"},
         {"abi", "ABIInternal"},
         {"program", "probe_0_entry"},
         {"event_size", 168},
         {"attach",
          {{{"kind", "entry"}, {"vaddr", "0x4a0580"}, {"file_offset", "0xa0580"}, {"cookie", 0}},
           {{"kind", "return"}, {"vaddr", "0x4a05c0"}, {"file_offset", "0xa05c0"}, {"cookie", 1}}}},
         {"captures", captures}}}},
  };
}

Manifest parse_ok(const json &j) {
  std::string error;
  std::optional<Manifest> m = parse_manifest(j.dump(), error);
  INFO(error);
  REQUIRE(m.has_value());
  return *m;
}

std::string parse_error(const json &j) {
  std::string error;
  std::optional<Manifest> m = parse_manifest(j.dump(), error);
  CHECK_FALSE(m.has_value());
  return error;
}

// A hand-built event record for example_manifest().
struct Event {
  std::vector<uint8_t> bytes;
  explicit Event(size_t size = 168) : bytes(size, 0) {}
  Event &u64(size_t offset, uint64_t v) {
    std::memcpy(bytes.data() + offset, &v, 8);
    return *this;
  }
  Event &str(size_t offset, std::string_view s, uint64_t full_len, size_t max_len) {
    u64(offset, full_len);
    std::memcpy(bytes.data() + offset + 8, s.data(), std::min(s.size(), max_len));
    return *this;
  }
  weave_event_header &header() { return *reinterpret_cast<weave_event_header *>(bytes.data()); }
};

constexpr uint64_t kStart = 1'000'000'000;

Event example_event() {
  Event e;
  e.header() = {kStart + 1'234'567, 1, 0, 0, 10, 11, 0, WEAVE_EVENT_ENTRY};
  e.u64(64, uint64_t(int64_t(-128)));
  e.str(72, "hello, w", 12, 8); // "hello, world": 12 bytes, 8 copied
  e.u64(88, 8080);
  e.str(96, "a\"b\n", 4, 8);
  e.u64(112, 1);
  e.u64(120, 0xc000010000);
  e.u64(128, std::numeric_limits<uint64_t>::max());
  e.u64(136, uint64_t(std::numeric_limits<int64_t>::min()));
  e.str(144, "ok\xff\xfe", 4, 8);
  e.u64(160, 0xdeadbeef); // garbage behind a fault: must never be printed
  e.header().faults = uint64_t(1) << 7;
  return e;
}

std::string format(const Manifest &m, OutputFormat f, Event &e) {
  EventPrinter printer(m, f, kStart);
  std::string out;
  REQUIRE(printer.format(e.bytes.data(), e.bytes.size(), out));
  return out;
}

} // namespace

TEST_CASE("payload: append then read gives back the object and the manifest") {
  TempDir dir;
  std::string exe = "\x7f"
                    "ELF pretend executable";
  spit(dir.path / "runtime", exe);
  std::string object("\0BPF\x01\x02object", 13), manifest = R"({"format": 1})";
  std::string error;
  REQUIRE_MESSAGE(append_payload((dir.path / "runtime").string(), object, manifest,
                                 (dir.path / "tracer").string(), error),
                  error);

  std::string file = slurp(dir.path / "tracer");
  REQUIRE(file.size() == exe.size() + object.size() + manifest.size() + 48);
  CHECK(file.compare(0, exe.size(), exe) == 0);
  // The trailer, byte for byte: magic, then little-endian offsets and sizes.
  size_t t = file.size() - 48;
  CHECK(file.substr(t, 16) == "WEAVE-PAYLOAD-01");
  CHECK(le64(file, t + 16) == exe.size());
  CHECK(le64(file, t + 24) == object.size());
  CHECK(le64(file, t + 32) == exe.size() + object.size());
  CHECK(le64(file, t + 40) == manifest.size());
  CHECK((fs::status(dir.path / "tracer").permissions() & fs::perms::all) ==
        (fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
         fs::perms::others_read | fs::perms::others_exec));

  std::optional<Payload> p = read_payload((dir.path / "tracer").string(), error);
  REQUIRE_MESSAGE(p.has_value(), error);
  CHECK(p->object == object);
  CHECK(p->manifest == manifest);

  // Re-packing a tracer replaces its payload instead of stacking a second one.
  REQUIRE(append_payload((dir.path / "tracer").string(), "obj2", "{}",
                         (dir.path / "tracer2").string(), error));
  CHECK(fs::file_size(dir.path / "tracer2") == exe.size() + 4 + 2 + 48);
  p = read_payload((dir.path / "tracer2").string(), error);
  REQUIRE(p.has_value());
  CHECK(p->object == "obj2");
  CHECK(p->manifest == "{}");
  // No temporary files are left behind.
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 3);
}

TEST_CASE("payload: a file without one, a corrupt one, and write failures") {
  TempDir dir;
  std::string error;
  spit(dir.path / "bare", std::string(100, 'x'));
  CHECK_FALSE(read_payload((dir.path / "bare").string(), error).has_value());
  CHECK(error.empty()); // no payload is not an error: it is the bare runtime
  spit(dir.path / "tiny", "x");
  CHECK_FALSE(read_payload((dir.path / "tiny").string(), error).has_value());
  CHECK(error.empty());

  // A trailer whose manifest range runs past the file.
  std::string bad(10, 'x');
  bad += "WEAVE-PAYLOAD-01";
  for (uint64_t v : {uint64_t(0), uint64_t(4), uint64_t(4), uint64_t(1) << 40})
    for (int i = 0; i < 8; ++i)
      bad += static_cast<char>(v >> (8 * i));
  spit(dir.path / "corrupt", bad);
  CHECK_FALSE(read_payload((dir.path / "corrupt").string(), error).has_value());
  CHECK(error.find("corrupt payload") != std::string::npos);
  CHECK_FALSE(append_payload((dir.path / "corrupt").string(), "o", "m", (dir.path / "out").string(),
                             error));

  CHECK_FALSE(read_payload((dir.path / "absent").string(), error).has_value());
  CHECK(error.find("absent: cannot open") != std::string::npos);

  CHECK_FALSE(append_payload((dir.path / "bare").string(), "o", "m",
                             (dir.path / "no-such-dir" / "tracer").string(), error));
  CHECK(error.find("no-such-dir/tracer") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "out"));
}

TEST_CASE("manifest: the example parses into what the runtime needs") {
  Manifest m = parse_ok(example_manifest());
  CHECK(m.format == 1);
  CHECK(m.target.path == "./fixture");
  CHECK(m.target.build_id == "abc/def");
  CHECK(m.target.go_version == "go1.19.8");
  CHECK(m.target.pointer_size == 8);
  CHECK(m.string_max == 8);
  CHECK(m.ringbuf_wakeup);
  CHECK(m.goid_offset == 152u);
  REQUIRE(m.probes.size() == 1);
  const ManifestProbe &p = m.probes[0];
  CHECK(p.program == "probe_0_entry");
  CHECK(p.event_size == 168);
  REQUIRE(p.attach.size() == 2);
  CHECK(p.attach[0].file_offset == 0xa0580);
  CHECK(p.attach[0].vaddr == 0x4a0580);
  CHECK(p.attach[1].kind == AttachKind::Return);
  CHECK(p.attach[1].cookie == 1);
  CHECK(m.attach_count() == 2);
  REQUIRE(p.captures.size() == 8);
  CHECK(p.captures[1].fields[0].kind == FieldKind::String);
  CHECK(p.captures[1].fields[0].max_len == 8);
  // h: Open(""), Port, Open("Inner"), Host, Ok, Close, Close.
  const std::vector<DisplayOp> &d = p.captures[2].display;
  REQUIRE(d.size() == 7);
  CHECK(d[0].kind == DisplayOp::Open);
  CHECK(d[1].label == "Port");
  CHECK(d[2].kind == DisplayOp::Open);
  CHECK(d[2].label == "Inner");
  CHECK(d[3].label == "Host");
  CHECK(d[3].field == 1);
  CHECK(d[5].kind == DisplayOp::Close);

  json j = example_manifest();
  j["options"]["ringbuf_wakeup"] = "none";
  j["probes"][0]["attach"][0]["file_offset"] = 655744; // plain integers are accepted too
  m = parse_ok(j);
  CHECK_FALSE(m.ringbuf_wakeup);
  CHECK(m.probes[0].attach[0].file_offset == 655744);
}

TEST_CASE("load_bias: where the probe fired less its attach point's link address") {
  Manifest m = parse_ok(example_manifest()); // attach: entry at 0x4a0580, return at 0x4a05c0
  weave_event_header h{};
  CHECK(load_bias(h, m.probes[0]) == 0); // ip unknown
  h.ip = 0x4a0580;
  CHECK(load_bias(h, m.probes[0]) == 0); // not position-independent
  h.ip = 0x55d0c0000000 + 0x4a05c0;
  h.point = 1; // the return point fired
  CHECK(load_bias(h, m.probes[0]) == 0x55d0c0000000);
  h.point = 2; // no such point: nothing to go by
  CHECK(load_bias(h, m.probes[0]) == 0);
}

TEST_CASE("manifest: each mistake is reported with the key it concerns") {
  struct Case {
    const char *what;
    void (*mutate)(json &);
    const char *expected; // a substring of the error
  };
  const Case cases[] = {
      {"missing format", [](json &j) { j.erase("format"); }, "format: missing"},
      {"future format", [](json &j) { j["format"] = 2; }, "format: 2 is not supported"},
      {"target not an object", [](json &j) { j["target"] = "x"; }, "target: expected an object"},
      {"missing build id", [](json &j) { j["target"].erase("build_id"); },
       "target.build_id: missing"},
      {"header size", [](json &j) { j["event_header_size"] = 40; }, "event_header_size: 40"},
      {"probes not an array", [](json &j) { j["probes"] = json::object(); },
       "probes: expected an array"},
      {"id is not the index", [](json &j) { j["probes"][0]["id"] = 3; },
       "probes[0].id: 3, but ids must equal their index 0"},
      {"missing program", [](json &j) { j["probes"][0].erase("program"); },
       "probes[0].program: missing"},
      {"event smaller than header", [](json &j) { j["probes"][0]["event_size"] = 40; },
       "probes[0].event_size: 40 is smaller"},
      {"no attach points", [](json &j) { j["probes"][0]["attach"] = json::array(); },
       "probes[0].attach: empty"},
      {"bad hex", [](json &j) { j["probes"][0]["attach"][0]["file_offset"] = "0xzz"; },
       "probes[0].attach[0].file_offset: expected an integer"},
      {"negative string", [](json &j) { j["probes"][0]["attach"][0]["file_offset"] = "-1"; },
       "probes[0].attach[0].file_offset: expected an integer"},
      {"negative number", [](json &j) { j["probes"][0]["attach"][1]["cookie"] = -1; },
       "probes[0].attach[1].cookie: expected a non-negative integer"},
      {"float", [](json &j) { j["probes"][0]["attach"][1]["cookie"] = 1.5; },
       "probes[0].attach[1].cookie: expected an integer"},
      {"attach kind", [](json &j) { j["probes"][0]["attach"][0]["kind"] = "exit"; },
       "probes[0].attach[0].kind: expected \"entry\" or \"return\""},
      {"field past the event",
       [](json &j) { j["probes"][0]["captures"][7]["fields"][0]["offset"] = 164; },
       "probes[0].captures[7].fields[0].offset: 164 + 8 bytes end past event_size 168"},
      {"string data past the event",
       [](json &j) { j["probes"][0]["captures"][6]["fields"][0]["max_len"] = 64; },
       "probes[0].captures[6].fields[0].offset: 144 + 72 bytes end past event_size 168"},
      {"string without max_len",
       [](json &j) { j["probes"][0]["captures"][1]["fields"][0].erase("max_len"); },
       "probes[0].captures[1].fields[0].max_len: missing"},
      {"field in the header",
       [](json &j) { j["probes"][0]["captures"][0]["fields"][0]["offset"] = 56; },
       "probes[0].captures[0].fields[0].offset: 56 lies inside the 64-byte event header"},
      {"unknown kind",
       [](json &j) { j["probes"][0]["captures"][0]["fields"][0]["kind"] = "decimal"; },
       "probes[0].captures[0].fields[0].kind: unknown field kind \"decimal\""},
      {"fault bit out of range", [](json &j) { j["probes"][0]["captures"][0]["fault_bit"] = 64; },
       "probes[0].captures[0].fault_bit: 64 is larger than 63"},
      {"fault bit twice", [](json &j) { j["probes"][0]["captures"][1]["fault_bit"] = 0; },
       "probes[0].captures[1].fault_bit: 0 is already used"},
      {"expr twice", [](json &j) { j["probes"][0]["captures"][1]["expr"] = "a"; },
       "probes[0].captures[1].expr: \"a\" is captured twice"},
      {"no fields", [](json &j) { j["probes"][0]["captures"][0]["fields"] = json::array(); },
       "probes[0].captures[0].fields: empty"},
      {"value and struct at once",
       [](json &j) { j["probes"][0]["captures"][2]["fields"][0]["name"] = "Inner"; },
       "probes[0].captures[2].fields[1].name: \"Inner.Host\" nests inside a field that is a "
       "value"},
      {"struct then value",
       [](json &j) { j["probes"][0]["captures"][2]["fields"][0]["name"] = "Inner.Host.X"; },
       "probes[0].captures[2].fields[1].name: \"Inner.Host\" is named twice, or is also a struct"},
      {"whole value among fields",
       [](json &j) { j["probes"][0]["captures"][2]["fields"][0]["name"] = ""; },
       "probes[0].captures[2].fields[0].name: \"\" names the whole value"},
      {"empty name component",
       [](json &j) { j["probes"][0]["captures"][2]["fields"][0]["name"] = "A..B"; },
       "probes[0].captures[2].fields[0].name: field name \"A..B\" has an empty component"},
      {"wakeup", [](json &j) { j["options"]["ringbuf_wakeup"] = "sometimes"; },
       "options.ringbuf_wakeup: expected \"always\" or \"none\""},
  };
  for (const Case &c : cases) {
    CAPTURE(c.what);
    json j = example_manifest();
    c.mutate(j);
    std::string error = parse_error(j);
    CHECK_MESSAGE(error.find(c.expected) != std::string::npos, error);
  }
  std::string error;
  CHECK_FALSE(parse_manifest("{\"format\": 1,", error).has_value());
  CHECK(error.rfind("not valid JSON: ", 0) == 0);
  CHECK_FALSE(parse_manifest("[]", error).has_value());
  CHECK(error.find("expected a JSON object") != std::string::npos);
}

TEST_CASE("output: text line of a hand-built event") {
  Manifest m = parse_ok(example_manifest());
  Event e = example_event();
  CHECK(format(m, OutputFormat::Text, e) ==
        "0.001234 pid=10 tid=11 goid=1 handle: main.(*Server).Handle(a=-128, s=\"hello, w\"...(12 bytes), "
        "h={Port=8080, Inner={Host=\"a\\\"b\\n\", Ok=true}}, p=0xc000010000, "
        "u=18446744073709551615, i=-9223372036854775808, bad=\"ok\\xff\\xfe\", "
        "missing=<fault>)\n");

  e.header().kind = WEAVE_EVENT_RETURN;
  e.header().faults = 0b100; // h faulted, missing now read
  e.header().ts_ns = kStart + 62'000'000'999;
  CHECK(format(m, OutputFormat::Text, e) ==
        "62.000000 pid=10 tid=11 goid=1 \u2190 handle: main.(*Server).Handle(a=-128, s=\"hello, w\"...(12 bytes), "
        "h=<fault>, p=0xc000010000, u=18446744073709551615, i=-9223372036854775808, "
        "bad=\"ok\\xff\\xfe\", missing={Port=3735928559})\n");
}

TEST_CASE("output: JSON line of a hand-built event") {
  Manifest m = parse_ok(example_manifest());
  Event e = example_event();
  std::string line = format(m, OutputFormat::Json, e);
  CHECK(line == "{\"probe\":\"handle\",\"function\":\"main.(*Server).Handle\",\"kind\":\"entry\","
                "\"pid\":10,\"tid\":11,\"goid\":1,\"ts_ns\":1001234567,\"args\":{\"a\":-128,"
                "\"s\":\"hello, w\",\"h\":{\"Port\":8080,\"Inner\":{\"Host\":\"a\\\"b\\u000a\","
                "\"Ok\":true}},\"p\":\"0xc000010000\",\"u\":18446744073709551615,"
                "\"i\":-9223372036854775808,\"bad\":\"ok\\udcff\\udcfe\",\"missing\":null},"
                "\"faults\":[\"missing\"],\"truncated\":[\"s\"],\"lengths\":{\"s\":12}}\n");

  // Without the lone surrogates it is JSON any parser reads, with the integers exact.
  e.str(144, "ok", 2, 8);
  e.header().faults = 0;
  json j = json::parse(format(m, OutputFormat::Json, e));
  CHECK(j["args"]["u"].get<uint64_t>() == std::numeric_limits<uint64_t>::max());
  CHECK(j["args"]["i"].get<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(j["args"]["h"]["Inner"]["Host"] == "a\"b\n");
  CHECK(j["args"]["missing"]["Port"] == 0xdeadbeef);
  CHECK_FALSE(j.contains("faults"));
  CHECK(j["truncated"] == json::array({"s"}));
  CHECK(j["lengths"] == json({{"s", 12}}));
  // "args" keeps the manifest's capture order. nlohmann::json sorts keys, so check the raw text.
  std::string raw = format(m, OutputFormat::Json, e);
  size_t last = 0;
  for (const char *expr :
       {"\"a\":", "\"s\":", "\"h\":", "\"p\":", "\"u\":", "\"i\":", "\"bad\":", "\"missing\":"}) {
    size_t at = raw.find(expr);
    CHECK(at > last);
    last = at;
  }

  // A truncated string inside a struct is named by its path.
  e.str(96, "12345678", 9, 8);
  j = json::parse(format(m, OutputFormat::Json, e));
  CHECK(j["truncated"] == json::array({"s", "h.Inner.Host"}));
  // Each with its full length, what the program's len() said (12 and 9), keyed alike.
  CHECK(j["lengths"] == json({{"s", 12}, {"h.Inner.Host", 9}}));
}

TEST_CASE("output: strings, escapes and UTF-8") {
  auto text = [](std::string_view s) {
    std::string out;
    append_text_string(out, s);
    return out;
  };
  auto js = [](std::string_view s) {
    std::string out;
    append_json_string(out, s);
    return out;
  };
  CHECK(text("") == "\"\"");
  CHECK(text("h\xc3\xa9llo \"w\xc3\xb6rld\"\t\\\r\n") ==
        "\"h\xc3\xa9llo \\\"w\xc3\xb6rld\\\"\\t\\\\\\r\\n\"");
  CHECK(text(std::string("\0\x01\x1b\x7f", 4)) == "\"\\x00\\x01\\x1b\\x7f\"");
  CHECK(text("\xc2\x9b") == "\"\\u009b\""); // C1 CSI: a terminal would act on it
  CHECK(text("\xf0\x9f\x98\x80") == "\"\xf0\x9f\x98\x80\"");
  CHECK(text("\xe2\x82") == "\"\\xe2\\x82\""); // cut off mid-sequence by truncation
  CHECK(js(std::string("\0\x1f\x7f\"\\/", 6)) == "\"\\u0000\\u001f\\u007f\\\"\\\\/\"");
  CHECK(js("bad\xff\xfe"
           "0") == "\"bad\\udcff\\udcfe0\"");
  CHECK(js("\xc3\xa9\xc3") == "\"\xc3\xa9\\udcc3\"");
  CHECK(js("\xc0\x80") == "\"\\udcc0\\udc80\""); // overlong NUL

  struct Utf8Case {
    const char *bytes;
    size_t length;
  };
  for (Utf8Case c : std::initializer_list<Utf8Case>{
           {"A", 1},
           {"\xc2\x80", 2},
           {"\xdf\xbf", 2},
           {"\xe0\xa0\x80", 3},
           {"\xef\xbf\xbf", 3},
           {"\xf0\x90\x80\x80", 4},
           {"\xf4\x8f\xbf\xbf", 4},
           {"\x80", 0},             // continuation byte alone
           {"\xc1\xbf", 0},         // overlong
           {"\xe0\x9f\xbf", 0},     // overlong
           {"\xed\xa0\x80", 0},     // UTF-16 surrogate
           {"\xf0\x8f\xbf\xbf", 0}, // overlong
           {"\xf4\x90\x80\x80", 0}, // past U+10FFFF
           {"\xf5\x80\x80\x80", 0},
           {"\xe2\x82", 0}, // short
       }) {
    CAPTURE(c.bytes);
    CHECK(utf8_sequence_length(reinterpret_cast<const unsigned char *>(c.bytes),
                               std::strlen(c.bytes)) == c.length);
  }

  std::string out;
  append_i64(out, std::numeric_limits<int64_t>::min());
  out += ' ';
  append_i64(out, 0);
  out += ' ';
  append_u64(out, std::numeric_limits<uint64_t>::max());
  out += ' ';
  append_hex(out, 0);
  out += ' ';
  append_hex(out, 0xffffffffffffffff);
  CHECK(out == "-9223372036854775808 0 18446744073709551615 0x0 0xffffffffffffffff");
}

TEST_CASE("output: malformed events are counted and skipped") {
  Manifest m = parse_ok(example_manifest());
  EventPrinter printer(m, OutputFormat::Json, kStart);
  std::string out;
  Event e = example_event();
  CHECK_FALSE(printer.format(e.bytes.data(), 63, out));  // shorter than the header
  CHECK_FALSE(printer.format(e.bytes.data(), 167, out)); // shorter than event_size
  e.header().probe_id = 1;
  CHECK_FALSE(printer.format(e.bytes.data(), e.bytes.size(), out));
  e.header().probe_id = 0;
  e.header().kind = 7;
  CHECK_FALSE(printer.format(e.bytes.data(), e.bytes.size(), out));
  CHECK(out.empty());

  // The writer counts per probe, skips the bad ones, and writes on flush.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  {
    EventWriter writer(m, OutputFormat::Text, kStart, fds[1]);
    Event good = example_event();
    writer.on_event(good.bytes.data(), good.bytes.size());
    writer.on_event(e.bytes.data(), e.bytes.size());
    writer.on_event(good.bytes.data(), 10);
    writer.on_event(good.bytes.data(), good.bytes.size());
    CHECK(writer.events_per_probe() == std::vector<uint64_t>{2});
    CHECK(writer.malformed() == 2);
    CHECK(writer.flush());
    CHECK_FALSE(writer.failed());
  }
  close(fds[1]);
  std::string written;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    written.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  CHECK(std::count(written.begin(), written.end(), '\n') == 2);
  CHECK(written.rfind("0.001234 pid=10 tid=11 goid=1 handle: main.(*Server).Handle(a=-128", 0) == 0);

  // A closed reader turns into a write error, reported once, and counting goes on.
  REQUIRE(pipe(fds) == 0);
  close(fds[0]);
  signal(SIGPIPE, SIG_IGN);
  EventWriter writer(m, OutputFormat::Text, kStart, fds[1]);
  Event good = example_event();
  writer.on_event(good.bytes.data(), good.bytes.size());
  CHECK_FALSE(writer.flush());
  CHECK(writer.error().find("Broken pipe") != std::string::npos);
  writer.on_event(good.bytes.data(), good.bytes.size());
  CHECK(writer.events_per_probe() == std::vector<uint64_t>{2});
  close(fds[1]);
}

TEST_CASE("output: no heap allocation per event, and output leaves in large writes") {
  // The tracer's hot path is EventWriter::on_event: decode and format into a buffer that was
  // sized once, then one write(2) per 64 KiB or per drained batch.
  Manifest m = parse_ok(example_manifest());
  for (OutputFormat f : {OutputFormat::Text, OutputFormat::Json}) {
    CAPTURE(int(f));
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    REQUIRE(fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0);
    size_t bytes = 0, reads = 0, biggest = 0;
    auto drain = [&] {
      static char buf[1 << 17];
      for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) {
        bytes += static_cast<size_t>(n);
        biggest = std::max(biggest, static_cast<size_t>(n));
        ++reads;
      }
    };
    fcntl(fds[1], F_SETPIPE_SZ, 1 << 20); // room for a whole 64 KiB write at once
    {
      EventWriter writer(m, f, kStart, fds[1]);
      Event e = example_event(); // strings, a struct, a fault, a truncation: every path
      Event r = example_event();
      r.header().kind = WEAVE_EVENT_RETURN;
      writer.on_event(e.bytes.data(), e.bytes.size()); // warm up
      writer.flush();
      drain();
      g_allocations = 0;
      g_count_allocations = true;
      for (int i = 0; i < 20000; ++i) {
        writer.on_event((i & 1 ? r : e).bytes.data(), e.bytes.size());
        if (i % 500 == 499) { // a drained batch ends with a flush
          g_count_allocations = false;
          drain();
          g_count_allocations = true;
          writer.flush();
        }
      }
      g_count_allocations = false;
      CHECK(g_allocations == 0);
      writer.flush();
      drain();
      CHECK(writer.events_per_probe() == std::vector<uint64_t>{20001});
    }
    close(fds[1]);
    drain();
    close(fds[0]);
    // ~250 bytes a line, flushed at 64 KiB or every 500 events: writes of tens of KiB.
    CHECK(bytes > 20000 * 200);
    CHECK(bytes / reads > 32 * 1024);
  }
}

TEST_CASE("stats: the table, and hits == events + lost") {
  json j = example_manifest();
  j["probes"].push_back(j["probes"][0]);
  j["probes"][1]["id"] = 1;
  j["probes"][1]["name"] = "handle.return";
  j["probes"][1]["program"] = "probe_1_return";
  j["probes"][1]["attach"] = {{{"kind", "return"}, {"file_offset", "0xa05c0"}, {"cookie", 1}},
                              {{"kind", "return"}, {"file_offset", "0xa05d0"}, {"cookie", 1}},
                              {{"kind", "return"}, {"file_offset", "0xa05e0"}, {"cookie", 1}}};
  j["probes"].push_back(j["probes"][0]);
  j["probes"][2]["id"] = 2;
  j["probes"][2]["name"] = "serve"; // same shape as handle's entry: the same program
  j["probes"][2]["attach"] = {{{"kind", "entry"}, {"file_offset", "0xa0700"}, {"cookie", 2}}};
  Manifest m = parse_ok(j);
  CHECK(std::string(probe_kind(m.probes[0])) == "entry+return");
  CHECK(std::string(probe_kind(m.probes[1])) == "return");

  StatsReport report;
  report.hits_known = report.run_time_known = true;
  report.probes = {{1000, 990, 10}, {1000, 1000, 0}, {200, 200, 0}};
  // Program 0 ran 1,200 times for handle and serve (and other processes), program 1 1,000 times.
  report.programs = {{1200, 1200 * 250}, {1000, 1000 * 301}};
  report.program_of_probe = {0, 1, 0};
  std::vector<std::string> lines = format_stats(m, report);
  REQUIRE(lines.size() == 6);
  CHECK(lines[0] == "probe          kind          points  hits  events  lost  ns/run");
  CHECK(lines[1] == "handle         entry+return       2  1000     990    10     250");
  CHECK(lines[2] == "handle.return  return             3  1000    1000     0     301");
  CHECK(lines[3] == "serve          entry              1   200     200     0     250");
  CHECK(lines[4] == "total                             6  2200    2190    10     273");
  CHECK(lines[5] == "2 BPF programs for 3 probes: 2200 runs, 273 ns/run");
  CHECK(stats_mismatches(m, report).empty());

  report.probes[1].events = 999; // one event that never arrived
  CHECK_FALSE(stats_add_up(report.probes[1]));
  CHECK(stats_mismatches(m, report) ==
        std::vector<std::string>{"handle.return: 1000 hits != 999 events + 0 lost"});

  // Unknown hits (an object without weave_hits) and no run times: "-", and nothing to check.
  report.hits_known = report.run_time_known = false;
  lines = format_stats(m, report);
  REQUIRE(lines.size() == 5);
  CHECK(lines[1] == "handle         entry+return       2     -     990    10       -");
  CHECK(stats_mismatches(m, report).empty());
  // A program that never ran has no average.
  report.run_time_known = true;
  report.programs[0].runs = 0;
  CHECK(format_stats(m, report)[1].substr(format_stats(m, report)[1].size() - 1) == "-");
}

TEST_CASE("stats: min_duration's evicted and held columns, shown when some, in the balance") {
  json j = example_manifest();
  Manifest m = parse_ok(j);
  StatsReport report;
  report.hits_known = true;
  ProbeStats s;
  s.hits = 100;
  s.events = 40;
  s.filtered = 55;
  s.evicted = 3;
  s.held = 2;
  report.probes = {s};
  std::vector<std::string> lines = format_stats(m, report);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "probe   kind          points  hits  events  lost  filtered  evicted  held  ns/run");
  CHECK(lines[1] == "handle  entry+return       2   100      40     0        55        3     2       -");
  CHECK(stats_add_up(s));
  CHECK(stats_mismatches(m, report).empty());
  report.probes[0].held = 0; // an entry unaccounted for
  CHECK(stats_mismatches(m, report) ==
        std::vector<std::string>{"handle: 100 hits != 40 events + 0 lost + 55 filtered + 3 evicted"});
}

namespace {

// main.Check's return event in the stripped fixture: `res error` and the call's duration.
json check_return_manifest() {
  json field_type = {{"name", "type"}, {"kind", "uint"}, {"go_type", "*runtime._type"}, {"size", 8}, {"offset", 72}};
  json field_data = {{"name", "data"}, {"kind", "pointer"}, {"go_type", "unsafe.Pointer"}, {"size", 8}, {"offset", 80}};
  json field_value = {{"name", "value"}, {"kind", "uint"}, {"go_type", "uint64"}, {"size", 8}, {"offset", 88}};
  json field_text = {{"name", "text"}, {"kind", "string"}, {"go_type", "string"}, {"size", 16},
                     {"offset", 96},   {"max_len", 64}};
  return {{"format", 1},
          {"weave_version", "0.1.0"},
          {"target",
           {{"path", WEAVE_FIXTURE_DIR "/fixture_stripped"},
            {"build_id", "x"},
            {"go_version", "go1.19.8"},
            {"arch", "amd64"},
            {"pointer_size", 8}}},
          {"event_header_size", 64},
          {"probes",
           {{{"id", 0},
             {"name", "main.Check"},
             {"function", "main.Check"},
             {"kind", "return"},
             {"abi", "ABIInternal"},
             {"program", "probe_0_return"},
             {"event_size", 168},
             {"duration_offset", 64},
             {"attach", {{{"kind", "return"}, {"vaddr", "0x4a44c0"}, {"file_offset", "0xa44c0"}, {"cookie", 0}}}},
             {"captures",
              {{{"expr", "res"},
                {"type", "error"},
                {"fault_bit", 0},
                {"fields", {field_type, field_data, field_value, field_text}},
                {"interfaces", {""}}}}}}}}};
}

} // namespace

TEST_CASE("output: without DWARF an interface's type comes from the binary; an address that is none is marked") {
  std::string stripped = WEAVE_FIXTURE_DIR "/fixture_stripped";
  // The descriptor of *errors.errorString, found by its name among the stripped binary's own.
  auto image = load_binary(stripped);
  auto table = Pclntab::load(image);
  REQUIRE(table);
  uint64_t boom_type = 0;
  for (uint64_t at = table->types_start(); at < table->types_end() && !boom_type; at += 8)
    if (auto t = table->type_at(at); t && t->name == "*errors.errorString")
      boom_type = at;
  REQUIRE(boom_type != 0);
  // The manifest says where the descriptors are and which build it was made for; the tracer reads
  // the names from the file.
  json j_manifest = check_return_manifest();
  std::string error;
  j_manifest["target"]["build_id"] = read_build_id_file(stripped, error);
  REQUIRE(!j_manifest["target"]["build_id"].get<std::string>().empty());
  std::string start, end;
  append_hex(start, table->types_start());
  append_hex(end, table->types_end());
  j_manifest["type_descriptors"] = {{"start", start}, {"end", end}};
  Manifest m = parse_ok(j_manifest);
  Symbolizer symbolizer(stripped, m);
  REQUIRE(symbolizer.error().empty());
  EventPrinter text(m, OutputFormat::Text, kStart), json_printer(m, OutputFormat::Json, kStart);
  text.set_symbolizer(&symbolizer);
  json_printer.set_symbolizer(&symbolizer);
  Event e(168);
  e.header() = {kStart + 2'000'000, 1, 0, 0, 10, 11, 0, WEAVE_EVENT_RETURN};
  e.u64(64, 1500); // duration
  e.u64(72, boom_type).u64(80, 0xc000012345).str(96, "boom", 4, 64);
  auto line = [&](EventPrinter &p) {
    std::string out;
    REQUIRE(p.format(e.bytes.data(), e.bytes.size(), out));
    return out;
  };
  CHECK(line(text) == "0.002000 pid=10 tid=11 goid=1 \u2190 main.Check(res=*errors.errorString(\"boom\"))  1.5µs\n");
  CHECK(json::parse(line(json_printer))["results"]["res"] == json{{"type", "*errors.errorString"}, {"error", "boom"}});
  // Inside the descriptor, not where one starts: marked with its address, never named.
  e.u64(72, boom_type + 8);
  CHECK(line(text) == "0.002000 pid=10 tid=11 goid=1 \u2190 main.Check(res=<unknown type " + [&] {
          std::string s;
          append_hex(s, boom_type + 8);
          return s;
        }() + ">(0xc000012345))  1.5µs\n");
  json j = json::parse(line(json_printer));
  CHECK(j["results"]["res"]["type"].is_null());
  CHECK(j["results"]["res"]["data"] == "0xc000012345");
  // Without a symbolizer (no binary to read) the same: marked.
  EventPrinter bare(m, OutputFormat::Text, kStart);
  CHECK(line(bare).find("res=<unknown type ") != std::string::npos);
  // Only the descriptors looked up were read: a few blocks of the file, not its type table.
  CHECK(symbolizer.types().looked_up() == 2);
  CHECK(symbolizer.types().blocks_read() < 16);
  // A file of another build at the path: its descriptors are not the manifest's, so none is named.
  e.u64(72, boom_type);
  j_manifest["target"]["build_id"] = "another build";
  Manifest other = parse_ok(j_manifest);
  Symbolizer other_symbolizer(stripped, other);
  EventPrinter other_text(other, OutputFormat::Text, kStart);
  other_text.set_symbolizer(&other_symbolizer);
  CHECK(line(other_text).find("res=<unknown type ") != std::string::npos);
  CHECK(other_symbolizer.types().error().find("not the manifest's another build") != std::string::npos);
}

TEST_CASE("output: a return whose entry was not seen says so in text and JSON") {
  Manifest m = parse_ok(check_return_manifest());
  EventPrinter text(m, OutputFormat::Text, kStart), json_printer(m, OutputFormat::Json, kStart);
  Event e(168);
  e.header() = {kStart + 2'000'000, 1, 0, 0, 10, 11, 0, WEAVE_EVENT_RETURN};
  auto line = [&](EventPrinter &p) {
    std::string out;
    REQUIRE(p.format(e.bytes.data(), e.bytes.size(), out));
    return out;
  };
  // duration 0: the BPF side found no entry to pair the return with.
  CHECK(line(text) == "0.002000 pid=10 tid=11 goid=1 \u2190 main.Check(res=nil)  (entry not seen)\n");
  json j = json::parse(line(json_printer));
  CHECK(j["entry_seen"] == false);
  CHECK_FALSE(j.contains("duration_ns"));
  e.u64(64, 2'500'000);
  CHECK(line(text) == "0.002000 pid=10 tid=11 goid=1 \u2190 main.Check(res=nil)  2.5ms\n");
  j = json::parse(line(json_printer));
  CHECK_FALSE(j.contains("entry_seen"));
  CHECK(j["duration_ns"] == 2'500'000);
}

// contents: true: a candidate type's fields print as its value only when the type word is its
// descriptor; a nil *T as nil; another word as without contents. A manifest whose candidate does
// not lie after its interface, is not hidden or is named outside its prefix is refused.
TEST_CASE("output: an interface's contents by the candidate its type word names, and no other") {
  json j = check_return_manifest();
  json &probe = j["probes"][0];
  probe["event_size"] = 176;
  json &capture = probe["captures"][0];
  capture["fields"].push_back(
      {{"name", "#0.Limit"}, {"kind", "int"}, {"go_type", "int"}, {"size", 8}, {"offset", 168}, {"hidden", true}});
  capture["contents"] = {{{"interface", ""},
                          {"type_field", 0},
                          {"data_field", 1},
                          {"types", {{{"type", "*main.Q"}, {"descriptor", 0x4a0000}, {"first", 4}, {"last", 5},
                                      {"pointer", true}}}}}};
  Manifest m = parse_ok(j);
  EventPrinter text(m, OutputFormat::Text, kStart), json_printer(m, OutputFormat::Json, kStart);
  Event e(176);
  e.header() = {kStart + 2'000'000, 1, 0, 0, 10, 11, 0, WEAVE_EVENT_RETURN};
  e.u64(64, 1500);
  e.u64(72, 0x4a0000).u64(80, 0xc000012345).u64(168, static_cast<uint64_t>(-7));
  auto line = [&](EventPrinter &p) {
    std::string out;
    REQUIRE(p.format(e.bytes.data(), e.bytes.size(), out));
    return out;
  };
  CHECK(line(text).find("main.Check(res=*main.Q{Limit=-7})") != std::string::npos);
  CHECK(json::parse(line(json_printer))["results"]["res"] ==
        json{{"type", "*main.Q"}, {"value", {{"Limit", -7}}}});
  e.u64(80, 0); // a nil *main.Q in a non-nil interface
  CHECK(line(text).find("res=*main.Q(nil)") != std::string::npos);
  CHECK(json::parse(line(json_printer))["results"]["res"] == json{{"type", "*main.Q"}, {"value", nullptr}});
  e.u64(72, 0x4a0008).u64(80, 0xc000012345); // another type: never read as *main.Q
  CHECK(line(text).find("res=<unknown type 0x4a0008>(0xc000012345)") != std::string::npos);
  e.u64(72, 0);
  CHECK(line(text).find("res=nil") != std::string::npos);

  struct Case {
    const char *what;
    std::function<void(json &)> mutate;
    std::string expected;
  };
  for (const Case &c : std::vector<Case>{
           {"inside the interface", [](json &k) { k["types"][0]["first"] = 1; },
            "[first, last) must be a non-empty range of fields after the interface's own"},
           {"not hidden", [](json &k) { (void)k; }, "its fields must be hidden in the capture"},
           {"another prefix", [](json &k) { k["types"][0]["type"] = "*main.Q"; }, "is not under \"#0\""},
           {"not the type word", [](json &k) { k["type_field"] = 1; },
            "type_field and data_field must name the interface's type and data fields"},
       }) {
    CAPTURE(c.what);
    json bad = j;
    json &f = bad["probes"][0]["captures"][0]["fields"][4];
    if (std::string(c.what) == "not hidden")
      f["hidden"] = false;
    if (std::string(c.what) == "another prefix")
      f["name"] = "#1.Limit";
    c.mutate(bad["probes"][0]["captures"][0]["contents"][0]);
    std::string error = parse_error(bad);
    CHECK_MESSAGE(error.find(c.expected) != std::string::npos, error);
  }
}

TEST_CASE("output: strings in a probe's string area, read in one span or each in its own slot") {
  // Two strings whose slots hold their length and their bytes' position in the area at 96: a u64
  // of the bytes used, then 8 bytes of span and a slot of 8 for each (generator: place_strings).
  json j = example_manifest();
  json &probe = j["probes"][0];
  auto string_field = [](const char *name, int offset) {
    return json{{"name", name}, {"kind", "string"}, {"go_type", "string"}, {"size", 16},
                {"offset", offset}, {"max_len", 8}, {"in_area", true}};
  };
  probe["captures"] = json::array({
      {{"expr", "m"}, {"type", "string"}, {"fault_bit", 0}, {"fields", {string_field("", 64)}}},
      {{"expr", "u"}, {"type", "string"}, {"fault_bit", 1}, {"fields", {string_field("", 80)}}},
  });
  probe["event_size"] = 96 + 8 + 24;
  probe["strings"] = {{"offset", 96}, {"size", 24}};
  Manifest m = parse_ok(j);
  REQUIRE(m.probes[0].captures[1].fields[0].in_area);
  Event e(96 + 8 + 24);
  e.header() = {kStart, 1, 0, 0, 10, 11, 0, WEAVE_EVENT_ENTRY};
  // One span "GET /a": m at 0 (3 bytes), u at 4 (2 bytes), 6 bytes used.
  e.u64(64, 3).u64(72, 0).u64(80, 2).u64(88, 4).u64(96, 6);
  std::memcpy(e.bytes.data() + 104, "GET /a", 6);
  CHECK(format(m, OutputFormat::Text, e) ==
        "0.000000 pid=10 tid=11 goid=1 handle: main.(*Server).Handle(m=\"GET\", u=\"/a\")\n");
  // Each in its own slot (the span faulted): u cut to max_len, its full length kept.
  e.u64(64, 3).u64(72, 8).u64(80, 12).u64(88, 16).u64(96, 24);
  std::memcpy(e.bytes.data() + 112, "GET\0\0\0\0\0/a/b/c/d", 16);
  CHECK(format(m, OutputFormat::Text, e) ==
        "0.000000 pid=10 tid=11 goid=1 handle: main.(*Server).Handle(m=\"GET\", u=\"/a/b/c/d\"...(12 bytes))\n");
  // A position past the bytes used shows no bytes, never memory outside the area.
  e.u64(96, 6).u64(72, 0).u64(88, 5);
  CHECK(format(m, OutputFormat::Text, e) ==
        "0.000000 pid=10 tid=11 goid=1 handle: main.(*Server).Handle(m=\"GET\", u=\"\"...(12 bytes))\n");
  e.u64(88, ~uint64_t{0});
  CHECK(format(m, OutputFormat::Text, e) ==
        "0.000000 pid=10 tid=11 goid=1 handle: main.(*Server).Handle(m=\"GET\", u=\"\"...(12 bytes))\n");

  // Records as long as their data (weave_bpf.h: weave_scratch_emit): the fixed part, strings_len,
  // and the bytes it counts. The same span in a 110-byte record reads as in the whole one.
  REQUIRE(m.probes[0].min_size == 104);
  e.u64(64, 3).u64(72, 0).u64(80, 2).u64(88, 4).u64(96, 6);
  std::memcpy(e.bytes.data() + 104, "GET /a", 6);
  {
    EventPrinter printer(m, OutputFormat::Text, kStart);
    std::string out;
    CHECK(printer.format(e.bytes.data(), 110, out));
    CHECK(out == "0.000000 pid=10 tid=11 goid=1 handle: main.(*Server).Handle(m=\"GET\", u=\"/a\")\n");
    CallEvent ce;
    CHECK(Calls::decode(m, e.bytes.data(), 104 + 6, ce));
    // Shorter than its fixed part, or counting more bytes than it holds: malformed, never read.
    out.clear();
    CHECK_FALSE(printer.format(e.bytes.data(), 103, out));
    CHECK_FALSE(printer.format(e.bytes.data(), 109, out));
    CHECK_FALSE(Calls::decode(m, e.bytes.data(), 109, ce));
    e.u64(96, ~uint64_t{0});
    CHECK_FALSE(printer.format(e.bytes.data(), 110, out));
    CHECK(printer.format(e.bytes.data(), e.bytes.size(), out)); // whole: the area's size bounds it
    CHECK(out.empty() == false);
  }
  // A probe whose area does not end its record sends it whole.
  json inner = j;
  inner["probes"][0]["event_size"] = 96 + 8 + 24 + 8;
  CHECK(parse_ok(inner).probes[0].min_size == 96 + 8 + 24 + 8);

  // The manifest's mistakes: no area, an area outside the record, a string larger than the area.
  json no_area = j;
  no_area["probes"][0].erase("strings");
  CHECK(parse_error(no_area).find("has no \"strings\"") != std::string::npos);
  json outside = j;
  outside["probes"][0]["strings"]["size"] = 32;
  CHECK(parse_error(outside).find("probes[0].strings: outside the event record") != std::string::npos);
  json larger = j;
  larger["probes"][0]["captures"][1]["fields"][0]["max_len"] = 32;
  CHECK(parse_error(larger).find("exceeds its probe's string area") != std::string::npos);
}

TEST_CASE("output: a map's pairs print sorted by key, and a list cut by its bound ends with ...") {
  json j = check_return_manifest();
  json &probe = j["probes"][0];
  probe["event_size"] = 184;
  auto int_field = [](const std::string &name, int offset, bool hidden = false) {
    return json{{"name", name}, {"kind", "int"}, {"go_type", "int"}, {"size", 8}, {"offset", offset}, {"hidden", hidden}};
  };
  json fields = {int_field("len", 72), int_field("#pairs", 80, true)};
  for (int i = 0; i < 3; ++i)
    for (const char *part : {"key", "value"})
      fields.push_back({{"name", "#slot." + std::to_string(i) + "." + part}, {"kind", "pointer"}, {"go_type", "uintptr"},
                        {"size", 8}, {"offset", 88 + 8 * (2 * i + (part[0] == 'v'))}, {"hidden", true}});
  for (int i = 0; i < 3; ++i) {
    fields.push_back(int_field("items." + std::to_string(i) + ".key", 136 + 16 * i));
    fields.push_back(int_field("items." + std::to_string(i) + ".value", 144 + 16 * i));
  }
  probe["captures"] = {{{"expr", "m"},
                        {"type", "map[int]int"},
                        {"fault_bit", 0},
                        {"fields", fields},
                        {"lists", {{{"path", "items"}, {"count", "#pairs"}, {"map", true}}}}}};
  Manifest m = parse_ok(j);
  EventPrinter text(m, OutputFormat::Text, kStart), json_printer(m, OutputFormat::Json, kStart);
  Event e(184);
  e.header() = {kStart + 2'000'000, 1, 0, 0, 10, 11, 0, WEAVE_EVENT_RETURN};
  e.u64(64, 1500);
  // Found in memory order 30, -2, 7; the map has 5 pairs.
  e.u64(72, 5).u64(80, 3);
  e.u64(136, 30).u64(144, 300).u64(152, static_cast<uint64_t>(-2)).u64(160, static_cast<uint64_t>(-20));
  e.u64(168, 7).u64(176, 70);
  auto line = [&](EventPrinter &p) {
    std::string out;
    REQUIRE(p.format(e.bytes.data(), e.bytes.size(), out));
    return out;
  };
  CHECK(line(text).find("m={len=5, items=[{key=-2, value=-20}, {key=7, value=70}, {key=30, value=300}, ...]}") !=
        std::string::npos);
  CHECK(json::parse(line(json_printer))["results"]["m"] ==
        json{{"len", 5}, {"items", {{{"key", -2}, {"value", -20}}, {{"key", 7}, {"value", 70}}, {{"key", 30}, {"value", 300}}}}});
  // Two found of two: all there is, no marker; the third slot's bytes are never shown.
  e.u64(72, 2).u64(80, 2);
  CHECK(line(text).find("m={len=2, items=[{key=-2, value=-20}, {key=30, value=300}]}") != std::string::npos);
  // Fewer found than the map has (the walk's bound): the marker too.
  e.u64(72, 3);
  CHECK(line(text).find("m={len=3, items=[{key=-2, value=-20}, {key=30, value=300}, ...]}") != std::string::npos);
  e.u64(72, 0).u64(80, 0);
  CHECK(line(text).find("m={len=0, items=[]}") != std::string::npos);
  // Sorting reuses the printer's storage: no allocation once it has printed one map.
  e.u64(72, 5).u64(80, 3);
  std::string out;
  out.reserve(4096);
  REQUIRE(text.format(e.bytes.data(), e.bytes.size(), out));
  out.clear();
  g_allocations = 0;
  g_count_allocations = true;
  bool ok = text.format(e.bytes.data(), e.bytes.size(), out);
  g_count_allocations = false;
  CHECK(ok);
  CHECK(g_allocations == 0);
}

// RingReader on a ring laid out in memory as the kernel lays it out: the paths a live ring reaches
// only by chance (a record still being written at the drain) or never (a header no kernel writes).
// The live ring's wraps are tested end to end (tests/e2e/test_limits.cpp).
namespace {

struct FakeRing {
  static constexpr size_t kSize = 64;
  unsigned long consumer = 0, producer = 0;
  std::vector<uint8_t> data = std::vector<uint8_t>(kSize, 0xee);
  std::vector<std::vector<uint8_t>> got;

  // Writes a record at producer_pos as bpf_ringbuf_reserve + submit would: header, then data
  // wrapping past the end, then producer_pos advanced by the 8-rounded total.
  void put(const std::vector<uint8_t> &bytes, uint32_t flags = 0) {
    size_t at = producer & (kSize - 1);
    uint32_t word = static_cast<uint32_t>(bytes.size()) | flags;
    std::memcpy(&data[at], &word, 4);
    for (size_t i = 0; i < bytes.size(); ++i)
      data[(at + 8 + i) & (kSize - 1)] = bytes[i];
    producer += (bytes.size() + 8 + 7) & ~size_t(7);
  }
  static void on_record(void *ctx, const void *record, size_t size) {
    auto *ring = static_cast<FakeRing *>(ctx);
    const auto *p = static_cast<const uint8_t *>(record);
    ring->got.emplace_back(p, p + size);
  }
};

std::vector<uint8_t> bytes(size_t n, uint8_t first) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>(first + i);
  return v;
}

} // namespace

TEST_CASE("ring reader: in order, a wrapped record joined, the busy bit waits, discarded ones skipped") {
  FakeRing ring;
  weave::RingReader reader(FakeRing::on_record, &ring);
  reader.use_memory(&ring.consumer, &ring.producer, ring.data.data(), FakeRing::kSize);
  CHECK(reader.consume() == 0);
  ring.put(bytes(13, 1));                     // [0, 24)
  ring.put(bytes(4, 50), BPF_RINGBUF_DISCARD_BIT); // [24, 40)
  ring.put(bytes(5, 60));                     // [40, 56)
  CHECK(reader.consume() == 2);
  CHECK(ring.consumer == 56);
  ring.put(bytes(30, 100)); // header at 56, data at 0..30: starts at the ring's start, no wrap
  CHECK(reader.consume() == 1);
  REQUIRE(ring.got.size() == 3);
  CHECK(ring.got[0] == bytes(13, 1));
  CHECK(ring.got[1] == bytes(5, 60));
  CHECK(ring.got[2] == bytes(30, 100));
  CHECK(reader.wrapped() == 0);
  // At 96 (offset 32): header, then 24 bytes at 40..64 and 16 more at 0..16: joined.
  ring.consumer = ring.producer; // 96
  ring.put(bytes(40, 7));
  ring.put(bytes(1, 9));
  // Committed but the second still busy: the first is read, the second waits for it.
  uint32_t busy;
  std::memcpy(&busy, &ring.data[(96 + 48) & 63], 4);
  busy |= BPF_RINGBUF_BUSY_BIT;
  std::memcpy(&ring.data[(96 + 48) & 63], &busy, 4);
  CHECK(reader.consume() == 1);
  CHECK(ring.consumer == 96 + 48);
  CHECK(reader.wrapped() == 1);
  REQUIRE(ring.got.size() == 4);
  CHECK(ring.got[3] == bytes(40, 7));
  busy &= ~BPF_RINGBUF_BUSY_BIT;
  std::memcpy(&ring.data[(96 + 48) & 63], &busy, 4);
  CHECK(reader.consume() == 1);
  REQUIRE(ring.got.size() == 5);
  CHECK(ring.got[4] == bytes(1, 9));
  CHECK(ring.consumer == ring.producer);
  CHECK(reader.malformed() == 0);
}

TEST_CASE("ring reader: a header past the ring or producer_pos is malformed: counted, never read past") {
  for (uint32_t claimed : {uint32_t(57), uint32_t(64), uint32_t(1000), uint32_t(0x3fffffff)}) {
    CAPTURE(claimed);
    FakeRing ring;
    weave::RingReader reader(FakeRing::on_record, &ring);
    reader.use_memory(&ring.consumer, &ring.producer, ring.data.data(), FakeRing::kSize);
    ring.put(bytes(3, 1));
    ring.put(bytes(8, 1));
    std::memcpy(&ring.data[16], &claimed, 4); // the second header lies
    CHECK(reader.consume() == 1);
    CHECK(reader.malformed() == 1);
    CHECK(ring.consumer == ring.producer);
    CHECK(reader.consume() == 0);
    REQUIRE(ring.got.size() == 1);
    CHECK(ring.got[0] == bytes(3, 1));
  }
  // A length inside the ring but past what the producer published.
  FakeRing ring;
  weave::RingReader reader(FakeRing::on_record, &ring);
  reader.use_memory(&ring.consumer, &ring.producer, ring.data.data(), FakeRing::kSize);
  ring.put(bytes(8, 1)); // [0, 16)
  uint32_t longer = 16;  // 24 bytes with the header: 8 past producer_pos
  std::memcpy(&ring.data[0], &longer, 4);
  CHECK(reader.consume() == 0);
  CHECK(reader.malformed() == 1);
  CHECK(ring.got.empty());
}

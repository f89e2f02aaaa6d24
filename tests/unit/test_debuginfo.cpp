// Tests of the debuginfo stage against the Go fixtures (tests/e2e/fixture/main.go, built with
// Go 1.19.8 for amd64, 386 and arm64). Expected layouts are the Go spec's, cross-checked with
// llvm-dwarfdump on the fixtures.
#include "gobinary/binary.h"
#include "common/diag.h"
#include "debuginfo/debuginfo.h"

#include <doctest/doctest.h>

#include "test_support.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

using namespace weave;
using namespace weave_test;

namespace {


// One DebugInfo per fixture for the whole run: opening and indexing is the slow part.
DebugInfo &fixture(const std::string &path, int ptr_size) {
  static std::map<std::string, std::unique_ptr<DebugInfo>> cache;
  auto &slot = cache[path];
  if (!slot)
    slot = DebugInfo::open(path, ptr_size);
  return *slot;
}
DebugInfo &amd64() {
  return fixture(kFixture, 8);
}
DebugInfo &i386() {
  return fixture(kFixture386, 4);
}
DebugInfo &arm64() {
  return fixture(kFixtureArm64, 8);
}

const GoType &type_of(DebugInfo &info, TypeId id) {
  REQUIRE(id != kNoType);
  return info.types().at(id);
}

const GoField &field(DebugInfo &info, const GoType &type, const std::string &name) {
  for (const GoField &f : type.fields)
    if (f.name == name)
      return f;
  FAIL("no field " << name << " in " << type.name);
  static GoField none;
  return none;
}

const GoParam &param(const GoFunction &fn, const std::string &name) {
  for (const GoParam &p : fn.params)
    if (p.name == name)
      return p;
  FAIL("no parameter " << name << " in " << fn.name);
  static GoParam none;
  return none;
}

TypeId find_type_or_fail(DebugInfo &info, const std::string &name) {
  std::optional<TypeId> id = info.find_type(name);
  REQUIRE_MESSAGE(id.has_value(), "no type " << name);
  return *id;
}

template <typename F> UserError expect_error(F fn) {
  try {
    fn();
  } catch (const UserError &error) {
    return error;
  }
  FAIL("expected a UserError");
  return UserError("", "");
}

// GO-ABI.md §1.3 checked against what the compiler actually laid out: every struct field sits at
// a multiple of the alignment we derived, and every size is a multiple of its type's alignment.
void check_layouts(DebugInfo &info, int ptr_size) {
  const TypeTable &table = info.types();
  for (size_t i = 0; i < table.size(); ++i) {
    const GoType &type = table.at(static_cast<TypeId>(i));
    CAPTURE(type.name);
    CHECK(type.align >= 1);
    CHECK(type.align <= static_cast<uint64_t>(ptr_size));
    if (type.kind == TypeKind::Unsupported)
      continue;
    CHECK(type.size % type.align == 0);
    if (type.kind == TypeKind::Struct) {
      uint64_t widest = 1;
      for (const GoField &f : type.fields) {
        CAPTURE(f.name);
        REQUIRE(f.type != kNoType);
        const GoType &ft = table.at(f.type);
        CHECK(f.offset % ft.align == 0);
        CHECK(f.offset + ft.size <= type.size);
        widest = std::max(widest, ft.align);
      }
      CHECK(type.align == widest);
    }
    if (type.kind == TypeKind::Array && type.elem != kNoType) {
      CHECK(type.align == table.at(type.elem).align);
      CHECK(type.size == type.count * table.at(type.elem).size);
    }
  }
}

} // namespace

TEST_CASE("kind_name") {
  CHECK(std::string(kind_name(TypeKind::Bool)) == "bool");
  CHECK(std::string(kind_name(TypeKind::Int)) == "int");
  CHECK(std::string(kind_name(TypeKind::Uint)) == "uint");
  CHECK(std::string(kind_name(TypeKind::Uintptr)) == "uintptr");
  CHECK(std::string(kind_name(TypeKind::Float)) == "float");
  CHECK(std::string(kind_name(TypeKind::Complex)) == "complex");
  CHECK(std::string(kind_name(TypeKind::String)) == "string");
  CHECK(std::string(kind_name(TypeKind::Slice)) == "slice");
  CHECK(std::string(kind_name(TypeKind::Array)) == "array");
  CHECK(std::string(kind_name(TypeKind::Struct)) == "struct");
  CHECK(std::string(kind_name(TypeKind::Pointer)) == "pointer");
  CHECK(std::string(kind_name(TypeKind::UnsafePointer)) == "unsafe.Pointer");
  CHECK(std::string(kind_name(TypeKind::Map)) == "map");
  CHECK(std::string(kind_name(TypeKind::Chan)) == "chan");
  CHECK(std::string(kind_name(TypeKind::Func)) == "func");
  CHECK(std::string(kind_name(TypeKind::Interface)) == "interface");
  CHECK(std::string(kind_name(TypeKind::Unsupported)) == "unsupported");
}

TEST_CASE("main.Ints: parameters in order with their integer types") {
  DebugInfo &info = amd64();
  const GoFunction *fn = info.find_function("main.Ints");
  REQUIRE(fn != nullptr);
  CHECK(fn->name == "main.Ints");
  CHECK(fn->regabi);
  CHECK(fn->producer == "Go cmd/compile go1.19.8; regabi");

  struct Expected {
    const char *name;
    TypeKind kind;
    const char *type;
    uint64_t size;
  };
  const Expected expected[] = {
      {"a", TypeKind::Int, "int8", 1},        {"b", TypeKind::Int, "int16", 2},
      {"c", TypeKind::Int, "int32", 4},       {"d", TypeKind::Int, "int64", 8},
      {"e", TypeKind::Uint, "uint8", 1},      {"f", TypeKind::Uint, "uint16", 2},
      {"g", TypeKind::Uint, "uint32", 4},     {"h", TypeKind::Uint, "uint64", 8},
      {"i", TypeKind::Int, "int", 8},         {"j", TypeKind::Uint, "uint", 8},
      {"k", TypeKind::Uintptr, "uintptr", 8}, {"ok", TypeKind::Bool, "bool", 1},
      {"~r0", TypeKind::Int, "int", 8},
  };
  REQUIRE(fn->params.size() == std::size(expected));
  for (size_t i = 0; i < fn->params.size(); ++i) {
    const GoParam &p = fn->params[i];
    CAPTURE(p.name);
    CHECK(p.name == expected[i].name);
    const GoType &t = type_of(info, p.type);
    CHECK(t.kind == expected[i].kind);
    CHECK(t.name == expected[i].type);
    CHECK(t.size == expected[i].size);
    CHECK(t.align == expected[i].size);
    CHECK(p.is_result == (i == std::size(expected) - 1));
  }
  // The same DIE converts once.
  CHECK(fn->params[8].type == fn->params[12].type);
}

TEST_CASE("function addresses agree with the ELF symbol table") {
  DebugInfo &info = amd64();
  BinaryImage image = load_binary(kFixture);
  for (const char *name : {"main.Ints", "main.(*Server).Handle", "main.Server.Describe",
                           "main.Nested", "runtime.main"}) {
    CAPTURE(name);
    const GoFunction *fn = info.find_function(name);
    REQUIRE(fn != nullptr);
    auto sym = std::find_if(image.functions.begin(), image.functions.end(),
                            [&](const ElfSymbol &s) { return s.name == name; });
    REQUIRE(sym != image.functions.end());
    CHECK(fn->low_pc == sym->address);
    CHECK(fn->high_pc == sym->address + sym->size);
  }
}

TEST_CASE("find_function returns stable pointers, nullptr for unknown or inline-only names") {
  DebugInfo &info = amd64();
  const GoFunction *first = info.find_function("main.Strings");
  REQUIRE(first != nullptr);
  info.find_function("main.Pointers");
  info.find_function("main.SpillOver");
  CHECK(info.find_function("main.Strings") == first);
  CHECK(info.find_function("main.NoSuchFunction") == nullptr);
  CHECK(info.find_function("") == nullptr);
  CHECK(info.find_function("main.ints") == nullptr); // exact names only
  // flag.Parse is only ever inlined in the fixture: an abstract DIE with no body to probe.
  CHECK(info.find_function("flag.Parse") == nullptr);
}

TEST_CASE("a result DWARF lists twice is one result") {
  // Go 1.19 lists the single *Value result of this cmd/compile method twice, both "~r0". Taken as
  // two results, the second would be read from RBX at the RET, which holds no result.
  DebugInfo &info = fixture(kFixtures + "/compile_amd64", 8);
  const GoFunction *fn = info.find_function("cmd/compile/internal/ssa.(*expandState).newArgToMemOrRegs");
  REQUIRE(fn != nullptr);
  std::vector<std::string> results;
  for (const GoParam &p : fn->params)
    if (p.is_result)
      results.push_back(p.name + " " + info.types().at(p.type).name);
  CHECK(results == std::vector<std::string>{"~r0 *cmd/compile/internal/ssa.Value"});
  CHECK(fn->params.size() == 8); // x, baseArg, toReplace, offset, regOffset, t, pos, and the result
}

TEST_CASE("a concrete copy of an inlined function takes its name and parameters from the origin") {
  // encoding/json.byIndex.Len has an out-of-line body whose DIE only has DW_AT_abstract_origin.
  DebugInfo &info = amd64();
  const GoFunction *fn = info.find_function("encoding/json.byIndex.Len");
  REQUIRE(fn != nullptr);
  CHECK(fn->low_pc != 0);
  REQUIRE(fn->params.size() == 2);
  CHECK(fn->params[0].name == "x");
  CHECK_FALSE(fn->params[0].is_result);
  const GoType &x = type_of(info, fn->params[0].type);
  CHECK(x.name == "encoding/json.byIndex");
  CHECK(x.kind == TypeKind::Slice);
  CHECK(fn->params[1].is_result);
}

TEST_CASE("function_names: concrete functions, sorted, unique") {
  const std::vector<std::string> &names = amd64().function_names();
  CHECK(names.size() > 1000);
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  for (const char *name : {"main.Ints", "main.(*Server).Handle", "main.Server.Describe",
                           "main.main", "runtime.main", "encoding/json.byIndex.Len"})
    CHECK_MESSAGE(std::binary_search(names.begin(), names.end(), name), name);
  CHECK_FALSE(std::binary_search(names.begin(), names.end(), "flag.Parse"));
  CHECK(&amd64().function_names() == &names); // built once
}

TEST_CASE("main.(*Server).Handle: pointer receiver and struct pointees") {
  DebugInfo &info = amd64();
  const GoFunction *fn = info.find_function("main.(*Server).Handle");
  REQUIRE(fn != nullptr);
  REQUIRE(fn->params.size() == 4);
  CHECK(fn->params[0].name == "s");
  CHECK(fn->params[1].name == "req");
  CHECK(fn->params[2].name == "deadline");
  CHECK(fn->params[3].name == "~r0");
  CHECK(fn->params[3].is_result);

  const GoType &s = type_of(info, fn->params[0].type);
  CHECK(s.kind == TypeKind::Pointer);
  CHECK(s.name == "*main.Server");
  CHECK(s.size == 8);
  CHECK(s.align == 8);
  const GoType &server = type_of(info, s.elem);
  CHECK(server.kind == TypeKind::Struct);
  CHECK(server.name == "main.Server");
  CHECK(server.size == 24);
  CHECK(server.align == 8);
  REQUIRE(server.fields.size() == 2);
  CHECK(server.fields[0].name == "Name");
  CHECK(server.fields[0].offset == 0);
  CHECK(type_of(info, server.fields[0].type).kind == TypeKind::String);
  CHECK(server.fields[1].name == "Hits");
  CHECK(server.fields[1].offset == 16);
  CHECK(type_of(info, server.fields[1].type).name == "int");

  const GoType &req = type_of(info, fn->params[1].type);
  CHECK(req.kind == TypeKind::Pointer);
  const GoType &request = type_of(info, req.elem);
  CHECK(request.name == "main.Request");
  CHECK(request.size == 56);
  CHECK(field(info, request, "Path").offset == 0);
  CHECK(field(info, request, "Header").offset == 16);
  CHECK(field(info, request, "Size").offset == 24);
  CHECK(field(info, request, "Hdr").offset == 32);

  // Request.Header is *Header, and its pointee is the very Header that Request.Hdr holds.
  const GoType &header_ptr = type_of(info, field(info, request, "Header").type);
  CHECK(header_ptr.kind == TypeKind::Pointer);
  CHECK(header_ptr.name == "*main.Header");
  CHECK(header_ptr.elem == field(info, request, "Hdr").type);
  CHECK(type_of(info, header_ptr.elem).name == "main.Header");
  CHECK(find_type_or_fail(info, "main.Header") == header_ptr.elem);
}

TEST_CASE("main.Header: fields, offsets and the typedef's Go name") {
  DebugInfo &info = amd64();
  TypeId id = find_type_or_fail(info, "main.Header");
  const GoType &header = type_of(info, id);
  CHECK(header.kind == TypeKind::Struct);
  CHECK(header.name == "main.Header");
  CHECK(header.size == 24);
  CHECK(header.align == 8);
  struct Expected {
    const char *name;
    uint64_t offset;
    TypeKind kind;
    uint64_t size;
  };
  const Expected expected[] = {{"Port", 0, TypeKind::Uint, 2},
                               {"Flags", 2, TypeKind::Uint, 1},
                               {"ID", 4, TypeKind::Int, 4},
                               {"Host", 8, TypeKind::String, 16}};
  REQUIRE(header.fields.size() == std::size(expected));
  for (size_t i = 0; i < header.fields.size(); ++i) {
    const GoField &f = header.fields[i];
    CAPTURE(f.name);
    CHECK(f.name == expected[i].name);
    CHECK(f.offset == expected[i].offset);
    CHECK_FALSE(f.embedded);
    const GoType &t = type_of(info, f.type);
    CHECK(t.kind == expected[i].kind);
    CHECK(t.size == expected[i].size);
  }
  const GoType &host = type_of(info, header.fields[3].type);
  CHECK(host.name == "string");
  CHECK(host.align == 8);

  // Parameters that take a Header by value resolve to the same entry.
  const GoFunction *by_value = info.find_function("main.ByValue");
  REQUIRE(by_value != nullptr);
  CHECK(param(*by_value, "h").type == id);
  CHECK(find_type_or_fail(info, "main.Header") == id);

  // member_offset reads the same DWARF without converting.
  CHECK(info.member_offset("main.Header", "ID") == 4u);
  CHECK(info.member_offset("main.Header", "Host") == 8u);
  CHECK_FALSE(info.member_offset("main.Header", "Nope").has_value());
  CHECK_FALSE(info.member_offset("main.Nope", "ID").has_value());
  CHECK_FALSE(info.member_offset("int", "x").has_value()); // not a struct
}

TEST_CASE("main.Server.Describe: value receiver") {
  DebugInfo &info = amd64();
  const GoFunction *fn = info.find_function("main.Server.Describe");
  REQUIRE(fn != nullptr);
  REQUIRE(fn->params.size() == 3);
  const GoType &s = type_of(info, param(*fn, "s").type);
  CHECK(s.kind == TypeKind::Struct);
  CHECK(s.name == "main.Server");
  CHECK(type_of(info, param(*fn, "n").type).name == "int");
  CHECK(param(*fn, "~r0").is_result);
}

TEST_CASE("the other Go kinds") {
  DebugInfo &info = amd64();

  const GoType &eface = type_of(info, find_type_or_fail(info, "interface {}"));
  CHECK(eface.kind == TypeKind::Interface);
  CHECK(eface.empty_interface);
  CHECK(eface.size == 16);
  CHECK(eface.align == 8);
  const GoType &error = type_of(info, find_type_or_fail(info, "error"));
  CHECK(error.kind == TypeKind::Interface);
  CHECK(error.name == "error");
  CHECK_FALSE(error.empty_interface);
  CHECK(error.size == 16);

  const GoType &bytes = type_of(info, find_type_or_fail(info, "[]uint8"));
  CHECK(bytes.kind == TypeKind::Slice);
  CHECK(bytes.size == 24);
  CHECK(bytes.align == 8);
  CHECK(type_of(info, bytes.elem).name == "uint8");

  const GoType &array = type_of(info, find_type_or_fail(info, "[4]uint8"));
  CHECK(array.kind == TypeKind::Array);
  CHECK(array.count == 4);
  CHECK(array.size == 4);
  CHECK(array.align == 1);
  CHECK(type_of(info, array.elem).name == "uint8");
  const GoType &words = type_of(info, find_type_or_fail(info, "[1]uintptr"));
  CHECK(words.count == 1);
  CHECK(words.align == 8);
  CHECK(type_of(info, words.elem).kind == TypeKind::Uintptr);

  const GoType &map = type_of(info, find_type_or_fail(info, "map[string]int"));
  CHECK(map.kind == TypeKind::Map);
  CHECK(map.size == 8);
  CHECK(map.align == 8);
  CHECK(type_of(info, map.key).kind == TypeKind::String);
  CHECK(type_of(info, map.elem).name == "int");
  // The header the linker synthesized for this map type (Go 1.19: hash<string,int>), whose buckets
  // are typed with the key and value: where a walk of the pairs takes its layout from.
  REQUIRE(map.header != kNoType);
  const GoType &header = type_of(info, map.header);
  CHECK(header.name == "hash<string,int>");
  const GoField *buckets = nullptr;
  for (const GoField &f : header.fields)
    if (f.name == "buckets")
      buckets = &f;
  REQUIRE(buckets);
  const GoType &bucket = type_of(info, type_of(info, buckets->type).elem);
  CHECK(bucket.name == "bucket<string,int>");
  CHECK(bucket.size == 8 + 8 * 16 + 8 * 8 + 8); // tophash, 8 keys, 8 values, overflow

  const GoType &chan = type_of(info, find_type_or_fail(info, "chan int"));
  CHECK(chan.kind == TypeKind::Chan);
  CHECK(chan.size == 8);
  CHECK(type_of(info, chan.elem).name == "int");

  const GoType &func = type_of(info, find_type_or_fail(info, "func()"));
  CHECK(func.kind == TypeKind::Func);
  CHECK(func.size == 8);
  CHECK(func.align == 8);

  const GoType &unsafe_pointer = type_of(info, find_type_or_fail(info, "unsafe.Pointer"));
  CHECK(unsafe_pointer.kind == TypeKind::UnsafePointer);
  CHECK(unsafe_pointer.size == 8);

  const GoType &f64 = type_of(info, find_type_or_fail(info, "float64"));
  CHECK(f64.kind == TypeKind::Float);
  CHECK(f64.size == 8);
  const GoType &f32 = type_of(info, find_type_or_fail(info, "float32"));
  CHECK(f32.kind == TypeKind::Float);
  CHECK(f32.align == 4);
  const GoType &c128 = type_of(info, find_type_or_fail(info, "complex128"));
  CHECK(c128.kind == TypeKind::Complex);
  CHECK(c128.size == 16);
  CHECK(c128.align == 8);

  // runtime.mutex embeds the zero-size lockRankStruct (GO-ABI.md §4.5: DW_AT_go_embedded_field).
  const GoType &mutex = type_of(info, find_type_or_fail(info, "runtime.mutex"));
  REQUIRE(mutex.fields.size() == 2);
  CHECK(mutex.fields[0].name == "lockRankStruct");
  CHECK(mutex.fields[0].embedded);
  const GoType &rank = type_of(info, mutex.fields[0].type);
  CHECK(rank.kind == TypeKind::Struct);
  CHECK(rank.size == 0);
  CHECK(rank.align == 1); // an empty struct aligns to 1
  CHECK(mutex.fields[1].name == "key");
  CHECK_FALSE(mutex.fields[1].embedded);
  CHECK(mutex.fields[1].offset == 0);
  CHECK(mutex.size == 8);
  CHECK(mutex.align == 8);

  CHECK_FALSE(info.find_type("main.NoSuchType").has_value());
}

TEST_CASE("runtime.g: a recursive type converts and terminates") {
  DebugInfo &info = amd64();
  TypeId g_id = find_type_or_fail(info, "runtime.g");
  const GoType &g = type_of(info, g_id);
  CHECK(g.kind == TypeKind::Struct);
  CHECK(g.name == "runtime.g");
  CHECK(g.size == 392); // Go 1.19 amd64 (GO-ABI.md §4.5)
  CHECK(field(info, g, "goid").offset == 152);
  CHECK(type_of(info, field(info, g, "goid").type).name == "int64");
  CHECK(field(info, g, "stack").offset == 0);
  CHECK(type_of(info, field(info, g, "stack").type).name == "runtime.stack");

  // g.m is *m, and m.curg is *g: the cycle closes on the same entry.
  const GoType &m_ptr = type_of(info, field(info, g, "m").type);
  CHECK(m_ptr.kind == TypeKind::Pointer);
  const GoType &m = type_of(info, m_ptr.elem);
  CHECK(m.name == "runtime.m");
  const GoType &curg = type_of(info, field(info, m, "curg").type);
  CHECK(curg.kind == TypeKind::Pointer);
  CHECK(curg.elem == g_id);

  CHECK(info.member_offset("runtime.g", "goid") == 152u);
  CHECK(info.member_offset("runtime.g", "m") == 48u);
  CHECK(info.member_offset("runtime.g", "sched") == 56u);

  // Everything converted so far (a good part of the runtime) obeys the alignment rules.
  check_layouts(info, 8);
}

TEST_CASE("arm64: regabi, goid offset") {
  DebugInfo &info = arm64();
  const GoFunction *fn = info.find_function("main.Ints");
  REQUIRE(fn != nullptr);
  CHECK(fn->regabi);
  CHECK(fn->params.size() == 13);
  CHECK(info.member_offset("runtime.g", "goid") == 152u);
  const GoType &header = type_of(info, find_type_or_fail(info, "main.Header"));
  CHECK(header.size == 24);
}

TEST_CASE("386: ABI0, 4-byte pointers and int64 aligned to 4") {
  DebugInfo &info = i386();
  const GoFunction *fn = info.find_function("main.Ints");
  REQUIRE(fn != nullptr);
  CHECK_FALSE(fn->regabi);
  CHECK(fn->producer == "Go cmd/compile go1.19.8");

  const GoType &d = type_of(info, param(*fn, "d").type);
  CHECK(d.name == "int64");
  CHECK(d.size == 8);
  CHECK(d.align == 4);
  const GoType &i = type_of(info, param(*fn, "i").type);
  CHECK(i.size == 4);
  CHECK(i.align == 4);
  const GoType &k = type_of(info, param(*fn, "k").type);
  CHECK(k.kind == TypeKind::Uintptr);
  CHECK(k.size == 4);

  const GoType &c128 = type_of(info, find_type_or_fail(info, "complex128"));
  CHECK(c128.align == 4);
  const GoType &str = type_of(info, find_type_or_fail(info, "string"));
  CHECK(str.size == 8);
  CHECK(str.align == 4);

  // Request{Path string; Header *Header; Size int64; Hdr Header}: Size at 12, not 16.
  const GoType &request = type_of(info, find_type_or_fail(info, "main.Request"));
  CHECK(request.size == 36);
  CHECK(request.align == 4);
  CHECK(field(info, request, "Header").offset == 8);
  CHECK(field(info, request, "Size").offset == 12);
  CHECK(field(info, request, "Hdr").offset == 20);
  CHECK(type_of(info, field(info, request, "Header").type).size == 4);

  TypeId g = find_type_or_fail(info, "runtime.g");
  CHECK(type_of(info, g).kind == TypeKind::Struct);
  CHECK(info.member_offset("runtime.g", "goid").has_value());
  check_layouts(info, 4);
}

TEST_CASE("errors") {
  SUBCASE("stripped binary: no DWARF") {
    UserError error = expect_error([] { DebugInfo::open(kStripped, 8); });
    CHECK(error.id == "no-dwarf");
    CHECK(error.loc.file == kStripped);
    std::string message = error.what();
    CHECK(message.find(kStripped + " has no DWARF debug info") == 0);
    CHECK(message.find("-ldflags=-w") != std::string::npos);
    CHECK_FALSE(error.hint.empty());
  }
  SUBCASE("missing file") {
    UserError error = expect_error([] { DebugInfo::open(kFixtures + "/no-such-binary", 8); });
    CHECK(error.id == "binary-unreadable");
    CHECK(std::string(error.what()).find(std::strerror(ENOENT)) != std::string::npos);
  }
  SUBCASE("not an ELF file") {
    UserError error = expect_error([] { DebugInfo::open(WEAVE_SOURCE_DIR "/CMakeLists.txt", 8); });
    CHECK(error.id == "not-elf");
  }
}

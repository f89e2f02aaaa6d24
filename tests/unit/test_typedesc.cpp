// Tests of the type descriptor reader (gobinary/typedesc.h, debuginfo/descriptor_types.h) against
// DWARF: every struct type of net/http, net/url and the fixture's own package, read from the
// descriptors of a stripped build, must have the layout the unstripped twin's DWARF gives it (field
// names, offsets, embedding, the fields' types' kinds, sizes and names), on Go 1.19 (amd64, 386) and
// the newer Go of the machine; and every descriptor DWARF points at must decode to DWARF's name,
// kind and size (also over the Go compiler itself, amd64 and arm64).
#include "gobinary/binary.h"
#include "gobinary/pclntab.h"
#include "gobinary/typedesc.h"
#include "debuginfo/debuginfo.h"
#include "debuginfo/descriptor_types.h"
#include "debuginfo/dictionaries.h"
#include "plan/captures.h"

#include <doctest/doctest.h>

#include "test_support.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <cctype>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace weave;
using namespace weave_test;

namespace {

// Names whose spelling DWARF and the runtime do not share: unnamed structs, funcs and interfaces
// (the runtime writes package names, DWARF paths) are compared by kind and size alone.
bool comparable_name(const std::string &name) {
  return name.find("struct {") == std::string::npos && name.find("func(") == std::string::npos &&
         name.find("interface {") == std::string::npos;
}

// DWARF's spelling of a runtime type's name, as the runtime spells it: no "noalg." prefix (types
// the compiler made without equality functions: map buckets, closure records) and no "·N" suffix
// (DWARF's disambiguation of types local to functions), dots in path elements as dots.
std::string runtime_spelling(std::string name) {
  for (size_t at; (at = name.find("noalg.")) != std::string::npos;)
    name.erase(at, 6);
  for (size_t at; (at = name.find("%2e")) != std::string::npos;) // the linker's "v1%2e0%2e0"
    name.replace(at, 3, ".");
  for (size_t at; (at = name.find("\xc2\xb7")) != std::string::npos;) {
    size_t end = at + 2;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])))
      ++end;
    name.erase(at, end - at);
  }
  return name;
}

std::string describe(const GoType &t) { return t.name + " (" + kind_name(t.kind) + ", " + std::to_string(t.size) + " bytes)"; }

// "" when the two agree, else the first difference in one line.
std::string compare(const TypeTable &dwarf, TypeId a, const TypeTable &desc, TypeId b) {
  const GoType &x = dwarf.at(a), &y = desc.at(b);
  // A zero-size struct's alignment is the compiler's to choose (atomic.align64 is 8): DWARF does not
  // record it, and the DWARF reader's widest-field rule says 1. Elsewhere they must agree.
  if (x.kind != y.kind || x.size != y.size || (x.size && x.align != y.align))
    return "DWARF " + describe(x) + " align " + std::to_string(x.align) + ", descriptor " + describe(y) + " align " +
           std::to_string(y.align);
  if (x.fields.size() != y.fields.size())
    return x.name + ": DWARF has " + std::to_string(x.fields.size()) + " fields, the descriptor " +
           std::to_string(y.fields.size());
  for (size_t i = 0; i < x.fields.size(); ++i) {
    const GoField &f = x.fields[i], &g = y.fields[i];
    const GoType &ft = dwarf.at(f.type), &gt = desc.at(g.type);
    if (f.name != g.name || f.offset != g.offset || f.embedded != g.embedded)
      return x.name + " field " + std::to_string(i) + ": DWARF " + f.name + "@" + std::to_string(f.offset) +
             (f.embedded ? " embedded" : "") + ", descriptor " + g.name + "@" + std::to_string(g.offset) +
             (g.embedded ? " embedded" : "");
    if (ft.kind != gt.kind || ft.size != gt.size || (ft.size && ft.align != gt.align) ||
        (comparable_name(ft.name) && ft.name != gt.name))
      return x.name + "." + f.name + ": DWARF " + describe(ft) + ", descriptor " + describe(gt);
    if ((ft.kind == TypeKind::Pointer || ft.kind == TypeKind::Slice || ft.kind == TypeKind::Array) &&
        (ft.elem == kNoType) != (gt.elem == kNoType))
      return x.name + "." + f.name + ": the element is known on one side only";
    if (ft.kind == TypeKind::Interface && ft.empty_interface != gt.empty_interface)
      return x.name + "." + f.name + ": eface on one side, iface on the other";
  }
  return "";
}

bool wanted_package(const std::string &name, const std::vector<std::string> &prefixes) {
  for (const std::string &p : prefixes)
    if (name.rfind(p, 0) == 0 && comparable_name(name))
      return true;
  return false;
}

// Every struct of `prefixes` that DWARF of `with_dwarf` has, looked up by name in the descriptors
// of `without_dwarf`, compared. Returns {compared, missing, mismatched}.
struct Tally {
  size_t compared = 0, missing = 0, mismatched = 0, dwarf_only = 0;
};
Tally compare_structs(const std::string &with_dwarf, const std::string &without_dwarf,
                      const std::vector<std::string> &prefixes) {
  BinaryImage image = load_binary(without_dwarf);
  CHECK_FALSE(image.has_dwarf);
  auto pcln = Pclntab::load(image);
  REQUIRE(pcln);
  DescriptorTypes descriptors(*pcln);
  auto debug = DebugInfo::open(with_dwarf, image.ptr_size);
  TypeTable desc_table;
  Tally tally;
  std::map<std::string, bool> seen;
  for (const RuntimeType &t : debug->runtime_types()) {
    if (t.kind != 25 || !wanted_package(t.name, prefixes) || seen[t.name])
      continue;
    // Names only DWARF writes (map buckets and closure records, "noalg."; types local to a
    // function, "·1") are not names a spec can give.
    if (runtime_spelling(t.name) != t.name) {
      ++tally.dwarf_only;
      continue;
    }
    seen[t.name] = true;
    auto dwarf_id = debug->find_type(t.name);
    REQUIRE_MESSAGE(dwarf_id, t.name);
    std::string why;
    auto desc_id = descriptors.find(t.name, desc_table, why);
    if (!desc_id) {
      ++tally.missing;
      MESSAGE("no descriptor found for " << t.name << ": " << why);
      continue;
    }
    ++tally.compared;
    std::string diff = compare(debug->types(), *dwarf_id, desc_table, *desc_id);
    if (!diff.empty()) {
      ++tally.mismatched;
      MESSAGE(diff);
    }
  }
  MESSAGE(without_dwarf << ": " << tally.compared << " named structs compared with DWARF, " << tally.missing
                        << " without a descriptor found, " << tally.mismatched << " mismatched ("
                        << tally.dwarf_only << " with names only DWARF writes left out)");
  return tally;
}

// Every descriptor DWARF points at (DW_AT_go_runtime_type) decoded at that address: name, kind and
// size as DWARF says. Returns {decoded, failed, mismatched}; also what the walk from typelinks found.
Tally decode_all(const std::string &path) {
  BinaryImage image = load_binary(path);
  auto pcln = Pclntab::load(image);
  REQUIRE(pcln);
  REQUIRE(image.types_base);
  TypeDescriptors descriptors(*pcln);
  auto debug = DebugInfo::open(path, image.ptr_size);
  Tally tally;
  size_t reached = 0, listed = 0;
  std::vector<std::string> unreached;
  const auto &walked = descriptors.all();
  const auto census = descriptors.census();
  for (const RuntimeType &t : debug->runtime_types()) {
    uint64_t address = t.address >= *image.types_base ? t.address : *image.types_base + t.address;
    ++listed;
    reached += walked.count(address);
    if (!walked.count(address))
      unreached.push_back(t.name);
    const TypeDescriptor *d = descriptors.at(address);
    if (!d) {
      ++tally.missing;
      MESSAGE(t.name << ": " << descriptors.failure(address));
      continue;
    }
    ++tally.compared;
    // DWARF gives pointer types no byte size, and a few no kind.
    if ((t.kind && static_cast<uint64_t>(d->kind) != t.kind) || (t.size && d->size != t.size) ||
        // Map buckets ("noalg.map.bucket[...]") the runtime names with package names, not paths.
        (comparable_name(t.name) && t.name.rfind("noalg.", 0) != 0 && d->name != runtime_spelling(t.name))) {
      ++tally.mismatched;
      MESSAGE("DWARF " << t.name << " kind " << t.kind << " size " << t.size << "; descriptor " << d->name << " kind "
                       << int(d->kind) << " size " << d->size);
    }
  }
  // Every type a spec can name (DWARF's spelling is the runtime's) is found by that name, at the
  // address DWARF gives: through the walk, or the scan for what the walk does not reach.
  size_t by_name = 0, unnamed = 0, ambiguous = 0;
  for (const RuntimeType &t : debug->runtime_types()) {
    uint64_t address = t.address >= *image.types_base ? t.address : *image.types_base + t.address;
    if (runtime_spelling(t.name) != t.name || !comparable_name(t.name) || t.name.empty()) {
      ++unnamed;
      continue;
    }
    if (descriptors.ambiguous(t.name)) {
      ++ambiguous;
      continue;
    }
    const TypeDescriptor *d = descriptors.find(t.name);
    if (!d || d->address != address) {
      ++tally.mismatched;
      std::string where = d ? " (found at another address)" : "";
      MESSAGE(t.name << " not found by name at " << address << where);
      continue;
    }
    ++by_name;
  }
  MESSAGE(path << ": " << by_name << " types found by name at DWARF's address (" << descriptors.census().scanned
               << " of them and others found by the scan), " << ambiguous << " names shared by several descriptors, "
               << unnamed << " spelled otherwise by DWARF");
  MESSAGE(path << ": " << listed << " descriptors in DWARF, " << tally.compared << " decoded, " << tally.missing
               << " not decodable, " << tally.mismatched << " mismatched; the walk from " << census.typelinks
               << " typelinks and " << census.itabs << " itabs reached " << census.decoded << " (" << reached
               << " of DWARF's), " << census.failed.size() << " undecodable");
  for (const auto &[address, why] : census.failed)
    MESSAGE("undecodable: " << why);
  std::string names;
  for (const std::string &n : unreached)
    names += " " + n;
  MESSAGE("not reached from typelinks and itabs:" << names);
  return tally;
}

// What the map walk reads of a map's header (plan/captures.cpp map_layout), in one line: the
// offsets and sizes of the fields it names, however the header came (DWARF's synthesized types or
// DescriptorTypes::map_header's). "" when the map has no header.
std::string walk_layout(const TypeTable &t, TypeId map) {
  const GoType &m = t.at(map);
  if (m.header == kNoType)
    return "";
  auto field = [](const GoType *s, const char *name) -> const GoField * {
    if (s)
      for (const GoField &f : s->fields)
        if (f.name == name)
          return &f;
    return nullptr;
  };
  auto deref = [&](const GoField *f) -> const GoType * {
    if (!f || f->type == kNoType || t.at(f->type).kind != TypeKind::Pointer || t.at(f->type).elem == kNoType)
      return nullptr;
    return &t.at(t.at(f->type).elem);
  };
  std::string out;
  auto add = [&](const GoType *s, const char *name) {
    const GoField *f = field(s, name);
    out += std::string(name) + "=" + (f ? std::to_string(f->offset) : "none") + " ";
  };
  auto size = [&](const char *what, const GoType *s) { out += std::string(what) + "=" + (s ? std::to_string(s->size) : "none") + " "; };
  const GoType *h = &t.at(m.header);
  if (field(h, "buckets")) {
    for (const char *n : {"flags", "B", "buckets", "oldbuckets", "nevacuate"})
      add(h, n);
    const GoType *bucket = deref(field(h, "buckets"));
    size("bucket", bucket);
    for (const char *n : {"tophash", "keys", "values", "overflow"})
      add(bucket, n);
    return out;
  }
  for (const char *n : {"dirPtr", "dirLen", "writing"})
    add(h, n);
  const GoType *entry = deref(field(h, "dirPtr"));
  const GoType *table = entry && entry->kind == TypeKind::Pointer && entry->elem != kNoType ? &t.at(entry->elem) : nullptr;
  add(table, "groups");
  const GoField *groups = field(table, "groups");
  const GoType *refs = groups ? &t.at(groups->type) : nullptr;
  add(refs, "data");
  add(refs, "lengthMask");
  const GoType *group = deref(field(refs, "data"));
  size("group", group);
  add(group, "ctrl");
  add(group, "slots");
  const GoField *slots = field(group, "slots");
  const GoType *slot = slots && t.at(slots->type).elem != kNoType ? &t.at(t.at(slots->type).elem) : nullptr;
  size("slot", slot);
  add(slot, "key");
  add(slot, "elem");
  return out;
}

// Every map type the DWARF twin has a header for: the header synthesized from the stripped build's
// descriptors must give the walk the same offsets and sizes, or be refused (no header) only where
// DWARF's walk refuses too (a key or value over 128 bytes, stored through a pointer).
void compare_map_headers(const std::string &with_dwarf, const std::string &without_dwarf) {
  BinaryImage image = load_binary(without_dwarf);
  auto pcln = Pclntab::load(image);
  REQUIRE(pcln);
  DescriptorTypes descriptors(*pcln);
  auto debug = DebugInfo::open(with_dwarf, image.ptr_size);
  TypeTable desc_table;
  size_t compared = 0, refused = 0;
  std::map<std::string, bool> seen;
  for (const RuntimeType &t : debug->runtime_types()) {
    if (t.kind != 21 || seen[t.name] || runtime_spelling(t.name) != t.name || !comparable_name(t.name) ||
        descriptors.descriptors().ambiguous(t.name))
      continue;
    seen[t.name] = true;
    auto dwarf_id = debug->find_type(t.name);
    std::string why;
    auto desc_id = descriptors.find(t.name, desc_table, why);
    if (!dwarf_id || !desc_id || debug->types().at(*dwarf_id).header == kNoType)
      continue;
    CAPTURE(t.name);
    const GoType &m = desc_table.at(*desc_id);
    if (m.header == kNoType) {
      ++refused;
      INFO(descriptors.map_refusal());
      CHECK((desc_table.at(m.key).size > 128 || desc_table.at(m.elem).size > 128));
      continue;
    }
    ++compared;
    std::string layout = walk_layout(desc_table, *desc_id);
    CHECK(layout.find("none") == std::string::npos); // every field the walk reads is there
    CHECK(layout == walk_layout(debug->types(), *dwarf_id));
  }
  MESSAGE(without_dwarf << ": " << compared << " map headers as DWARF's, " << refused
                        << " refused (a key or value stored through a pointer)");
  CHECK(compared >= 20);
}

// Every named struct with a descriptor (most of them from the runtime, net, crypto, reflect).
const std::vector<std::string> kPackages = {""};

} // namespace

TEST_CASE("descriptor layouts of net/http, net/url and main structs equal DWARF's (Go 1.19 amd64)") {
  Tally t = compare_structs(kFixtures + "/typedesc", kFixtures + "/typedesc_stripped", kPackages);
  CHECK(t.compared >= 300);
  CHECK(t.missing == 0);
  CHECK(t.mismatched == 0);
}

TEST_CASE("descriptor layouts equal DWARF's on 386 (4-byte pointers, int64 aligned to 4)") {
  Tally t = compare_structs(kFixtures + "/typedesc_386", kFixtures + "/typedesc_386_stripped", kPackages);
  CHECK(t.compared >= 300);
  CHECK(t.missing == 0);
  CHECK(t.mismatched == 0);
}

TEST_CASE("descriptor layouts equal DWARF's with the newer Go (internal/abi.Type, swiss maps)") {
  if (!std::filesystem::exists(kFixtures + "/typedesc_newer")) {
    MESSAGE("skipped: no newer Go on this machine (WEAVE_GO_NEWER)");
    return;
  }
  Tally t = compare_structs(kFixtures + "/typedesc_newer", kFixtures + "/typedesc_newer_stripped", kPackages);
  CHECK(t.compared >= 300);
  CHECK(t.missing == 0);
  CHECK(t.mismatched == 0);
}

TEST_CASE("every descriptor DWARF names decodes to DWARF's name, kind and size") {
  std::vector<std::string> binaries = {kFixtures + "/typedesc", kFixtures + "/typedesc_386",
                                       kFixtures + "/compile_amd64", kFixtures + "/compile_arm64"};
  if (std::filesystem::exists(kFixtures + "/typedesc_newer"))
    binaries.push_back(kFixtures + "/typedesc_newer");
  for (const std::string &path : binaries) {
    CAPTURE(path);
    Tally t = decode_all(path);
    CHECK(t.compared > 0);
    CHECK(t.missing == 0);
    CHECK(t.mismatched == 0);
  }
}

TEST_CASE("types the walk from typelinks misses are found by scanning the types") {
  // An anonymous interface a type assertion uses (net's `interface { Timeout() bool }`) has a
  // descriptor only code refers to: no typelink, itab, field or element reaches it.
  for (const char *binary : {"/typedesc_stripped", "/typedesc_386_stripped"}) {
    CAPTURE(binary);
    BinaryImage image = load_binary(kFixtures + binary);
    auto pcln = Pclntab::load(image);
    REQUIRE(pcln);
    DescriptorTypes descriptors(*pcln);
    TypeTable table;
    std::string why;
    // main.Receipt, converted to an interface by value only, is reached by the walk.
    auto receipt = descriptors.find("main.Receipt", table, why);
    INFO(why);
    REQUIRE(receipt);
    CHECK(descriptors.descriptors().census().scanned == 0);
    const GoType &r = table.at(*receipt);
    REQUIRE(r.fields.size() == 2);
    CHECK(r.fields[1].name == "Paid");
    CHECK(r.fields[1].offset == 8);
    CHECK(r.size == (image.ptr_size == 8 ? 16u : 12u));
    auto timeout = descriptors.find("interface { Timeout() bool }", table, why);
    REQUIRE(timeout);
    CHECK(descriptors.descriptors().census().scanned > 0);
    CHECK(table.at(*timeout).kind == TypeKind::Interface);
    CHECK_FALSE(table.at(*timeout).empty_interface);
  }
}

TEST_CASE("a name with no descriptor is refused with the reason and a near miss") {
  BinaryImage image = load_binary(kFixtures + "/typedesc_stripped");
  auto pcln = Pclntab::load(image);
  REQUIRE(pcln);
  DescriptorTypes descriptors(*pcln);
  TypeTable table;
  std::string why;
  CHECK_FALSE(descriptors.find("net/http.Requests", table, why));
  CHECK(why.find("no type descriptor named net/http.Requests") != std::string::npos);
  CHECK(why.find("did you mean net/http.Request") != std::string::npos);
  // The package name alone (the runtime's own spelling) is not the type: paths are written in full.
  CHECK_FALSE(descriptors.find("http.Request", table, why));
  auto request = descriptors.find("*net/http.Request", table, why);
  REQUIRE(request);
  CHECK(table.at(*request).kind == TypeKind::Pointer);
  CHECK(table.at(table.at(*request).elem).name == "net/http.Request");
}

// contents: true on a stripped binary takes an interface's candidate types from
// moduledata.itablinks instead of the go:itab.T,I symbols: the two must be the same list, in every
// layout of the itab and of moduledata (Go 1.19 amd64 and 386, the newer Go).
TEST_CASE("moduledata.itablinks lists the itabs the .symtab names go:itab.T,I, stripped too") {
  struct Pair {
    std::string dwarf, stripped;
  };
  std::vector<Pair> pairs = {{"/typedesc", "/typedesc_stripped"},
                             {"/typedesc_386", "/typedesc_386_stripped"},
                             {"/assert", "/assert_stripped"},
                             {"/assert_386", "/assert_386_stripped"}};
  for (const char *newer : {"/typedesc_newer", "/assert_newer"})
    if (std::filesystem::exists(kFixtures + newer))
      pairs.push_back({newer, std::string(newer) + "_stripped"});
  for (const Pair &p : pairs) {
    CAPTURE(p.stripped);
    std::vector<std::pair<std::string, std::string>> symbols;
    for (auto [concrete, iface] : itab_symbols(kFixtures + p.dwarf))
      symbols.emplace_back(runtime_spelling(concrete), runtime_spelling(iface));
    std::sort(symbols.begin(), symbols.end());
    REQUIRE(symbols.size() > 20);
    BinaryImage image = load_binary(kFixtures + p.stripped);
    auto pcln = Pclntab::load(image);
    REQUIRE(pcln);
    TypeDescriptors descriptors(*pcln);
    CHECK(itab_symbols(kFixtures + p.stripped).empty()); // no .symtab
    std::vector<std::pair<std::string, std::string>> links;
    for (auto [inter, concrete] : descriptors.itabs())
      links.emplace_back(descriptors.at(concrete)->name, descriptors.at(inter)->name);
    std::sort(links.begin(), links.end());
    CHECK(descriptors.itabs_left_out() == 0);
    CHECK(links == symbols);
    MESSAGE(p.stripped << ": " << links.size() << " itabs, the same as the symbols'");
  }
}

// Where an interface keeps a value (its data word, or behind it) is the descriptor's
// KindDirectIface (the tflag's since Go 1.26), which contents and x.(T) follow. It agrees with the
// layout's pointer-shape rule but for two kinds of type, which it alone tells: pointers to
// not-in-heap types (the runtime's own: behind the word) and, from Go 1.26 (Size == PtrBytes ==
// PtrSize), a one-pointer struct with zero-size fields (sync/atomic.Pointer[T]: in the word).
TEST_CASE("every decoded descriptor's KindDirectIface: the layout's rule, or one of the two it does not tell") {
  std::vector<std::string> binaries = {"/typedesc_stripped", "/typedesc_386_stripped", "/assert_stripped"};
  if (std::filesystem::exists(kFixtures + "/assert_newer_stripped"))
    binaries.push_back("/assert_newer_stripped");
  for (const std::string &b : binaries) {
    CAPTURE(b);
    BinaryImage image = load_binary(kFixtures + b);
    auto pcln = Pclntab::load(image);
    REQUIRE(pcln);
    const GoVersion v = pcln->go_version();
    const bool go126 = v.major == 1 && v.minor >= 26;
    DescriptorTypes descriptors(*pcln);
    TypeTable table;
    size_t direct = 0, indirect = 0, not_in_heap = 0, zero_size_fields = 0;
    for (const auto &entry : descriptors.descriptors().all()) {
      // Not a structured binding: INFO captures it in a lambda, which clang 14 refuses for one.
      const auto &d = entry.second;
      TypeId id = descriptors.convert(entry.first, table);
      const GoType &t = table.at(id);
      if (t.kind == TypeKind::Unsupported)
        continue;
      INFO(d.name);
      (d.direct_iface ? direct : indirect) += 1;
      if (d.direct_iface == direct_iface(table, id))
        continue;
      if (!d.direct_iface) { // *runtime.mspan, *runtime.mcache, runtime.xRegPerG{p *xRegState}: the runtime's
        std::string pointer = t.kind == TypeKind::Pointer ? t.name : table.at(t.fields.at(0).type).name;
        CHECK((pointer.starts_with("*runtime.") || pointer.starts_with("*internal/runtime/")));
        ++not_in_heap;
        continue;
      }
      CHECK(go126);
      CHECK(d.direct_iface);
      CHECK(t.size == static_cast<uint64_t>(image.ptr_size));
      ++zero_size_fields;
    }
    MESSAGE(b << ": " << direct << " stored in the data word, " << indirect << " behind it; the layout's rule "
              << "differs for " << not_in_heap << " pointers to not-in-heap types and " << zero_size_fields
              << " one-pointer structs with zero-size fields");
    CHECK(direct > 100);
    CHECK(indirect > 100);
    CHECK(not_in_heap > 0);
    CHECK((zero_size_fields > 0) == go126);
  }
}

TEST_CASE("map headers synthesized for a stripped binary give the walk DWARF's offsets: hmap and swiss, amd64 and 386") {
  compare_map_headers(kFixtures + "/typedesc", kFixtures + "/typedesc_stripped");
  compare_map_headers(kFixtures + "/typedesc_386", kFixtures + "/typedesc_386_stripped");
  if (std::filesystem::exists(kFixtures + "/typedesc_newer"))
    compare_map_headers(kFixtures + "/typedesc_newer", kFixtures + "/typedesc_newer_stripped");
  else
    MESSAGE("skipped the swiss layout: no newer Go on this machine (WEAVE_GO_NEWER)");
}

namespace {

// The file offset of link-time address `vaddr` in a 64-bit ELF file (its PT_LOAD segments).
size_t file_offset(const std::vector<uint8_t> &file, uint64_t vaddr) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, file.data() + eh.e_phoff + i * eh.e_phentsize, sizeof ph);
    if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
      return static_cast<size_t>(ph.p_offset + (vaddr - ph.p_vaddr));
  }
  FAIL("no segment holds " << vaddr);
  return 0;
}

// The header of map type `name` of the binary at `path`, synthesized; and why not when it is not.
std::pair<bool, std::string> synthesized(const std::string &path, const std::string &name) {
  BinaryImage image = load_binary(path);
  auto pcln = Pclntab::load(image);
  REQUIRE(pcln);
  DescriptorTypes descriptors(*pcln);
  TypeTable table;
  std::string why;
  auto id = descriptors.find(name, table, why);
  REQUIRE_MESSAGE(id, why);
  return {table.at(*id).header != kNoType, descriptors.map_refusal()};
}

} // namespace

TEST_CASE("a map header is refused, never guessed, when the maptype's sizes disagree or the release is unknown") {
  // map[string]bool: in every build of the typedesc fixture (net/http's).
  const std::string name = "map[string]bool";
  std::vector<std::string> binaries = {kFixtures + "/typedesc_stripped"};
  if (std::filesystem::exists(kFixtures + "/typedesc_newer_stripped"))
    binaries.push_back(kFixtures + "/typedesc_newer_stripped");
  for (const std::string &path : binaries) {
    CAPTURE(path);
    REQUIRE(synthesized(path, name).first);
    BinaryImage image = load_binary(path);
    auto pcln = Pclntab::load(image);
    REQUIRE(pcln);
    TypeDescriptors descriptors(*pcln);
    const TypeDescriptor *d = descriptors.find(name);
    REQUIRE(d);
    const bool swiss = pcln->go_version().minor >= 24;
    std::vector<uint8_t> file = read_file(path);
    TempDir dir;
    std::string copy = dir.file("stripped");
    // The bucket's (Go <= 1.23: bucketsize, a uint16 after keysize and elemsize) or the group's
    // size (GroupSize, a word) 8 bytes off: the descriptor of the bucket or group no longer agrees.
    const uint64_t body = d->address + 4 * 8 + 16;
    size_t at = file_offset(file, body + 4 * 8 + (swiss ? 0 : 2));
    file[at] = static_cast<uint8_t>(file[at] + 8);
    write_file(copy, file);
    // Not a structured binding: INFO captures `why` in a lambda, which clang 14 refuses for one.
    const auto [made, why_made] = synthesized(copy, name);
    const std::string why = why_made;
    CHECK_FALSE(made);
    CHECK(why.find("unlike its maptype's sizes") != std::string::npos);
    INFO(why);
    // A release weave has no layout for: the build info's "go1.N" made "go1.99".
    file = read_file(path);
    const std::string text = "\xff Go buildinf:";
    const std::vector<uint8_t> magic(text.begin(), text.end());
    auto info = std::search(file.begin(), file.end(), magic.begin(), magic.end());
    REQUIRE(info != file.end());
    const std::vector<uint8_t> go = {'g', 'o', '1', '.'};
    auto version = std::search(info, file.end(), go.begin(), go.end());
    REQUIRE(version != file.end());
    version[4] = '9';
    version[5] = '9';
    write_file(copy, file);
    auto [made99, why99] = synthesized(copy, name);
    CHECK_FALSE(made99);
    CHECK(why99 == "no map layout is known for go1.99");
  }
}


// Stage 2 — binary: the runtime's type descriptors, the one record of a type's layout that a
// stripped binary (-ldflags=-s -w) keeps, because reflect, the garbage collector and interface
// conversions need it at run time.
//
// A descriptor (go1.19 runtime/type.go _type, go1.21+ internal/abi.Type) lives in
// [moduledata.types, moduledata.etypes): size, ptrdata, hash, tflag, align, fieldAlign, kind, equal,
// gcdata, str (a name offset), ptrToThis (a type offset), then the kind's own fields (ptrtype,
// slicetype, arraytype, chantype, maptype, structtype, interfacetype, functype), then, when tflag
// says so, the uncommon type (package path, methods). Struct fields are {name, type, offset}: the
// offset shifted left by one with the embedded bit below it up to Go 1.18, plain since 1.19 (the
// embedded bit moved to the name's flags). Names are a flag byte, a length (two bytes big-endian
// up to Go 1.16, a varint since 1.17), the bytes. Maps are described by key and value, and by the
// bucket or group type and slot sizes of their maptype (the runtime's header has no descriptor: the
// debuginfo stage synthesizes it per release).
//
// No table lists every descriptor: the reader starts from moduledata.typelinks (every unnamed
// pointer, slice, array, chan, func, map and struct type of the program, as offsets from
// moduledata.types) and moduledata.itablinks (each itab's interface and concrete type), and follows
// elements, keys, fields, func parameters, interface and uncommon methods' types and ptrToThis to
// everything reachable. A named type the program only ever uses through a pointer is found through
// that pointer's typelink. A name the walk does not reach (a named type the program converts to an
// interface only by value, whose descriptor only code refers to) is looked for, once, by scanning
// every aligned address of the types for a descriptor that decodes whole (the header checks of
// Pclntab::type_at, the name, and every part of the kind's record): a name found only so is used
// when exactly one descriptor has it.
//
// Knows nothing of specs or DWARF; the debuginfo stage turns a descriptor into the GoType model.
// Every read is bounded: a damaged descriptor is reported as undecodable, never followed blindly.
#pragma once

#include "gobinary/pclntab.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weave {

// reflect.Kind, as the descriptors store it (the low 5 bits of the kind byte).
enum class GoKind : uint8_t {
  Invalid,
  Bool,
  Int,
  Int8,
  Int16,
  Int32,
  Int64,
  Uint,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Uintptr,
  Float32,
  Float64,
  Complex64,
  Complex128,
  Array,
  Chan,
  Func,
  Interface,
  Map,
  Pointer,
  Slice,
  String,
  Struct,
  UnsafePointer,
};

struct TypeDescriptor {
  uint64_t address = 0; // link-time address of the descriptor
  GoKind kind = GoKind::Invalid;
  std::string name; // package paths in full, as DWARF names types: "*net/http.Request"
  bool named = false; // a defined type (tflag named): "net/url.URL", "int", "error"
  uint64_t size = 0;
  uint8_t align = 1, field_align = 1;
  // Stored in an interface's data word itself, not behind it: the kind byte's KindDirectIface bit
  // up to Go 1.25, the tflag's TFlagDirectIface bit (the same 1 << 5) since 1.26.
  bool direct_iface = false;
  uint64_t elem = 0;  // Pointer, Slice, Array, Chan: the element; Map: the value
  uint64_t key = 0;   // Map
  // Map: what its maptype says of the storage the runtime builds for it. Up to Go 1.23 (hmap)
  // `group` is the bucket type (struct {topbits [8]uint8; keys [8]K; elems [8]V; overflow}),
  // slot_key and slot_value the sizes of a key and a value slot and group_size the bucket's; from
  // 1.24 (swiss tables) `group` is the group type (struct {ctrl uint64; slots [8]struct{key K;
  // elem V}}), group_size, slot_size and elem_offset its size, a slot's and elem's offset in one.
  // group is 0 when the pointer does not lead into the module's types.
  uint64_t group = 0, group_size = 0, slot_key = 0, slot_value = 0, slot_size = 0, elem_offset = 0;
  uint64_t len = 0;   // Array
  int chan_dir = 0;   // Chan: 1 receive, 2 send, 3 both
  struct Field {
    std::string name;
    uint64_t type = 0;
    uint64_t offset = 0;
    bool embedded = false;
  };
  std::vector<Field> fields;         // Struct, in memory order
  uint64_t interface_methods = 0;    // Interface: 0 for interface {} (an eface)
  std::vector<uint64_t> references;  // every descriptor this one names (for the walk)
};

class TypeDescriptors {
public:
  // Reads nothing yet; every query decodes on demand. A binary whose table was not located
  // (pcln.types_start() == 0) has no descriptors: every query answers "none".
  explicit TypeDescriptors(const Pclntab &pcln) : pcln_(pcln) {}

  // The descriptor at `vaddr` decoded whole, or nullptr when no descriptor of this module starts
  // there or one of its parts does not decode (failure() then says which).
  const TypeDescriptor *at(uint64_t vaddr);
  std::string failure(uint64_t vaddr) const;

  // The descriptor whose name (package paths in full) is `name`: found among everything reachable
  // from typelinks and itablinks. nullptr when none is; several descriptors with one name (types
  // local to different functions) are refused as ambiguous: see ambiguous().
  const TypeDescriptor *find(const std::string &name);
  bool ambiguous(const std::string &name);

  // What the walk found (for tests and measurements).
  struct Census {
    bool located = false;      // typelinks found in moduledata
    size_t typelinks = 0;      // roots from typelinks
    size_t itabs = 0;          // roots from itablinks
    size_t decoded = 0;        // descriptors reached and decoded
    size_t scanned = 0;        // found only by the scan (after a name the walk did not reach)
    std::vector<std::pair<uint64_t, std::string>> failed; // reached but not decodable: address, why
  };
  const Census &census();
  // Every itab of moduledata.itablinks, the linker's list of the itabs it laid out (the program's
  // conversions of a concrete type to a non-empty interface): (interface type, concrete type)
  // descriptor addresses, in the list's order; an itab whose two words are not both descriptors
  // that decode is left out (counted in itabs_left_out()).
  const std::vector<std::pair<uint64_t, uint64_t>> &itabs();
  size_t itabs_left_out();
  // Every decoded descriptor, by address.
  const std::map<uint64_t, TypeDescriptor> &all();
  // Every name of a decoded descriptor (for suggestions), sorted.
  std::vector<std::string> names();

private:
  std::optional<TypeDescriptor> decode(uint64_t vaddr, std::string &why) const;
  bool locate_links(uint64_t &typelinks, uint64_t &ntypelinks, uint64_t &itablinks, uint64_t &nitab) const;
  void walk();
  void scan();

  const Pclntab &pcln_;
  std::map<uint64_t, TypeDescriptor> decoded_;
  std::map<uint64_t, std::string> failed_;
  bool walked_ = false, scanned_ = false;
  Census census_;
  std::map<std::string, std::vector<uint64_t>> by_name_;
  std::vector<std::pair<uint64_t, uint64_t>> itabs_;
  size_t itabs_left_out_ = 0;
};

} // namespace weave

// Manifest: the tracer's reading of probes.json, the contract between the generator (which
// serializes its plan into it) and the runtime (which attaches and decodes by it).
//
// Keys the runtime requires (anything else is ignored, so the generator may add keys freely):
//   format (== 1), event_header_size (== 64),
//   target.{path, build_id, go_version, arch},
//   probes[].{id (== its index), name, function, program, event_size, attach, captures},
//   probes[].attach[].{kind ("entry"|"return"), file_offset, cookie},
//   probes[].captures[].{expr, fault_bit, fields},
//   probes[].captures[].fields[].{name, kind, offset} and max_len for kind "string".
//   probes[].strings.{offset, size} when a field has "in_area": true.
// Read when present: weave_version, target.pointer_size, options.string_max, options.ring_size,
//   options.ringbuf_wakeup ("always" | "none"), attach[].vaddr, goid.{offset, source},
//   ancestry.{gopc_offset, parent_goid_offset, source, spawn_refused}, ancestry.spawn.{function,
//   programs.{entry, return}, attach.{entry, return}[].file_offset}, type_descriptors.{start, end}, and
//   abi, type, go_type, size (only shown, never needed to decode).
// Addresses and offsets are hex strings ("0xa0580"); plain JSON integers are accepted as well.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weave {

// How a field's value lies in the event record (all slots are 8 bytes, little-endian):
enum class FieldKind {
  Int,     // s64, already sign-extended by the BPF program
  Uint,    // u64
  Bool,    // u64, nonzero is true
  Pointer, // u64 address
  String,  // u64 full length, then min(length, max_len) bytes of data at offset + 8; in_area: u64
           // full length, then the u64 position of those bytes in the probe's string area
  Float,   // IEEE bits: float64 in 8 bytes, float32 in the low 4 (size says which)
  Func,    // u64 code address of a func value's target (0: nil), named from .gopclntab
  Empty,   // no slot: a zero-size value (struct{}, [0]T), shown as {} or [] by its Go type
};

struct ManifestField {
  std::string name; // "" for a capture that is a single value, else "A.B" nesting by dots
  FieldKind kind = FieldKind::Int;
  std::string go_type;
  uint32_t size = 0;   // the Go value's size; informational
  uint32_t offset = 0; // of the slot within the event record
  uint32_t max_len = 0;
  bool hidden = false; // read only to guard another field (xs[i]'s slice length): not printed
  bool array = false;  // an "empty" field that is a [0]T (its type may be named): shown as []
  // A string whose bytes lie in its probe's string area ("strings": a u64 of the bytes used at
  // area_offset, then area_size bytes), at the position its slot's second word gives.
  bool in_area = false;
  uint32_t area_offset = 0, area_size = 0;
};

// DisplayOp: one step of the pre-order walk that prints a capture. Computed once at load, so
// printing an event walks a flat array instead of splitting names.
struct DisplayOp {
  enum Kind { Open, Value, Close, OpenList, CloseList, Interface } kind;
  std::string label;  // the key within the enclosing struct ("" at the top and for list elements)
  uint32_t field = 0; // for Value: index into the capture's fields
  // OpenList: the field holding how many elements the value has (-1: all of them are shown), and
  // the one holding how many the Go value has (a slice's or map's len; -1 for an array): when it
  // is more than the elements shown, the list ends with "..." in text. `sorted`: a map's pairs,
  // printed in the order of their keys (as Go's fmt prints a map), not the order they were found.
  int32_t count_field = -1;
  int32_t len_field = -1;
  uint32_t elements = 0; // OpenList: the elements it has room for
  bool sorted = false;
  // The first op of element `element` of the enclosing list, and the op just past that element:
  // elements at or past the count are skipped (a slice of 3 in 8 slots shows 3).
  int32_t element = -1;
  uint32_t element_end = 0;
  // Interface: the fields holding its dynamic type, data word, and the speculative scalar value
  // and string read through the data word.
  uint32_t type_field = 0, data_field = 0, value_field = 0, text_field = 0;
};

// ManifestList marks the struct at `path` (dots, "" for the capture itself) as a list whose
// children are its elements, in order; `count` names the field (full path) holding the length.
struct ManifestList {
  std::string path;
  std::string count;
  bool map = false; // its elements are a map's {key, value} pairs
};

struct ManifestCapture {
  std::string expr;
  std::string type;
  uint32_t fault_bit = 0;
  std::vector<ManifestField> fields;
  std::vector<ManifestList> lists;
  std::vector<std::string> interfaces; // paths of interface values (see DisplayOp::Interface)
  // A type assertion x.(T) in the path: the hidden field holding the interface's dynamic type
  // word, T's name and its descriptor's link-time address. When the word is not that address (plus
  // a PIE's load bias) the value was not read: it prints as <nil> or <not T: actual type>.
  struct Assertion {
    uint32_t type_field = 0;
    std::string type;
    uint64_t descriptor = 0;
  };
  std::optional<Assertion> assertion;
  // "contents: true": the interface whose type word is field `type_field` may hold one of `types`;
  // a type's value is `value`, a capture of its own over the fields the BPF program read only when
  // the type word was that type's descriptor (plus a PIE's load bias). `pointer`: a *T whose T was
  // read; a nil one (data word 0) shows as nil. A type word naming none of them shows the marker.
  struct Contents {
    struct Type {
      std::string name;
      uint64_t descriptor = 0;
      bool pointer = false;
      std::shared_ptr<const ManifestCapture> value; // fields (absolute offsets), lists, display
    };
    std::string iface;
    uint32_t type_field = 0, data_field = 0;
    std::vector<Type> types;
  };
  std::vector<Contents> contents;
  std::vector<DisplayOp> display; // single value: one Value op; struct: Open ... Close
  // A value of an inlined copy that DWARF does not locate there ("unavailable": why): no fields,
  // shown as <optimized out> (JSON null, listed under "unavailable").
  std::string unavailable;
};

enum class AttachKind { Entry, Return };

struct ManifestAttach {
  AttachKind kind = AttachKind::Entry;
  uint64_t vaddr = 0;
  uint64_t file_offset = 0;
  uint64_t cookie = 0;
};

struct ManifestProbe;
// Whether a record of `size` bytes is whole for its probe: at least its fixed part, and when it is
// shorter than event_size, no more string bytes counted than it holds. Decoders check this before
// they read a byte past the header.
bool record_fits(const ManifestProbe &probe, const void *data, size_t size);

struct ManifestProbe {
  uint32_t id = 0;
  std::string name;
  std::string function;
  std::string abi;
  std::string program;
  uint32_t event_size = 0;
  // The shortest record the probe sends: a probe whose string area ends its record sends only the
  // used part (the fixed part and strings_len, then the bytes it counts: weave_bpf.h,
  // weave_scratch_emit), so its records may be this short; else every record is event_size.
  uint32_t min_size = 0;
  uint32_t strings_offset = 0; // where strings_len is, when the probe has a string area (else 0)
  uint32_t duration_offset = 0; // return events: where the call's duration (u64 ns) is; 0 if none
  uint64_t min_duration_ns = 0; // min_duration: entries arrive with their returns, late (GraphView)
  bool holds_entry = false;     // min_duration or when_return: the same (min_duration_ns alone in older manifests)
  uint32_t stack_offset = 0;    // entry events with a stack: where its u64 return addresses are
  uint32_t stack_depth = 0;     // ... and how many slots (0-terminated when shorter)
  // stack_mode: window: bytes of stack after the struct weave_stack_window at stack_offset (0:
  // a frame-pointer walk's return addresses are there); stack_depth then caps the frames shown.
  uint32_t stack_window = 0;
  // ... and in a cgo binary a second struct weave_stack_window at thread_offset, with thread_window
  // bytes of the thread's own stack from where runtime.cgocallback left it (0: none).
  uint32_t thread_offset = 0;
  uint32_t thread_window = 0;
  std::vector<ManifestAttach> attach;
  std::vector<ManifestCapture> captures;
  // Generic shape instances (entry events): the capture holding the hidden dictionary pointer,
  // not printed, and the instantiation ("main.Sum[int]") each dictionary's link-time address
  // stands for. -1 and empty otherwise; empty for stripped binaries.
  int32_t dict_capture = -1;
  std::map<uint64_t, std::string> instantiations;
  // A copy of `function` the compiler inlined ("inlined_into"): the calling function and the
  // call's position, shown with the function's name.
  struct InlinedInto {
    std::string function, file, physical;
    uint32_t line = 0;
  };
  std::optional<InlinedInto> inlined_into;
  // A source-line probe ("line"): its events are shown as line events, at file:line and pc, their
  // captures the locals there. `physical` holds the PC; `inlined`: the line's function was inlined
  // there.
  struct Line {
    std::string file, physical;
    uint32_t line = 0;
    uint64_t pc = 0;
    bool inlined = false;
  };
  std::optional<Line> line;
};

struct Manifest {
  int format = 0;
  std::string weave_version;
  struct {
    std::string path;
    std::string build_id;
    std::string go_version;
    std::string arch;
    uint32_t pointer_size = 0;
  } target;
  uint32_t string_max = 0;
  uint64_t ring_size = 0; // options.ring_size: bytes of the events ring buffer, 0 for the default
  // false when the BPF side submits with BPF_RB_NO_WAKEUP: nothing wakes a poller then, so the
  // tracer must drain with RingReader::consume on a timer (DESIGN.md, "Measured on this machine").
  bool ringbuf_wakeup = true;
  uint32_t event_header_size = 0;
  std::optional<uint32_t> goid_offset;
  std::string goid_source;
  // Which of the event header's parent_goid and gopc the probes fill in ("ancestry"): without
  // gopc, nobody knows who made a goroutine; without parent_goid (Go before 1.21), only where.
  bool has_gopc = false;
  bool has_parent_goid = false;
  // Go before 1.21 (no g.parentGoid): the spawn probe on goroutine creation ("ancestry.spawn") that
  // fills parent_goid in from the goroutines made since it attached; 0 then means one made before
  // (or forgotten by the bounded map). Its two programs are attached with the probes'.
  struct Spawn {
    std::string function;                      // "runtime.newproc1"
    std::string entry_program, return_program; // BPF program names
    std::vector<uint64_t> entry_offsets, return_offsets; // file offsets
  };
  std::optional<Spawn> spawn;
  std::string spawn_refused; // why a target without parentGoid has no spawn probe ("" when unsaid)
  std::vector<ManifestProbe> probes;
  // Where the target's type descriptors lie (link-time addresses [start, end)): the dynamic type
  // of a captured interface is named from there, read from the binary (runtime/typenames.h).
  // Absent when no capture holds an interface.
  struct DescriptorRange {
    uint64_t start = 0, end = 0;
  };
  std::optional<DescriptorRange> type_descriptors;

  size_t attach_count() const;
};

// parse_manifest validates while it reads. On failure it returns nullopt and sets `error` to a
// message naming the offending key, e.g. "probes[0].captures[1].fields[0].offset: 200 + 8 bytes
// end past event_size 160".
std::optional<Manifest> parse_manifest(std::string_view text, std::string &error);

const char *field_kind_name(FieldKind kind);

} // namespace weave

// Stage 5 — plan: the spec resolved against the binary. The single source of truth: codegen renders
// the BPF C from it, and the manifest the runtime decodes events with is this same data serialized.
//
// A captured value is read by a ValueRead: start from a register (or the stack pointer), then follow
// a chain of loads, each "address = current + offset; current = load(size)". No loads means the value
// is the register itself. Every number is computed here; templates only print them.
#pragma once

#include "common/diag.h"
#include "plan/predicate.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weave {

// The spawn probe's map of parents (Plan::Spawn), an LRU hash: how many goroutines' parents are
// remembered at once. A goroutine evicted from it (the least recently made or looked up) reads as
// one whose parent is unknown, as one made before the tracer attached does.
constexpr uint32_t kSpawnParents = 1 << 17;

// stack_mode: window. The bytes of stack copied per event unless stack_bytes says otherwise (see
// the README's stack section for the measurements behind it), and the size of the struct
// weave_stack_window (templates/weave_event.h) in front of them.
constexpr uint32_t kDefaultStackWindow = 8192;
constexpr uint32_t kStackWindowHeader = 40;

struct Spec;
struct BinaryImage;
class DebugInfo;
class Pclntab;

struct LoadStep {
  int64_t offset = 0;
  uint32_t size = 8;   // bytes loaded (the last step loads the value itself)
  std::string comment; // what this load reads: "req.Header: *main.Header at +8"
  bool skip_if_null = false; // a nil map or channel has length 0: do not load through address 0
};

struct ValueRead {
  std::string base_reg;     // pt_regs field: "bx", "sp"
  // Or, when >= 0, the value of an earlier field of the same capture (by index): a map pair's key
  // or value starts from the slot address the map walk stored there.
  int base_field = -1;
  std::string base_comment; // "req: *main.Request in RBX (integer argument register 1)"
  std::vector<LoadStep> loads;
  uint32_t size = 8; // size of the final value in bytes (masks a register value to this width)
  // capture_at_return: the read starts from the entry's saved value number `saved` (EventPlan::saved
  // of the entry event) instead of a register; base_reg is then empty. -1 otherwise.
  int saved = -1;
};

// MapWalk: the walk over a map's buckets (hmap, Go <= 1.23) or groups (swiss tables, Go 1.24+)
// that finds its first `pairs` key/value pairs (templates/weave_bpf.h: weave_map_hmap,
// weave_map_swiss). It belongs to the hidden field that receives how many it found; the address of
// pair i's key and value go to the hidden fields first_slot_field + 2i and + 2i + 1, which the
// pair's fields read through. Every offset and size comes from the binary's DWARF, or without it
// from the header DescriptorTypes::map_header synthesizes (debuginfo/descriptor_types.cpp).
struct MapWalk {
  std::string layout; // "hmap" or "swiss"
  ValueRead map;      // the map value: a pointer to its header, 0 for a nil map
  uint32_t pairs = 0;
  uint32_t max_visits = 0; // buckets (hmap, overflow buckets included) or groups (swiss) read at most
  int first_slot_field = -1;
  // hmap: hash<K,V>.{flags, B, buckets, oldbuckets, nevacuate}; bucket<K,V>.{tophash, keys, values, overflow}.
  uint64_t flags = 0, log2_buckets = 0, buckets = 0, oldbuckets = 0, nevacuate = 0;
  uint64_t bucket_size = 0, tophash = 0, keys = 0, key_size = 0, values = 0, value_size = 0, overflow = 0;
  // swiss: map<K,V>.{dirPtr, dirLen, writing}; table<K,V>.groups.{data, lengthMask};
  // group.{ctrl, slots}, slot.{key, elem}.
  uint64_t dir_ptr = 0, dir_len = 0, writing = 0, groups_data = 0, groups_mask = 0;
  uint64_t group_size = 0, ctrl = 0, slots = 0, slot_size = 0, slot_key = 0, slot_elem = 0;
};

// EventField is one slot of the event record.
//  int/uint/bool/pointer: 8 bytes at `offset` (ints sign- or zero-extended from `size`).
//  string: 8-byte length at `offset`, then `max_len` bytes of data at offset + 8.
struct EventField {
  std::string name;    // path inside the capture: "" for the value itself, "Header.Port" in a struct
  std::string kind;    // "int", "uint", "bool", "pointer", "float", "string"
  std::string go_type; // "int16", "string", "*main.Header"
  uint32_t size = 8;   // declared byte size of the Go value (1, 2, 4, 8; 16 for strings)
  uint32_t offset = 0; // in the event record
  uint32_t max_len = 0; // string: bytes reserved for data
  ValueRead value;      // scalar value, or a string's data pointer
  ValueRead length;     // string only: its length
  // Slice elements are read only below the slice's length: field `guard_field` (an index into the
  // capture's fields) must hold a value greater than `guard_index`, or the slot stays zero.
  int guard_field = -1;
  uint64_t guard_index = 0;
  bool guard_faults = false; // xs[i] past the length is a fault, not a value (slice elements: skipped)
  bool hidden = false;       // read only to guard others (a slice's length for xs[i]): not shown
  // Speculative reads (what an interface's data word may point to): a fault there leaves the slot
  // zero without marking the capture as faulted.
  bool optional = false;
  // A map's pair count: the walk that fills it (and the pairs' hidden slot addresses) in.
  std::optional<MapWalk> map_walk;
  bool by_walk = false; // a pair's key or value address: written by its map's walk, read from nowhere
  // Read only behind a type assertion x.(T) that holds: field `assert_field` of the capture (the
  // interface's dynamic type word) must equal `assert_type`, the link-time address of T's runtime
  // type descriptor, plus the load bias of a position-independent binary; else the slot stays
  // zero, and no fault is marked (the tracer says which type it was instead).
  int assert_field = -1;
  uint64_t assert_type = 0;
  bool empty_array = false; // kind "empty" for a [0]T, named or not: shown as [] (struct{} as {})
  // A string whose bytes lie in its event's string area (EventPlan::strings_offset), read with the
  // other such strings in one span when they lie together (place_strings, plan/captures.cpp): its
  // slot holds the length, then the bytes' position in the area; `area_slot` is the room the area
  // keeps for it when it is read on its own (its bytes then go right after the ones used before
  // it, at or before area_slot: templates/strings.bpf.c.mustache).
  bool in_area = false;
  uint32_t area_slot = 0;
};

// ListPlan: the struct at `path` inside a capture is a list of elements (a slice or an array);
// `count` names the field that holds its length ("" for an array: every element is shown).
// `map`: the elements are a map's {key, value} pairs, which the tracer prints sorted by key.
struct ListPlan {
  std::string path;
  std::string count;
  bool map = false;
};

struct CapturePlan {
  std::string expr; // as written in the spec: the output key
  SourceLoc loc;
  std::string go_type;
  int fault_bit = 0; // bit in the event header's `faults` set when any read of this capture faults
  std::vector<EventField> fields;
  std::vector<ListPlan> lists;
  // Interface values inside the capture, by path: each has the fields type (the dynamic type's
  // descriptor address), data, value and text, which the tracer renders by the dynamic type.
  std::vector<std::string> interfaces;
  // A type assertion in the path (`err.(*io/fs.PathError).Path`): the hidden field holding the
  // interface's dynamic type word, the asserted type's name and descriptor (link-time address).
  // When the word is another type's, the value's fields are not read and the tracer prints
  // <not T: actual type> (<nil> for a nil interface), never a reinterpretation.
  struct Assertion {
    int type_field = -1;
    std::string type;
    uint64_t descriptor = 0;
  };
  std::optional<Assertion> assertion;
  // "contents: true": the types the interface at `iface` (a path in the capture, "" for the capture
  // itself; its type word is field `type_field`, its data word `data_field`) may be read as.
  // Candidate `types[i]`'s fields are fields [first, last): hidden, named under "#i." (i counting
  // over the capture's candidates), each read only when the type word is that type's `descriptor`
  // (plus a PIE's load bias). `pointer`: the type is a *T and T was read, one level down. A type
  // word naming none of them prints as <contents not known for T>.
  struct Contents {
    struct Type {
      std::string name;
      uint64_t descriptor = 0;
      uint32_t first = 0, last = 0;
      bool pointer = false;
    };
    std::string iface;
    int type_field = -1;
    int data_field = -1;
    std::vector<Type> types;
  };
  std::vector<Contents> contents;
  // At an inlined copy, a value DWARF gives no location for at the probed address: no fields, the
  // tracer shows it as unavailable (`<optimized out>`, JSON null), and this says why.
  std::string unavailable;
};

// The cookie of an attach point (bpf_get_attach_cookie) tells a shared program what it is filling
// in: bits 0-23 the event's id, bits 24-47 the id of the entry event its calls pair with (an entry
// event's own), bits 48-63 the point's index among the event's attach points, which the event
// header reports (templates/weave_bpf.h decodes it). kMaxEvents (the tracer's limit too: one slot
// per event in its counter maps) and kMaxPointsPerEvent bound them.
inline constexpr int kMaxEvents = 1 << 16;
inline constexpr size_t kMaxPointsPerEvent = 1 << 16;
uint64_t attach_cookie(int event_id, int pair_id, size_t point);

struct AttachPoint {
  std::string kind; // "entry" or "return"
  uint64_t vaddr = 0;
  uint64_t file_offset = 0;
  uint64_t cookie = 0; // attach_cookie(): set once every event has its id
  std::string note;    // why this address: "after the stack-growth check", "RET"
};

// EventPlan is one kind of event a probe emits, and the BPF program that fills it in.
struct EventPlan {
  int id = 0;              // the event's probe_id: its index in the manifest's "probes"
  std::string kind;        // "entry" or "return"
  // The BPF program that fills the event in and the C struct of its record. Events of the same
  // shape share both (see ProgramPlan): then these name the first such event's ("probe_0_entry",
  // "probe_0_entry_event").
  std::string program;
  std::string struct_name;
  std::vector<CapturePlan> captures;
  uint32_t event_size = 0;
  // Entry and return of a probe with return events pair up by goroutine and stack depth (in
  // ABIInternal code, where g is in its register); the return event then carries the duration in
  // a u64 right after the header.
  bool pairs_calls = false;
  uint32_t duration_offset = 0; // return events: 0 when there is none
  // Entry events with "stack: N": N u64 return addresses at stack_offset (0-terminated when the
  // walk ends early), innermost caller first.
  uint32_t stack_depth = 0;
  uint32_t stack_offset = 0;
  // stack_mode: window: bytes of the stack copied from SP (0: the frame-pointer walk). The record
  // then holds a struct weave_stack_window (registers, bytes copied) at stack_offset followed by
  // the window, and stack_depth is how many frames the tracer's unwinder shows at most.
  uint32_t stack_window = 0;
  // stack_mode: window in a cgo binary: bytes of the thread's own stack (g0's) copied from where
  // runtime.cgocallback left it (m.g0.sched.sp), for the C frames between a callback into Go and
  // the cgo call below it; and when the probe runs on g0 itself, the goroutine's stack from where
  // systemstack left it (m.curg.sched), for the frames beyond the switch (also for probes on
  // runtime functions in other binaries: those are the ones that run on g0). A second struct
  // weave_stack_window and its bytes follow the first window at thread_offset; 0 when none.
  uint32_t thread_window = 0;
  uint32_t thread_offset = 0;
  // Entry events of a probe with "when:": the condition over the event's captures, evaluated
  // once they are read; a call where it is false is discarded before the tracer sees it, and is
  // not remembered for pairing. A capture it reads that faulted lets the event through, marked.
  std::optional<PredicateNode> filter;
  std::string filter_text; // as the spec wrote it
  uint64_t filter_faults = 0; // the fault bits of the captures it reads
  // "limits: {events_per_second: N}" (entry events): calls past N in a one-second window are
  // dropped, after the filter, with their returns. 0 for none.
  uint64_t events_per_second = 0;
  // Return events of such a probe: emitted only when the paired entry was (it passed the filter
  // and the limits).
  bool needs_entry = false;
  // "min_duration: 5ms" (entry and return events): the entry record waits in the probe's map of
  // calls in flight and is emitted by the return, just before it, only when the call took at
  // least this long. 0 for none.
  uint64_t min_duration_ns = 0;
  // Return events of a probe with "when_return:": the condition over the return's captures (the
  // results it reads) and the held entry's (operands marked at_entry), decided at the return; the
  // entry record waits in the map of calls in flight as with min_duration and is emitted just
  // before its return only when the condition holds (and the call took min_duration).
  std::optional<PredicateNode> return_filter;
  std::string return_filter_text;
  uint64_t return_filter_faults = 0;       // fault bits of the return's captures it reads
  uint64_t return_filter_entry_faults = 0; // and of the entry's
  // Entry and return events of a probe with min_duration or when_return: the entry record itself
  // is held (not only its timestamp) and emitted by the return, or counted as filtered.
  bool holds_entry = false;
  // Entry and return events of a probe with min_duration or capture_at_return: its calls in
  // flight are kept in a map of its own (probe_N_held, templates/probes.bpf.c.mustache), whose
  // value holds the entry's timestamp, `saved`, and with holds_entry the entry record. when_return
  // holds too.
  bool holds = false;
  // Entry events: what capture_at_return reads through, saved at the entry: a pointer in a
  // register (no loads), or loaded once from the stack (one load).
  std::vector<ValueRead> saved;
  // Return events: the fault bits of the capture_at_return captures (set when the entry's saved
  // values are not there: the entry was not seen).
  uint64_t at_return_faults = 0;
  // The string area (0 bytes: none): a u64 of the bytes used, then strings_size bytes holding the
  // bytes of the strings marked in_area (strings_span bytes read at once, then a slot for each
  // string). The record's last member.
  uint32_t strings_offset = 0;
  uint32_t strings_size = 0;
  uint32_t strings_span = 0; // the area's first bytes: the span several strings are read in at once
};

struct ProbePlan {
  int id = 0;
  std::string name;
  std::string function;
  std::string abi; // "ABIInternal" / "ABI0"
  uint64_t function_entry = 0;
  uint64_t function_end = 0;
  std::vector<AttachPoint> attach; // entry first, then every RET when there is a return event
  EventPlan entry;
  std::optional<EventPlan> ret; // "return: true"
  std::vector<std::string> skipped; // values "args: all" / "return: true" left out, and why
  // A shape instance of a generic function: the entry event's capture `dict_capture` reads the
  // hidden dictionary pointer, whose address names the instantiation the caller wrote (from the
  // ..dict. symbols of .symtab: none when stripped). -1 otherwise.
  int dict_capture = -1;
  std::vector<std::pair<uint64_t, std::string>> instantiations; // dictionary address, "main.Sum[int]"
  // A copy of `function` the compiler inlined (entry events only, attached at the
  // copy's first instruction): the function the call is written in, the call's position, and the
  // function whose code holds the copy (the caller itself, or where the caller was inlined).
  struct InlinedInto {
    std::string function, file;
    int line = 0;
    std::string physical;
  };
  std::optional<InlinedInto> inlined_into;
  // A source-line probe ("line:"): one probe per PC the line maps to, its entry event attached at
  // that PC and filled in with the locals DWARF locates there. `function` is the function the line
  // is written in; `physical` the one whose code holds the PC (another, when the line's function
  // was inlined there: `inlined`).
  struct Line {
    std::string file; // the line table's file name
    int line = 0;
    uint64_t pc = 0;
    std::string physical;
    bool inlined = false;
  };
  std::optional<Line> line;
};

// ProgramPlan: one BPF program, shared by every event whose program would be the same code: same
// kind, ABI, captures read from the same places into the same record layout, same pairing and
// stack depth. The program learns which event it fills in from the attach point's cookie, so a
// wildcard over 1,000 functions of one signature costs two verified programs and two
// uprobe_multi links instead of 2,000 of each.
struct ProgramPlan {
  std::string name;        // the first event's program name
  std::string struct_name; // the C struct of the shared record layout
  std::vector<int> events; // ids of the events it serves, ascending
};

// Where the binary's type descriptors lie (moduledata.types, etypes; link-time addresses): the
// tracer reads an interface's dynamic type from there, in the file, when it prints one.
struct DescriptorRange {
  uint64_t start = 0, end = 0;
};

struct TargetInfo {
  std::string path; // where the tracer finds the binary by default: recorded_target_path()
  std::string build_id;
  std::string go_version;
  std::string arch; // "amd64"
  int ptr_size = 8;
};

struct Plan {
  TargetInfo target;
  int string_max = 64;
  uint64_t ring_size = 0; // options.ring_size: 0 leaves it to the tracer
  int slice_max = 8;
  uint64_t goid_offset = 0;     // of goid inside runtime.g
  std::string goid_source;      // "DWARF runtime.g.goid" / "Go version table"
  // Goroutine ancestry (who ran the go statement, and where): g.gopc, the go statement's return
  // PC, in every Go; g.parentGoid from Go 1.21, the word just before gopc. 0: not known for this
  // target (no DWARF and a version the table does not cover), and the header's fields stay 0.
  uint64_t gopc_offset = 0;
  uint64_t parent_goid_offset = 0;
  std::string ancestry_source;  // "DWARF runtime.g" / "table for go1.N"
  // Go before 1.21 has no g.parentGoid: the parent goroutine is learned where goroutines are made,
  // by a probe on runtime.newproc1 that weave adds by itself (the spawn probe). At its entry it
  // reads callergp (the goroutine running the go statement) and keeps callergp.goid by thread; at
  // each RET it reads the new g it returns and files newg.goid -> the parent's goid in a bounded
  // LRU map (templates/probes.bpf.c.mustache), which every event looks its own goid up in. A
  // goroutine made before the tracer attached (or evicted from the map) has no entry: its parent is
  // unknown, never guessed. Goids are not reused within a process (g structs are), so the map is
  // keyed by (pid, goid).
  struct Spawn {
    std::string function;           // "runtime.newproc1"
    std::string abi;                // "ABIInternal" / "ABI0"
    std::string signature;          // where the signature came from and what it is, for the comments
    ValueRead parent;               // at entry: callergp, a *runtime.g
    ValueRead child;                // at every RET: the *runtime.g it returns
    std::vector<AttachPoint> entry; // one
    std::vector<AttachPoint> returns;
    bool g_in_register = false;     // entry: the current g (never needed; g0 there) is not read
  };
  std::optional<Spawn> spawn;
  // Why there is no spawn probe when the target has gopc but no parentGoid: said by weave build and
  // carried into the manifest, so that created_by can say why its goid is missing.
  std::string spawn_refused;
  // Where runtime.cgocallback saved the thread's stack pointer: g.m, m.g0, g.sched.sp (gobuf.sp is
  // its first word). Set for cgo binaries with a window stack probe.
  uint64_t g_m_offset = 0, m_g0_offset = 0, g_sched_sp_offset = 0;
  std::string thread_sp_source; // "DWARF runtime.g, runtime.m, runtime.gobuf" / "layout since Go 1.5"
  // And for a probe running on g0 (reached through systemstack): m.curg and g.sched.pc, where the
  // goroutine's frames go on (m_curg_offset 0: unknown, from DWARF only).
  uint64_t m_curg_offset = 0, g_sched_pc_offset = 0;
  bool cgo = false; // the binary links runtime/cgo (crosscall2)
  std::string g_register;       // pt_regs field holding g at ABIInternal entries ("r14")
  std::string g_register_name;  // "R14"
  std::string ctx_type;         // C type of the uprobe context: "struct weave_pt_regs_x86_64"
  std::string sp_register;      // pt_regs field of the stack pointer ("sp")
  std::string ip_register;      // pt_regs field of the instruction pointer ("ip", arm64 "pc")
  // amd64 ABI0 code keeps g in thread-local storage at FS base + g_tls_offset (-8 without C
  // thread-locals; a cgo binary's TLS segment moves it): see GO-ABI.md §5.
  bool has_tls_g = false;
  int64_t g_tls_offset = 0;
  std::string g_tls_source;
  uint32_t header_size = 0;     // sizeof(struct weave_event_header)
  uint64_t total_events_per_second = 0; // options.limits: calls a second over all probes, 0 for none
  std::vector<ProbePlan> probes;
  std::vector<ProgramPlan> programs; // in the order of their first event
  std::vector<size_t> event_probe;   // index into `probes` of each event id
  std::vector<std::string> warnings; // wildcard matches left out, and why
  std::optional<DescriptorRange> descriptors; // when some capture holds an interface
  bool pie = false; // ET_DYN: a type assertion's descriptor address moves by the load bias
  size_t event_count() const; // entry and return events of every probe
  // Event `id` and its probe (ids run over each probe's entry, then its return event).
  const EventPlan &event(int id) const;
  const ProbePlan &probe_of_event(int id) const;
};

// Resolves every probe; throws UserError pointing at the spec node at fault. `debug` is null for a
// binary without DWARF (functions then come from `pcln` and parameters from the spec); `pcln` is
// null when the binary has no .gopclntab, and otherwise also checks every signature's size.
Plan make_plan(const Spec &spec, const BinaryImage &image, DebugInfo *debug, const Pclntab *pcln);

// The binary's path as the outputs record it (probes.json's target.path, the C banner), which is
// where the tracer attaches when it is given no --binary, -- CMD or --pid. An absolute path is
// kept (normalized); a relative one is made relative to the output directory, where the tracer
// lives and resolves it from: `weave spec.yaml ./myapp` records "../myapp". So `./myapp` and
// `myapp` record the same, the tracer finds the binary from any working directory, and the text
// outputs stay byte-stable wherever a tree is checked out. The path is an input of the outputs:
// naming the binary by another path changes them.
std::string recorded_target_path(const std::string &binary, const std::string &out_dir);

// Deterministic text dump for `weave build --dump=plan`.
std::string dump_plan(const Plan &plan);

} // namespace weave

// Capture resolution, one room of the plan stage: a probe's capture expressions (`req.Header.Port`,
// `*p`, `xs[2]`, `len(m)`) against the values the probe point can name, turned into event fields —
// where each value lives (registers, or memory behind a chain of loads) and its slot in the record.
#pragma once

#include "abi/abi.h"
#include "plan/plan.h"
#include "spec/spec.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace weave {

// Offsets inside runtime structures that a capture reads through (from DWARF, else the layout every
// Go version has kept).
struct RuntimeLayout {
  std::optional<uint64_t> map_count; // runtime.hmap.count (swiss maps: maps.Map.used)
  std::optional<uint64_t> chan_len;  // runtime.hchan.qcount
  std::optional<uint64_t> chan_cap;  // runtime.hchan.dataqsiz
  uint64_t itab_type = 8;            // runtime.itab._type: an iface's dynamic type
};

// The type a type assertion x.(T) names, as the binary has it: its layout and the link-time address
// of its runtime type descriptor (what an interface holding a T has as its dynamic type).
struct AssertedType {
  TypeId type = kNoType;
  std::string name; // the binary's spelling: "*io/fs.PathError"
  uint64_t descriptor = 0;
  // Whether a T is stored in an interface's data word itself, as its descriptor says (the kind
  // byte's KindDirectIface up to Go 1.25, the tflag's TFlagDirectIface since 1.26): the layout
  // alone does not tell a pointer to a not-in-heap type (stored behind the word) or, from 1.26, a
  // one-pointer struct with zero-size fields (in the word). nullopt: by direct_iface() below.
  std::optional<bool> direct_iface;
};
// Looks `written` up; nullopt with `why` (the end of an [unknown-type] message, with a hint) when
// the binary has no such type or no descriptor for it.
using AssertedTypeResolver = std::function<std::optional<AssertedType>(const std::string &written, std::string &why)>;

// The types an interface value may be read as by its contents (spec "contents: true"): for the
// interface type `iface` (its name: "error", "main.Shape", "interface {}"), the concrete types the
// binary converts to it, with their layouts and descriptors, in the order they are tried; at most
// `max` of them: from the itab symbols and DWARF, or without them (stripped) from
// moduledata.itablinks and the runtime type descriptors.
using ContentsCandidates = std::function<std::vector<AssertedType>(const std::string &iface, size_t max)>;

// Whether a value of the type is stored in an interface's data word itself (a pointer, map, chan,
// func, or a struct or array of one such), rather than behind it.
bool direct_iface(const TypeTable &types, TypeId id, int depth = 0);

// What every capture of a plan is resolved with.
struct CaptureContext {
  TypeTable &types;
  const ArchRegisters &regs;
  int ptr_size = 8;
  int string_max = 64;
  int slice_max = 8;
  RuntimeLayout runtime;
  AssertedTypeResolver asserted_type; // null without DWARF and type descriptors: assertions are refused
  // Set per probe by "contents: true": interface values are read as their dynamic types.
  ContentsCandidates contents;
};

// A value the probe can name: a parameter at entry, or a result at a RET.
struct NamedValue {
  std::string name;
  TypeId type = kNoType;
  ParamLocation location;
  // At an inlined copy no ABI places the value: `inlined` says where DWARF's location says it is
  // at the probed address instead (register pieces, stack pieces at SP + offset, or the whole
  // value in memory at SP + offset), or that it is not available there (`unavailable` says why).
  struct InlinedPiece {
    bool memory = false;
    std::string reg, reg_name; // a register piece: pt_regs field and assembler name
    int64_t sp_offset = 0;     // a memory piece: at SP + sp_offset
    uint64_t offset = 0, size = 0; // the part of the value it holds
  };
  bool inlined = false;
  std::string unavailable; // "" when the value is located
  bool whole_in_memory = false;
  int64_t whole_sp_offset = 0;
  std::vector<InlinedPiece> pieces;
};

inline constexpr uint32_t kEventHeaderSize = 64; // sizeof(struct weave_event_header), templates/weave_event.h

// Gives an event with two or more strings a string area, read in one span when the strings lie
// together, and lays its record out again (see captures.cpp). `conditioned`: the fault bits of the
// captures a when: or when_return: condition reads, which keep their strings in their own slots.
void place_strings(EventPlan &event, uint64_t conditioned);

// Resolves the captures of one event and lays out its record. `implicit` captures (args: all,
// return: true) that cannot be captured are skipped with a note in `skipped` instead of failing the
// build; explicit ones throw UserError at their spec location. `what` is "parameter" or "result".
EventPlan make_event(const std::string &kind, int probe_id, const std::vector<CaptureSpec> &explicit_captures,
                     const std::vector<CaptureSpec> &implicit_captures, const std::vector<NamedValue> &values,
                     const std::string &function, const char *what, const CaptureContext &context,
                     std::vector<std::string> &skipped);

// capture_at_return: resolves `captures` against the entry's `inputs`, and turns each read into a
// value saved at the entry (the pointer it starts from, appended to entry.saved unless already
// there) and the loads the return makes through it. The captures are appended to `ret` as
// "EXPR@return", after its own, and its record grows by their fields. A read that follows no
// pointer (an integer argument, a field of a struct passed by value) is refused: by the return
// the argument registers are reused, and the call could not change the caller's copy anyway.
// A capture rooted at one of the `results` ("~r0.Header.Revision", "err") is read at the RET from
// where the ABI puts that result, like the results of return: true.
void add_at_return_captures(EventPlan &entry, EventPlan &ret, const std::vector<CaptureSpec> &captures,
                            const std::vector<NamedValue> &inputs, const std::vector<NamedValue> &results,
                            const std::string &function, const CaptureContext &context);

} // namespace weave

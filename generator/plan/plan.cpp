// make_plan reads top to bottom: the target's registers and runtime layout, then per probe its
// signature (signature.cpp), locations (abi/), attach points (attach.cpp) and captures
// (captures.cpp), with wildcards expanded first (wildcards.cpp) and programs shared last
// (sharing.cpp).
#include "plan/plan.h"
#include "debuginfo/descriptor_types.h"
#include "plan/predicate.h"
#include "plan/expr.h"

#include "abi/abi.h"
#include "gobinary/binary.h"
#include "gobinary/debugfile.h"
#include "gobinary/pclntab.h"
#include "debuginfo/debuginfo.h"
#include "debuginfo/dictionaries.h"
#include "disasm/disasm.h"
#include "plan/attach.h"
#include "plan/captures.h"
#include "plan/inlined.h"
#include "plan/lines.h"
#include "plan/sharing.h"
#include "plan/signature.h"
#include "plan/wildcards.h"
#include "spec/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <filesystem>
#include <sstream>

namespace weave {

namespace {

// goid's offset in runtime.g when there is no DWARF for it: GO-ABI.md §5 (152 up to 1.22, 160 in
// 1.23 and 1.24 with g.syscallbp, 152 again from 1.25 when gobuf.ret went away). Every field before
// goid is a word but atomicstatus and stackLock (uint32 each), so with 4-byte words (386) the same
// layout puts it at 80, 84 and 80: what DWARF says in the 386 builds of Go 1.19 and 1.21-1.26.
uint64_t goid_offset_for(GoVersion v, unsigned ptr_size) {
  bool syscallbp_and_ret = v.major == 1 && (v.minor == 23 || v.minor == 24);
  uint64_t words = syscallbp_and_ret ? 19 : 18; // words before atomicstatus
  return words * ptr_size + 8;
}

// g.parentGoid's and g.gopc's offsets when there is no DWARF, as DWARF gives them in the builds of
// Go 1.19, 1.20 (go1.20.14, amd64 and 386) and 1.21-1.26 (amd64 and arm64 share a layout; 386 packs
// its 4-byte words and 8-byte parentGoid on 4-byte boundaries). {parentGoid, gopc}; parentGoid 0
// before Go 1.21, which has none. Versions not measured (1.16-1.18, and any newer than 1.26) get no
// ancestry rather than a guess: a wrong offset would name a wrong goroutine.
struct AncestryOffsets {
  uint64_t parent_goid = 0, gopc = 0;
};
std::optional<AncestryOffsets> ancestry_offsets_for(GoVersion v, unsigned ptr_size) {
  if (v.major != 1)
    return std::nullopt;
  bool wide = ptr_size == 8;
  switch (v.minor) {
  case 19:
  case 20:
    return AncestryOffsets{0, wide ? 296u : 184u};
  case 21:
  case 22:
    return wide ? AncestryOffsets{272, 280} : AncestryOffsets{164, 172};
  case 23:
    return wide ? AncestryOffsets{280, 288} : AncestryOffsets{168, 176};
  case 24:
    return wide ? AncestryOffsets{280, 288} : AncestryOffsets{172, 180};
  case 25:
    return wide ? AncestryOffsets{272, 280} : AncestryOffsets{168, 176};
  case 26:
    return wide ? AncestryOffsets{280, 288} : AncestryOffsets{176, 184};
  default:
    return std::nullopt;
  }
}

// The spawn probe (Plan::Spawn) on runtime.newproc1, which makes every goroutine of a go statement.
// Its signature decides whether there is a sound point: a callergp *runtime.g parameter (the
// goroutine running the go statement, read at the entry), and one *runtime.g result (the new
// goroutine, whose goid newproc1 has set by its RET). DWARF gives the signature, and a release
// whose newproc1 lacks either gets no spawn probe, with the reason: Go 1.16-1.20 all return *g
// (runtime/proc.go), but Go 1.17's DWARF records no result, so weave does not read one there. A stripped binary's signature is declared only for the releases
// whose runtime source was read (Go 1.19 and 1.20: runtime/proc.go, `newproc1(fn *funcval,
// callergp *g, callerpc uintptr) *g`, setting newg.goid before its one `return newg`), and checked
// against .gopclntab's argument size.
void plan_spawn(Plan &plan, GoVersion version, bool has_dwarf, const std::function<ProbePlan(const ProbeSpec &)> &probe_of,
                const std::function<ProbeSignature(const ProbeSpec &)> &signature_of, const TypeTable &types,
                const SourceLoc &loc, const BinaryImage &image, const Pclntab *pcln) {
  const std::string function = "runtime.newproc1";
  ProbeSpec spec;
  spec.name = "weave: goroutine creation";
  spec.function = function;
  spec.loc = loc;
  spec.inlined = false;
  spec.capture_return = true;
  spec.captures = {{"callergp", loc}};
  if (!has_dwarf) {
    if (!(version.major == 1 && (version.minor == 19 || version.minor == 20))) {
      plan.spawn_refused = fmt::format("the binary has no DWARF, and weave knows runtime.newproc1's signature "
                                       "without it for go1.19 and go1.20 only, not {}",
                                       plan.target.go_version);
      return;
    }
    auto word = [&](const char *name) { return ParamSpec{name, TypeSpec{"uintptr", "", {}, {}, 0, "", loc}, loc}; };
    spec.has_params = spec.has_results = true;
    spec.params = {word("fn"), word("callergp"), word("callerpc")};
    spec.results = {word("newg")};
  }
  std::string signature;
  try {
    ProbeSignature sig = signature_of(spec);
    const GoParam *callergp = nullptr, *result = nullptr;
    size_t results = 0;
    for (const GoParam &p : sig.params) {
      signature += fmt::format("{}{}{} {}", signature.empty() ? "" : ", ", p.is_result ? "result " : "", p.name,
                               types.at(p.type).name);
      if (p.is_result) {
        ++results;
        result = &p;
      } else if (p.name == "callergp") {
        callergp = &p;
      }
    }
    const std::string want = has_dwarf ? "*runtime.g" : "uintptr";
    if (!callergp || types.at(callergp->type).name != want || results != 1 || types.at(result->type).name != want) {
      plan.spawn_refused = fmt::format("{} of {} is ({}), not a callergp *runtime.g parameter and one *runtime.g "
                                       "result: no point of it knows both the new goroutine and its parent",
                                       function, plan.target.go_version, signature);
      return;
    }
  } catch (const UserError &e) {
    plan.spawn_refused = fmt::format("{}: {}", function, e.what());
    return;
  }
  size_t warnings = plan.warnings.size();
  ProbePlan probe;
  try {
    probe = probe_of(spec);
  } catch (const UserError &e) {
    plan.spawn_refused = fmt::format("{} cannot be probed: {} [{}]", function, e.what(), e.id);
    return;
  }
  plan.warnings.resize(warnings); // about the declared result, which the release's source vouches for
  auto single = [&](const std::vector<CapturePlan> &captures, const char *what) -> const ValueRead * {
    if (captures.size() != 1 || captures[0].fields.size() != 1 || !captures[0].unavailable.empty()) {
      plan.spawn_refused = fmt::format("{}: its {} is not one word weave can read", function, what);
      return nullptr;
    }
    const EventField &f = captures[0].fields[0];
    if (f.size != static_cast<uint32_t>(plan.target.ptr_size) || f.value.saved >= 0 || f.value.base_field >= 0) {
      plan.spawn_refused = fmt::format("{}: its {} is not one word weave can read", function, what);
      return nullptr;
    }
    return &f.value;
  };
  if (!probe.ret || !std::any_of(probe.attach.begin(), probe.attach.end(),
                                 [](const AttachPoint &a) { return a.kind == "return"; })) {
    plan.spawn_refused = function + " has no RET to read the new goroutine at";
    return;
  }
  const ValueRead *parent = single(probe.entry.captures, "callergp parameter");
  const ValueRead *child = parent ? single(probe.ret->captures, "result") : nullptr;
  if (!child)
    return;
  Plan::Spawn spawn;
  spawn.function = function;
  spawn.abi = probe.abi;
  spawn.signature = fmt::format("{}({}) from {}", function, signature, has_dwarf ? "DWARF" : plan.target.go_version + "'s runtime/proc.go");
  spawn.parent = *parent;
  spawn.child = *child;
  for (const AttachPoint &a : probe.attach)
    (a.kind == "entry" ? spawn.entry : spawn.returns).push_back(a);
  if (spawn.entry.size() != 1) {
    plan.spawn_refused = function + " has no single entry point";
    return;
  }
  // Cheaper points where they can be had. A uprobe on an instruction the kernel cannot emulate
  // single-steps it out of line, ~15 us here, for the RET and for newproc1's first instruction
  // after its stack check (a SUB); a CALL it emulates (~1 us all told). On x86 in Go 1.16-1.20,
  // runtime.newproc's closure runtime.newproc.func1 is `newg := newproc1(fn, [argp, narg,] gp, pc);
  // pp := ...; runqput(pp, newg, true)`: at its CALL of newproc1 the arguments are where newproc1's
  // entry finds them (a CALL only pushes the return address: stack arguments are one word nearer
  // SP), and at its CALL of runqput, runqput's gp is the new g. Taken only when the closure holds
  // exactly one CALL of each, in that order, with no jump into or out of the code between them;
  // otherwise the entry and the RETs above. (The debugger's injected calls make
  // goroutines through newproc1 elsewhere: those read as made before the tracer attached.)
  // arm64 likewise, with BL for CALL: the kernel simulates BL (and RET, and every branch) and
  // single-steps the rest out of line, newproc1's first instruction (`MOVD 16(R28), R16`) among
  // them; a BL only sets LR, so a stack argument (ABI0, before Go 1.18) is where the callee's entry
  // finds it, and Go 1.19 and 1.20 pass both values in registers anyway.
  const bool arm64 = image.arch == Arch::Arm64;
  auto cheap = [&]() -> std::optional<std::string> {
    if ((image.arch != Arch::X86_64 && image.arch != Arch::I386 && !arm64) || !pcln)
      return "not x86 or arm64 code";
    const PclnFunction *closure = pcln->find("runtime.newproc.func1"), *runqput = pcln->find("runtime.runqput");
    if (!closure || !runqput)
      return "no runtime.newproc.func1 or runtime.runqput";
    // A value in a register is there at the CALL as at the callee's entry; one in the argument area
    // (ABI0: 386, and amd64 before Go 1.17) is a word nearer SP, where the CALL has not yet pushed
    // the return address. (arm64's BL pushes nothing: the same place.)
    auto at_call = [&](const ValueRead &r) -> std::optional<ValueRead> {
      if (r.saved >= 0 || r.base_field >= 0 || r.base_reg.empty())
        return std::nullopt;
      if (arm64)
        return r;
      if (r.base_reg != plan.sp_register)
        return r.loads.empty() ? std::optional<ValueRead>(r) : std::nullopt;
      if (r.loads.size() != 1 || r.loads[0].offset < plan.target.ptr_size)
        return std::nullopt;
      ValueRead moved = r;
      moved.base_comment = "the stack pointer at the CALL";
      moved.loads[0].offset -= plan.target.ptr_size;
      moved.loads[0].comment += fmt::format(" ({} before the CALL pushes its return address)", moved.loads[0].offset);
      return moved;
    };
    std::optional<ValueRead> parent_at_call = at_call(spawn.parent);
    if (!parent_at_call)
      return "callergp is neither in a register nor in the argument area";
    ProbeSpec put;
    put.name = "weave: goroutine creation (runqput)";
    put.function = "runtime.runqput";
    put.loc = loc;
    put.inlined = false;
    put.captures = {{"gp", loc}};
    if (!has_dwarf) {
      auto param = [&](const char *name, const char *type) {
        return ParamSpec{name, TypeSpec{type, "", {}, {}, 0, "", loc}, loc};
      };
      put.has_params = put.has_results = true;
      put.params = {param("pp", "uintptr"), param("gp", "uintptr"), param("next", "bool")};
    }
    ProbePlan put_plan;
    try {
      ProbeSignature sig = signature_of(put);
      bool gp = false;
      for (const GoParam &p : sig.params)
        gp = gp || (!p.is_result && p.name == "gp" && types.at(p.type).name == (has_dwarf ? "*runtime.g" : "uintptr"));
      if (!gp)
        return "runtime.runqput has no gp *runtime.g parameter";
      put_plan = probe_of(put);
    } catch (const UserError &e) {
      return std::string("runtime.runqput: ") + e.what();
    }
    const EventPlan &entry = put_plan.entry;
    std::optional<ValueRead> child_at_call;
    if (entry.captures.size() == 1 && entry.captures[0].fields.size() == 1)
      child_at_call = at_call(entry.captures[0].fields[0].value);
    if (!child_at_call)
      return "runqput's gp is neither in a register nor in the argument area";
    std::vector<uint8_t> bytes = read_bytes(image, closure->entry, closure->end - closure->entry);
    Jumps code = image.arch == Arch::X86_64 ? x86_64_jumps(bytes, closure->entry)
                 : arm64                     ? arm64_jumps(bytes, closure->entry)
                                             : i386_jumps(bytes, closure->entry);
    if (!code.error.empty())
      return code.error;
    std::vector<uint64_t> to_newproc1, to_runqput;
    for (const auto &[at, target] : code.calls) {
      if (target == probe.function_entry)
        to_newproc1.push_back(at);
      else if (target == runqput->entry)
        to_runqput.push_back(at);
    }
    if (to_newproc1.size() != 1 || to_runqput.size() != 1 || to_runqput[0] <= to_newproc1[0])
      return fmt::format("runtime.newproc.func1 is not one {0} of newproc1 and then one of runqput", arm64 ? "BL" : "CALL");
    if (code.computed)
      return "runtime.newproc.func1 jumps through a register";
    for (const auto &[at, target] : code.jumps)
      if ((at > to_newproc1[0] && at < to_runqput[0]) || (target > to_newproc1[0] && target <= to_runqput[0]))
        return "runtime.newproc.func1 jumps between its calls of newproc1 and runqput";
    auto point = [&](const char *kind, uint64_t vaddr, const char *note) -> std::optional<AttachPoint> {
      std::optional<uint64_t> offset = file_offset(image, vaddr);
      if (!offset)
        return std::nullopt;
      AttachPoint a;
      a.kind = kind;
      a.vaddr = vaddr;
      a.file_offset = *offset;
      a.note = note;
      return a;
    };
    auto at_newproc1 = point("entry", to_newproc1[0],
                             arm64 ? "BL runtime.newproc1 in runtime.newproc.func1 (simulated by the kernel: no single-step)"
                                   : "CALL runtime.newproc1 in runtime.newproc.func1 (emulated by the kernel: no single-step)");
    auto at_put = point("return", to_runqput[0],
                        arm64 ? "BL runtime.runqput(pp, newg, true) in runtime.newproc.func1 (simulated by the kernel: "
                                "no single-step)"
                              : "CALL runtime.runqput(pp, newg, true) in runtime.newproc.func1 (emulated by the kernel: "
                                "no single-step)");
    if (!at_newproc1 || !at_put)
      return "a call site is outside the file's mapped code";
    spawn.entry = {*at_newproc1};
    spawn.returns = {*at_put};
    spawn.parent = *parent_at_call;
    spawn.child = *child_at_call;
    spawn.child.base_comment = "newg, runqput's gp: " + spawn.child.base_comment;
    spawn.signature += "; at runtime.newproc.func1's calls of it and of runtime.runqput";
    return std::nullopt;
  };
  if (std::optional<std::string> why = cheap())
    spawn.signature += "; at its entry and RETs (" + *why + ")";
  plan.warnings.resize(warnings);
  plan.spawn = std::move(spawn);
}

// The Go version decides the ABI, so a version string that lies (edited, or a reader's mistake)
// would put every value in the wrong place. .gopclntab's format changed with the toolchain
// (GO-ABI.md §6.1) and is written by the linker, independently of the build info: the two must
// agree, or weave refuses and names both.
void check_version_against_pclntab(GoVersion v, const std::string &claimed, const Pclntab *pcln,
                                   const SourceLoc &loc) {
  if (!pcln || v.major != 1)
    return;
  struct Range {
    uint32_t magic;
    int first, last; // minor versions writing this format
  };
  static const Range ranges[] = {
      {0xfffffffb, 2, 15}, {0xfffffffa, 16, 17}, {0xfffffff0, 18, 19}, {0xfffffff1, 20, 1000}};
  for (const Range &r : ranges) {
    if (r.magic != pcln->magic())
      continue;
    if (v.minor >= r.first && v.minor <= r.last)
      return;
    std::string range = r.last == 1000 ? fmt::format("Go 1.{} or newer", r.first)
                                       : fmt::format("Go 1.{} to 1.{}", r.first, r.last);
    throw UserError("inconsistent-go-version",
                    fmt::format("the binary's build info says {}, but its .gopclntab (magic {:#x}) is written by "
                                "{}: the version decides where every value is, so weave will not guess",
                                claimed, r.magic, range),
                    loc, "rebuild the binary, or check that its build info was not edited");
  }
}

} // namespace

std::string recorded_target_path(const std::string &binary, const std::string &out_dir) {
  namespace fs = std::filesystem;
  fs::path path(binary);
  if (path.is_absolute())
    return path.lexically_normal().string();
  // From where both really are: the tracer resolves the path from the directory it runs from,
  // which the kernel names with every symbolic link resolved (/proc/self/exe), so the path must
  // lead there from that directory: `-o lnk/out` with lnk -> /elsewhere writes the tracer in
  // /elsewhere/out, and a path made lexically ("../../bin") would lead nowhere from there. The
  // directories on the way are resolved; the last name is kept as given (a binary that is a link
  // is traced as the link names it, and the output directory does not exist yet). "out/" and
  // "out" are one directory.
  auto real = [](const fs::path &p) {
    fs::path a = fs::absolute(p);
    if (!a.has_filename())
      a = a.parent_path();
    std::error_code ec;
    fs::path name = a.filename();
    if (name == "." || name == "..") {
      fs::path whole = fs::weakly_canonical(a, ec);
      return ec ? a.lexically_normal() : whole;
    }
    fs::path parent = fs::weakly_canonical(a.parent_path(), ec);
    return ec ? a.lexically_normal() : (parent / name).lexically_normal();
  };
  return real(path).lexically_relative(real(out_dir)).string();
}

Plan make_plan(const Spec &spec, const BinaryImage &image, DebugInfo *debug, const Pclntab *pcln) {
  Plan plan;
  plan.target.path = image.path;
  plan.target.build_id = image.build_id;
  plan.target.go_version = image.buildinfo ? image.buildinfo->go_version : "unknown";
  plan.target.arch = arch_name(image.arch);
  plan.target.ptr_size = image.ptr_size;
  plan.string_max = spec.options.string_max;
  plan.ring_size = spec.options.ring_size;
  plan.header_size = kEventHeaderSize;
  plan.total_events_per_second = spec.options.events_per_second;

  GoVersion version = parse_go_version(plan.target.go_version);
  check_version_against_pclntab(version, plan.target.go_version, pcln, SourceLoc{spec.path});
  TargetAbi target = target_abi(plan.target.arch, version.major, version.minor);
  const ArchRegisters &regs = target.regs;
  // On an x86-64 kernel a 386 process's uprobe context is the 64-bit pt_regs as well.
  plan.ctx_type = image.arch == Arch::Arm64 ? "struct weave_pt_regs_arm64" : "struct weave_pt_regs_x86_64";

  // Without DWARF, types come from the spec and live here for the length of the plan.
  TypeTable declared_types;
  TypeTable &types = debug ? debug->types() : declared_types;
  auto member = [&](const char *type, const char *field) -> std::optional<uint64_t> {
    return debug ? debug->member_offset(type, field) : std::nullopt;
  };

  std::optional<uint64_t> dwarf_goid = member("runtime.g", "goid");
  if (dwarf_goid) {
    plan.goid_offset = *dwarf_goid;
    plan.goid_source = "DWARF runtime.g.goid";
  } else {
    plan.goid_offset = goid_offset_for(version, image.ptr_size);
    plan.goid_source = "table for " + plan.target.go_version;
  }
  std::optional<uint64_t> dwarf_gopc = member("runtime.g", "gopc");
  if (dwarf_gopc) {
    plan.gopc_offset = *dwarf_gopc;
    plan.parent_goid_offset = member("runtime.g", "parentGoid").value_or(0);
    plan.ancestry_source = "DWARF runtime.g";
  } else if (auto table = ancestry_offsets_for(version, image.ptr_size)) {
    plan.gopc_offset = table->gopc;
    plan.parent_goid_offset = table->parent_goid;
    plan.ancestry_source = "table for " + plan.target.go_version;
  }
  // A window stack walk crosses from a callback into Go to the C frames below it through the
  // thread's stack pointer runtime.cgocallback saves in m.g0.sched.sp (asm_*.s). Only binaries
  // with runtime/cgo have callbacks (crosscall2 is C's way into Go).
  plan.cgo = pcln && pcln->find("crosscall2");
  {
    auto m = member("runtime.g", "m"), sched = member("runtime.g", "sched"), g0 = member("runtime.m", "g0"),
         sp = member("runtime.gobuf", "sp"), pc = member("runtime.gobuf", "pc"), curg = member("runtime.m", "curg");
    if (m && sched && g0 && sp) {
      plan.g_m_offset = *m;
      plan.m_g0_offset = *g0;
      plan.g_sched_sp_offset = *sched + *sp;
      plan.thread_sp_source = "DWARF runtime.g, runtime.m, runtime.gobuf";
      if (curg && pc) {
        plan.m_curg_offset = *curg;
        plan.g_sched_pc_offset = *sched + *pc;
      }
    } else {
      // g starts stack (2 words), stackguard0, stackguard1, _panic, _defer, m, sched (a gobuf,
      // sp first); m starts with g0: so in every Go since 1.5 (runtime2.go), on every arch.
      plan.g_m_offset = 6 * image.ptr_size;
      plan.m_g0_offset = 0;
      plan.g_sched_sp_offset = 7 * image.ptr_size;
      plan.thread_sp_source = "layout of runtime.g and runtime.m since Go 1.5";
    }
  }
  plan.g_register = regs.g;
  plan.g_register_name = regs.g_name;
  plan.sp_register = regs.sp;
  plan.ip_register = image.arch == Arch::Arm64 ? "pc" : "ip";
  // ABI0 code finds g in thread-local storage (GO-ABI.md §5). x86 TLS is variant II: the static TLS
  // block ends at the segment base, and g is runtime.tlsg's slot in it. Without PT_TLS (the
  // internal linker, no cgo) the runtime uses the word just below the base: -8(FS) on amd64
  // (sys_linux_amd64.s), -4(GS) on 386 (setldt points GS 4 bytes past m.tls).
  auto g_in_tls = [&](int64_t internal_linker_offset, const char *segment) {
    plan.has_tls_g = true;
    if (image.tls_memsz) {
      uint64_t align = image.tls_align ? image.tls_align : 1;
      uint64_t block = (image.tls_memsz + align - 1) / align * align;
      plan.g_tls_offset = -static_cast<int64_t>(block) + static_cast<int64_t>(image.tlsg.value_or(0));
      plan.g_tls_source = fmt::format("PT_TLS block of {} bytes, runtime.tlsg at +{}", block, image.tlsg.value_or(0));
    } else {
      plan.g_tls_offset = internal_linker_offset;
      plan.g_tls_source = fmt::format("no PT_TLS: the runtime's {}({})", internal_linker_offset, segment);
    }
  };
  if (image.arch == Arch::X86_64)
    g_in_tls(-8, "FS");
  else if (image.arch == Arch::I386)
    g_in_tls(-4, "GS");

  // Map and channel headers: from DWARF when present; without it, the layout every Go version
  // since 1.0 has kept (hmap.count and swiss Map.used first; hchan {qcount, dataqsiz, ...}).
  RuntimeLayout runtime_layout;
  runtime_layout.map_count = member("runtime.hmap", "count");
  if (!runtime_layout.map_count) // Go 1.24+ swiss-table maps
    runtime_layout.map_count = member("internal/runtime/maps.Map", "used");
  runtime_layout.chan_len = member("runtime.hchan", "qcount");
  runtime_layout.chan_cap = member("runtime.hchan", "dataqsiz");
  if (auto off = member("runtime.itab", "_type"))
    runtime_layout.itab_type = *off;
  else if (auto abi_off = member("internal/abi.ITab", "Type")) // Go 1.21+
    runtime_layout.itab_type = *abi_off;
  else
    runtime_layout.itab_type = static_cast<uint64_t>(image.ptr_size);
  if (!debug) {
    runtime_layout.map_count = 0;
    runtime_layout.chan_len = 0;
    runtime_layout.chan_cap = static_cast<uint64_t>(image.ptr_size);
  }
  plan.slice_max = spec.options.slice_max;

  // Without DWARF, named types in declarations come from the runtime's type descriptors.
  std::optional<DescriptorTypes> descriptors;
  if (!debug && pcln)
    descriptors.emplace(*pcln);
  SignatureSources sources{image, debug, pcln, types, descriptors ? &*descriptors : nullptr};
  const std::vector<ElfSymbol> dictionaries = dictionary_symbols(dwarf_path(image));
  CaptureContext captures{types, regs, image.ptr_size, spec.options.string_max, spec.options.slice_max,
                          runtime_layout};
  plan.pie = image.pie;
  // Type assertions (x.(T)) find T's layout and its runtime type descriptor in DWARF: the type's
  // DW_AT_go_runtime_type, an offset from runtime.types (moduledata.types).
  std::optional<std::map<std::string, uint64_t>> descriptor_of; // built on the first assertion
  std::optional<TypeDescriptors> direct_flags;                  // each asserted type's KindDirectIface
  // Near names of a type the binary does not have: those with the same last element ("PathError"
  // for *os.PathError, an alias of *io/fs.PathError, which the binary knows by that name alone),
  // else the closest spellings.
  auto near_names = [](const std::string &written, const std::vector<std::string> &all) {
    std::string stars = written.substr(0, written.find_first_not_of('*'));
    std::string tail = written.substr(std::min(written.size(), written.find_last_of("./") + 1));
    std::vector<std::string> same_tail;
    for (const std::string &name : all)
      if (name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0 &&
          std::string_view("./").find(name[name.size() - tail.size() - 1]) != std::string_view::npos &&
          name.compare(0, stars.size(), stars) == 0 && name.find_first_not_of('*') == stars.size())
        same_tail.push_back(name);
    std::sort(same_tail.begin(), same_tail.end());
    if (same_tail.size() > 5)
      same_tail.resize(5);
    if (same_tail.empty())
      return did_you_mean(written, all);
    std::string hint = "did you mean " + same_tail[0];
    for (size_t i = 1; i < same_tail.size(); ++i)
      hint += (i + 1 == same_tail.size() ? " or " : ", ") + same_tail[i];
    return hint + "?";
  };
  auto no_such_type = [](const std::string &written, const std::string &hint) {
    return fmt::format("the binary has no type {} ({}name it as the binary does, by its full package path: "
                       "*io/fs.PathError, *net/http.response, main.Point)",
                       written, hint.empty() ? "" : hint + " ");
  };
  if (debug)
    captures.asserted_type = [&](const std::string &written, std::string &why) -> std::optional<AssertedType> {
      std::optional<uint64_t> base = pcln && pcln->types_start() ? std::optional<uint64_t>(pcln->types_start())
                                                                 : image.types_base;
      if (!descriptor_of) {
        descriptor_of.emplace();
        for (const RuntimeType &t : debug->runtime_types())
          descriptor_of->emplace(t.name, t.address);
      }
      std::optional<TypeId> found = debug->find_type(written);
      auto it = descriptor_of->find(written);
      if (found && it != descriptor_of->end() && base) {
        AssertedType t{*found, written, *base + it->second};
        if (pcln && pcln->types_start()) {
          if (!direct_flags)
            direct_flags.emplace(*pcln);
          if (const TypeDescriptor *d = direct_flags->at(t.descriptor))
            t.direct_iface = d->direct_iface;
        }
        return t;
      }
      std::vector<std::string> all;
      for (const auto &[name, address] : *descriptor_of)
        all.push_back(name);
      std::string hint = near_names(written, all);
      if (found && !base)
        why = fmt::format("the binary has no runtime.types symbol to place {}'s type descriptor", written);
      else if (found)
        why = fmt::format("{} has no runtime type descriptor in the binary: no interface value in it can hold one "
                          "(it is never converted to an interface){}",
                          written, hint.empty() ? "" : "; " + hint);
      else
        why = no_such_type(written, hint);
      return std::nullopt;
    };
  // Without DWARF (stripped), the type and its layout are its runtime type descriptor's, read with
  // certainty or not at all: a descriptor that does not decode, a part of the value that would be
  // read through one (a field, a pointer's element, an array's or slice's element, nested as far
  // as a capture reads) refuses the type by name. Where an interface keeps the value (in its data
  // word or behind it) is the descriptor's KindDirectIface, with DWARF as well.
  else if (descriptors)
    captures.asserted_type = [&](const std::string &written, std::string &why) -> std::optional<AssertedType> {
      TypeDescriptors &table = descriptors->descriptors();
      std::string not_found;
      std::optional<TypeId> id = descriptors->find(written, types, not_found);
      const TypeDescriptor *d = id ? table.find(written) : nullptr;
      if (!id || !d) {
        if (!table.census().located || table.ambiguous(written))
          why = not_found;
        else
          why = no_such_type(written, near_names(written, table.names()));
        return std::nullopt;
      }
      std::function<std::optional<std::string>(TypeId, int)> unread = [&](TypeId t,
                                                                          int depth) -> std::optional<std::string> {
        const GoType &g = types.at(t);
        if (g.kind == TypeKind::Unsupported)
          return g.name;
        if (depth > 6)
          return std::nullopt; // deeper than a capture reads
        switch (g.kind) {
        case TypeKind::Struct:
          for (const GoField &f : g.fields)
            if (auto bad = unread(f.type, depth + 1))
              return bad;
          return std::nullopt;
        case TypeKind::Array:
        case TypeKind::Slice:
          return g.elem == kNoType ? std::optional<std::string>(g.name) : unread(g.elem, depth + 1);
        case TypeKind::Pointer:
          if (depth > 0)
            return std::nullopt; // a pointer inside shows its address
          return g.elem == kNoType ? std::optional<std::string>(g.name) : unread(g.elem, depth + 1);
        default:
          return std::nullopt;
        }
      };
      if (auto bad = unread(*id, 0)) {
        why = fmt::format("the type descriptor of {} cannot be read with certainty ({}): {}", written, *bad,
                          table.failure(d->address).empty() ? "a part of it does not decode"
                                                            : table.failure(d->address));
        return std::nullopt;
      }
      AssertedType t{*id, written, d->address};
      t.direct_iface = d->direct_iface;
      return t;
    };
  // "contents: true": an interface's candidate dynamic types are the concrete types the binary
  // converts to it, as its itab symbols name them (for an empty interface, every such type):
  // the probe's contents_types first, then package main's, then the others' outside internal/
  // and runtime packages, then the rest, by name within each. Basic kinds (ints, strings, ...)
  // are left out: the tracer already shows those by their descriptor's kind. Stripped (no DWARF,
  // no .symtab), the itabs are moduledata.itablinks' (the list the linker writes of the same
  // itabs, for the runtime's itab table), named by their descriptors, and the layouts are the
  // descriptors' (asserted_type above).
  std::optional<std::vector<std::pair<std::string, std::string>>> itabs; // read on first use
  auto contents_for = [&](const std::vector<std::string> &first) -> ContentsCandidates {
    if (!captures.asserted_type)
      return {}; // no layouts: interfaces print as without contents
    return [&, first](const std::string &iface, size_t max) {
      if (!itabs && debug) {
        itabs = itab_symbols(dwarf_path(image));
      } else if (!itabs) {
        itabs.emplace();
        TypeDescriptors &table = descriptors->descriptors();
        for (const auto &[inter, concrete] : table.itabs())
          itabs->emplace_back(table.at(concrete)->name, table.at(inter)->name);
        std::sort(itabs->begin(), itabs->end());
        itabs->erase(std::unique(itabs->begin(), itabs->end()), itabs->end());
      }
      bool empty = iface == "interface {}" || iface == "any";
      auto rank = [](const std::string &name) {
        std::string bare = name.substr(std::min(name.size(), name.find_first_not_of('*')));
        if (bare.starts_with("main."))
          return 0;
        if (bare.starts_with("internal/") || bare.starts_with("runtime.") || bare.starts_with("runtime/") ||
            bare.find("/internal/") != std::string::npos || bare.starts_with("vendor/"))
          return 2;
        return 1;
      };
      std::vector<std::string> found;
      for (const auto &[concrete, to] : *itabs)
        if (empty || to == iface)
          found.push_back(concrete);
      std::sort(found.begin(), found.end(), [&](const std::string &a, const std::string &b) {
        return std::make_pair(rank(a), a) < std::make_pair(rank(b), b);
      });
      std::vector<std::string> names = first;
      names.insert(names.end(), found.begin(), found.end());
      std::set<std::string> seen;
      std::vector<AssertedType> out;
      for (const std::string &name : names) {
        if (out.size() >= max)
          break;
        if (!seen.insert(name).second)
          continue;
        std::string why;
        std::optional<AssertedType> t = captures.asserted_type(name, why);
        if (!t)
          continue;
        switch (types.at(t->type).kind) {
        case TypeKind::Bool:
        case TypeKind::Int:
        case TypeKind::Uint:
        case TypeKind::Uintptr:
        case TypeKind::Float:
        case TypeKind::String:
          continue;
        default:
          out.push_back(*t);
        }
      }
      return out;
    };
  };
  auto plan_probe = [&](const ProbeSpec &probe_spec, size_t index) -> ProbePlan {
    CaptureContext captures_here = captures;
    if (probe_spec.contents) {
      for (const std::string &name : probe_spec.contents_types) {
        std::string why;
        if (captures.asserted_type && !captures.asserted_type(name, why))
          throw UserError("unknown-type", fmt::format("contents_types: {}", why), probe_spec.contents_loc);
      }
      captures_here.contents = contents_for(probe_spec.contents_types);
    }
    const CaptureContext &captures = captures_here;
    const ProbeSignature signature = resolve_signature(probe_spec, sources);
    const ProbeSignature *fn = &signature;
    const std::vector<GoParam> &params = signature.params;

    ProbePlan probe;
    probe.id = static_cast<int>(index);
    probe.name = probe_spec.name;
    probe.function = fn->name;
    probe.function_entry = fn->low_pc;
    probe.function_end = fn->high_pc;

    AbiConfig config = function_abi(target, fn->regabi);
    probe.abi = config.name;
    probe.attach = function_attach_points(image, fn->name, fn->low_pc, fn->high_pc,
                                          probe_spec.capture_return, probe_spec.loc);
    // A function with no RET (a goroutine body looping forever) keeps its entry and entry values;
    // its results and durations are not knowable, which is said, not refused.
    const bool returns = probe_spec.capture_return &&
                         std::any_of(probe.attach.begin(), probe.attach.end(),
                                     [](const AttachPoint &a) { return a.kind == "return"; });
    if (probe_spec.capture_return && !returns)
      probe.skipped.push_back(fmt::format(
          "results: {} has no RET instruction (it never returns, or only tail-calls): its results and "
          "durations are not knowable, and return: true{} applies to nothing; its entries are traced [no-return]",
          fn->name,
          probe_spec.min_duration_ns || !probe_spec.at_return.empty() || !probe_spec.when_return.empty()
              ? " (with min_duration, when_return and capture_at_return)"
              : ""));

    std::vector<NamedValue> inputs, results;
    std::vector<TypeId> input_types, result_types;
    for (const GoParam &p : params)
      (p.is_result ? result_types : input_types).push_back(p.type);
    FunctionLayout layout;
    try {
      layout = assign_locations(types, input_types, result_types, config);
    } catch (const std::invalid_argument &e) {
      throw UserError("unsupported-type", fmt::format("{}: {}", fn->name, e.what()), probe_spec.loc);
    }
    // Values are read only by a signature that adds up. A probe that names values itself stops the
    // build; values it only asked for wholesale (args: all, results with return: true) are left
    // out with the reason, and its calls are still counted and timed.
    std::string untrusted = check_argument_width(signature, layout, sources);
    if (!untrusted.empty() &&
        (!probe_spec.captures.empty() || !probe_spec.at_return.empty() || !probe_spec.when_return.empty()))
      throw UserError("signature-mismatch", fmt::format("{}: {}", fn->name, untrusted), probe_spec.loc,
                      "declare the full signature with params: [...] and results: [...], blank (_) and "
                      "unnamed parameters included");
    if (!untrusted.empty() && (probe_spec.all_args || returns))
      probe.skipped.push_back(fmt::format("values: {} [signature-mismatch]", untrusted));
    if (signature.results_unknown && returns && untrusted.empty())
      probe.skipped.push_back("results: the binary has no DWARF and the spec declares none (results: [...]); "
                              "return events carry the call's duration only");
    if (signature.results_unchecked && config.name == "ABIInternal" && untrusted.empty())
      plan.warnings.push_back(fmt::format(
          "{}: the declared results are read as declared: without DWARF nothing records the results a "
          "register-ABI function returns, so weave cannot check them against the binary",
          fn->name));
    for (const GoParam &p : params) {
      auto &list = p.is_result ? results : inputs;
      const auto &locs = p.is_result ? layout.results : layout.inputs;
      list.push_back({p.name, p.type, locs.at(list.size())});
    }

    std::vector<CaptureSpec> all_args, entry_captures = probe_spec.captures;
    // A generic shape instance's hidden dictionary is read to name the instantiation, never shown;
    // only from a signature that adds up, like every other value.
    const bool dictionary = untrusted.empty() && std::any_of(inputs.begin(), inputs.end(), [](const NamedValue &in) {
                              return in.name == kDictionaryParam;
                            });
    if (dictionary)
      entry_captures.push_back({kDictionaryParam, probe_spec.loc});
    if (probe_spec.all_args && untrusted.empty())
      for (const auto &in : inputs)
        if (in.name != kDictionaryParam)
          all_args.push_back({in.name, probe_spec.all_args_loc});
    // "when:": the values the condition reads are captured like any other (and shown), then the
    // condition is checked against what they are.
    std::optional<PredicateNode> filter;
    if (!probe_spec.when.empty()) {
      filter = parse_predicate(probe_spec.when, probe_spec.when_loc);
      for (const PredicateOperand &value : predicate_values(*filter))
        entry_captures.push_back({value.text, advance(probe_spec.when_loc, value.column), value.nil_compared});
    }
    // "when_return:": its values rooted at a result are captured at the return, the others (the
    // parameters) at the entry, and the condition reads each where it is.
    std::optional<PredicateNode> return_filter;
    std::vector<CaptureSpec> return_captures;
    if (!probe_spec.when_return.empty() && returns) {
      return_filter = parse_predicate(probe_spec.when_return, probe_spec.when_return_loc, "when_return");
      for (const PredicateOperand &value : predicate_values(*return_filter)) {
        SourceLoc at = advance(probe_spec.when_return_loc, value.column);
        CaptureExpr parsed = parse_capture_expr(value.text, at);
        bool is_result = std::any_of(results.begin(), results.end(),
                                     [&](const NamedValue &r) { return r.name == parsed.root; });
        bool is_input = std::any_of(inputs.begin(), inputs.end(),
                                    [&](const NamedValue &r) { return r.name == parsed.root; });
        if (!is_result && !is_input) {
          std::vector<std::string> names;
          for (const NamedValue &v : inputs)
            if (v.name != kDictionaryParam)
              names.push_back(v.name);
          for (const NamedValue &v : results)
            names.push_back(v.name);
          std::string all;
          for (const std::string &n : names)
            all += (all.empty() ? "" : ", ") + n;
          std::string hint = "when_return reads results and parameters: " + (all.empty() ? "(none)" : all);
          // "err != nil" is what people write for a function whose error result has no name.
          std::vector<std::string> unnamed_errors;
          for (const NamedValue &v : results)
            if (v.name.rfind("~r", 0) == 0 && types.at(v.type).name == "error")
              unnamed_errors.push_back(v.name);
          if (parsed.root == "err" && unnamed_errors.size() == 1)
            hint = fmt::format("did you mean {}? The function's error result has no name, so it is {} ({})",
                               unnamed_errors[0], unnamed_errors[0], hint);
          throw UserError("unknown-parameter",
                          fmt::format("{} has no parameter or result {} (in when_return)", fn->name, parsed.root),
                          advance(at, parsed.root_column), hint);
        }
        (is_result ? return_captures : entry_captures).push_back({value.text, at, value.nil_compared});
      }
    }
    probe.entry = make_event("entry", probe.id, entry_captures, all_args, inputs, fn->name,
                             "parameter", captures, probe.skipped);
    if (filter) {
      probe.entry.filter_faults =
          resolve_predicate(*filter, probe.entry.captures, probe_spec.when, probe_spec.when_loc);
      probe.entry.filter = std::move(filter);
      probe.entry.filter_text = probe_spec.when;
    }
    probe.entry.events_per_second = probe_spec.events_per_second;
    if (dictionary)
      name_instantiations(probe, fn->name, dictionaries);
    if (probe_spec.stack > 0) {
      // Two ways to capture it. fp: BPF walks the frame-pointer chain from the return address (at
      // SP, or in LR) and the caller's frame pointer (the entry probe runs before the function
      // saves its own): complete for Go frames on amd64 and arm64, the cheap default there.
      // window: BPF copies the registers and stack_bytes of the stack from SP, and the tracer
      // unwinds the copy with .gopclntab's SP-delta tables (gobinary/unwind.h): no frame pointers
      // needed, so it is the default, and the only way, on 386.
      bool has_fp = image.arch == Arch::X86_64 || image.arch == Arch::Arm64;
      std::string mode = probe_spec.stack_mode.empty() ? (has_fp ? "fp" : "window") : probe_spec.stack_mode;
      if (mode == "fp" && !has_fp)
        throw UserError("unsupported-stack",
                        fmt::format("stack_mode: fp walks frame pointers, which Go keeps on amd64 and arm64 "
                                    "only, and {} is {}",
                                    image.path, arch_name(image.arch)),
                        probe_spec.stack_mode_loc, "use stack_mode: window (the default on this architecture)");
      probe.entry.stack_depth = static_cast<uint32_t>(probe_spec.stack);
      probe.entry.event_size = (probe.entry.event_size + 7) & ~7u;
      probe.entry.stack_offset = probe.entry.event_size;
      if (mode == "window") {
        // In whole words: the record's size stays a multiple of its alignment.
        probe.entry.stack_window = ((probe_spec.stack_bytes ? probe_spec.stack_bytes : kDefaultStackWindow) + 7) & ~7u;
        probe.entry.event_size += kStackWindowHeader + probe.entry.stack_window;
        bool runtime_function = fn->name.rfind("runtime.", 0) == 0 && plan.m_curg_offset;
        if ((plan.cgo || runtime_function) && (plan.has_tls_g || probe.abi == "ABIInternal")) {
          // the thread's stack too, as much, for the C frames of a callback (see thread_window)
          probe.entry.thread_offset = probe.entry.event_size;
          probe.entry.thread_window = probe.entry.stack_window;
          probe.entry.event_size += kStackWindowHeader + probe.entry.thread_window;
        }
      } else {
        probe.entry.event_size += 8 * probe.entry.stack_depth;
      }
    }

    if (returns) {
      std::vector<CaptureSpec> all_results;
      for (const auto &r : untrusted.empty() ? results : std::vector<NamedValue>{})
        all_results.push_back({r.name, probe_spec.loc});
      probe.ret = make_event("return", probe.id, return_captures, all_results, results, fn->name, "result",
                             captures, probe.skipped);
      // Pairing needs g: in a register in ABIInternal code, in TLS for amd64 ABI0 code.
      probe.entry.pairs_calls = probe.ret->pairs_calls = config.name == "ABIInternal" || plan.has_tls_g;
      // A return is shown only when its entry passed "when:" and the limits, which only pairing
      // can tell.
      bool gated = probe.entry.filter || probe.entry.events_per_second || spec.options.events_per_second;
      if (gated && !probe.entry.pairs_calls)
        throw UserError(probe.entry.filter ? "bad-predicate" : "unpaired-limits",
                        fmt::format("{}: {} with return: true needs entries and returns paired by goroutine, "
                                    "and this {} code has no goroutine pointer weave can read",
                                    fn->name, probe.entry.filter ? "when:" : "limits:", config.name),
                        probe.entry.filter ? probe_spec.when_loc : probe_spec.loc,
                        "drop return: true, or the condition and limits");
      probe.ret->needs_entry = gated;
      // min_duration and capture_at_return keep each call in flight in the probe's own map, which
      // the return finds by the same pairing key.
      if (!probe_spec.at_return.empty())
        add_at_return_captures(probe.entry, *probe.ret, probe_spec.at_return, inputs, results, fn->name, captures);
      if (return_filter) {
        probe.ret->return_filter_faults =
            resolve_predicate(*return_filter, probe.ret->captures, probe_spec.when_return, probe_spec.when_return_loc,
                              "when_return", &probe.entry.captures, &probe.ret->return_filter_entry_faults);
        probe.ret->return_filter = std::move(return_filter);
        probe.ret->return_filter_text = probe_spec.when_return;
      }
      const bool holds_entry = probe_spec.min_duration_ns || probe.ret->return_filter;
      bool holds = holds_entry || !probe_spec.at_return.empty();
      if (holds && !probe.entry.pairs_calls) {
        const char *what = probe_spec.min_duration_ns         ? "min_duration"
                           : !probe_spec.when_return.empty() ? "when_return"
                                                             : "capture_at_return";
        SourceLoc where = probe_spec.min_duration_ns         ? probe_spec.min_duration_loc
                          : !probe_spec.when_return.empty() ? probe_spec.when_return_loc
                                                            : probe_spec.at_return.front().loc;
        throw UserError("unpaired-return",
                        fmt::format("{}: {} needs entries and returns paired by goroutine, and this {} code has "
                                    "no goroutine pointer weave can read",
                                    fn->name, what, config.name),
                        where, "drop it, or trace a function compiled with the register ABI");
      }
      probe.entry.holds = probe.ret->holds = holds;
      probe.entry.holds_entry = probe.ret->holds_entry = holds_entry;
      probe.entry.min_duration_ns = probe.ret->min_duration_ns = probe_spec.min_duration_ns;
    }
    return probe;
  };

  // Wildcards expand to one probe per matching function; a function a wildcard picked that cannot
  // be probed is left out with a warning, while a function named exactly must work or stop the build.
  std::vector<std::string> names = probeable_function_names(debug, pcln);
  // "inlined:" unset: a function named exactly is probed at every call, its inlined copies
  // included; a wildcard's matches are not (their copies can number in thousands).
  auto wants_inlined = [&](const ProbeSpec &p, bool from_wildcard) {
    return pcln && p.inlined.value_or(!from_wildcard);
  };
  // A wildcard with inlined: true also matches functions that exist only as inlined copies.
  const std::set<std::string> out_of_line(names.begin(), names.end());
  std::optional<std::map<std::string, std::vector<std::string>>> sites;
  if (pcln && std::any_of(spec.probes.begin(), spec.probes.end(), [](const ProbeSpec &p) {
        return is_function_glob(p.function) && p.inlined.value_or(false);
      })) {
    std::vector<Pclntab::Problem> problems;
    sites = pcln->inline_sites(&problems);
    for (const Pclntab::Problem &p : problems)
      plan.warnings.push_back(fmt::format("{}: its inline tree does not check out ({}): the functions inlined "
                                          "there are not matched through it [bad-inline-tree]",
                                          p.function, p.reason));
    for (const auto &[name, into] : *sites)
      if (!out_of_line.count(name))
        names.push_back(name);
    std::sort(names.begin(), names.end());
  }
  auto generated = [pcln](const std::string &name) {
    const PclnFunction *fn = pcln ? pcln->find(name) : nullptr;
    if (!fn)
      return false;
    std::vector<Pclntab::Frame> frames = pcln->symbolize(fn->entry, true);
    return !frames.empty() && frames.back().file == "<autogenerated>";
  };
  // An exactly named function that cannot be probed stops the build, but only once every probe has
  // been planned: each independent error is reported in the same run.
  std::vector<UserError> errors;
  // Line probes ("line:") are planned apart, after the functions' (plan/lines.h).
  Spec function_spec = spec;
  std::erase_if(function_spec.probes, [](const ProbeSpec &p) { return p.line > 0; });
  const std::vector<ExpandedProbe> expanded_probes =
      expand_wildcards(function_spec, names, generated, plan.warnings, pcln);
  // The inlined copies of every function that wants them, from the inline trees (PCs, call sites)
  // and DWARF (parameters, where it has an entry at the same first instruction).
  std::set<std::string> inlined_wanted;
  for (const ExpandedProbe &expanded : expanded_probes)
    if (wants_inlined(expanded.spec, expanded.from_wildcard))
      inlined_wanted.insert(expanded.spec.function);
  std::vector<InlinedCopyLocations> dwarf_copies;
  std::map<std::string, InlinedCopies> copies_of;
  if (!inlined_wanted.empty()) {
    auto wanted = [&](std::string_view name) { return inlined_wanted.count(std::string(name)) > 0; };
    std::vector<Pclntab::Problem> problems;
    std::vector<Pclntab::InlinedCopy> copies = pcln->inlined_copies(wanted, &problems);
    // One function's inline tree that does not check out leaves out the copies inlined there, and
    // nothing else.
    for (const Pclntab::Problem &p : problems)
      plan.warnings.push_back(fmt::format("{}: its inline tree does not check out ({}): copies inlined there "
                                          "are not probed [bad-inline-tree]",
                                          p.function, p.reason));
    // Copies whose call site the compiler did not record are still the callee's own instructions.
    std::map<std::pair<std::string, std::string>, size_t> unknown_sites;
    for (const Pclntab::InlinedCopy &copy : copies)
      if (!copy.call_site_known)
        ++unknown_sites[{copy.function, copy.physical}];
    for (const auto &[where, n] : unknown_sites)
      plan.warnings.push_back(fmt::format(
          "{}: {} of its inlined copies in {} have no recorded call site (their parent PC leads back to "
          "themselves, as Go writes it for calls inlined into a package initializer): probed at their own "
          "first instruction, shown as called from {}",
          where.first, n, where.second, where.second));
    if (debug)
      dwarf_copies = read_inlined_locations(dwarf_path(image), wanted);
    std::map<std::tuple<std::string, std::string, uint64_t>, const InlinedCopyLocations *> by_place;
    for (const InlinedCopyLocations &d : dwarf_copies)
      by_place.emplace(std::make_tuple(d.function, d.physical, d.low_pc), &d);
    for (Pclntab::InlinedCopy &copy : copies) {
      auto it = by_place.find(std::make_tuple(copy.function, copy.physical, copy.first_pc));
      InlinedCopies &of = copies_of[copy.function];
      of.dwarf.push_back(it == by_place.end() ? nullptr : it->second);
      of.copies.push_back(std::move(copy));
    }
  }
  for (const ExpandedProbe &expanded : expanded_probes) {
    const std::string &function = expanded.spec.function;
    const bool copies = wants_inlined(expanded.spec, expanded.from_wildcard) && copies_of.count(function);
    if (expanded.from_wildcard && !copies && !out_of_line.count(function))
      continue; // only inlined copies, which this wildcard does not ask for
    bool only_copies = false;
    try {
      plan.probes.push_back(plan_probe(expanded.spec, plan.probes.size()));
    } catch (const UserError &e) {
      // No body of its own: then its inlined copies are all there is to probe.
      only_copies = copies && e.id == "inlined-function";
      if (!only_copies && !expanded.from_wildcard) {
        errors.push_back(e);
        continue;
      }
      if (!only_copies) {
        plan.warnings.push_back(fmt::format("{} (matched by {}) left out: {} [{}]", function,
                                            expanded.pattern, e.what(), e.id));
        continue;
      }
    }
    if (!copies)
      continue;
    try {
      // A function named exactly that exists only as inlined copies cannot take min_duration (a
      // copy has no RET to time a call by): an error of this probe, not a silent empty plan.
      if (only_copies && !expanded.from_wildcard && !expanded.spec.when_return.empty())
        throw UserError("inlined-when-return",
                        fmt::format("{} exists only as inlined copies, and when_return is decided at a call's "
                                    "return: a copy has no RET to read the results at",
                                    function),
                        expanded.spec.when_return_loc,
                        "drop when_return (its calls are then traced at entry), or keep the compiler "
                        "from inlining it (//go:noinline)");
      if (only_copies && !expanded.from_wildcard && expanded.spec.min_duration_ns)
        throw UserError("inlined-min-duration",
                        fmt::format("{} exists only as inlined copies, and min_duration needs each call's "
                                    "duration: a copy has no RET to time it by",
                                    function),
                        expanded.spec.min_duration_loc,
                        "drop min_duration (its calls are then traced at entry), or keep the compiler "
                        "from inlining it (//go:noinline)");
      for (ProbePlan &probe : plan_inlined_probes(expanded.spec, function, copies_of.at(function), debug, image,
                                                  *pcln, captures, function_abi(target, true).name,
                                                  static_cast<int>(plan.probes.size()),
                                                  static_cast<size_t>(spec.options.max_functions),
                                                  plan.warnings))
        plan.probes.push_back(std::move(probe));
    } catch (const UserError &e) {
      if (!expanded.from_wildcard)
        errors.push_back(e);
      else
        plan.warnings.push_back(fmt::format("{} (matched by {}): inlined copies left out: {} [{}]", function,
                                            expanded.pattern, e.what(), e.id));
    }
  }
  for (const ProbeSpec &probe_spec : spec.probes) {
    if (probe_spec.line <= 0)
      continue;
    try {
      for (ProbePlan &probe : plan_line_probes(probe_spec, dwarf_path(image), debug, image, pcln, captures,
                                               function_abi(target, true).name,
                                               static_cast<int>(plan.probes.size()),
                                               static_cast<size_t>(spec.options.max_functions), plan.warnings))
        plan.probes.push_back(std::move(probe));
    } catch (const UserError &e) {
      errors.push_back(e);
    }
  }
  if (!errors.empty())
    throw combine_errors(std::move(errors));
  // Go before 1.21: the parent goroutine from a probe on goroutine creation (Plan::Spawn).
  if (plan.gopc_offset && !plan.parent_goid_offset && !plan.probes.empty())
    plan_spawn(plan, version, debug != nullptr, [&](const ProbeSpec &s) { return plan_probe(s, plan.probes.size()); },
               [&](const ProbeSpec &s) { return resolve_signature(s, sources); }, types, SourceLoc{spec.path},
               image, pcln);
  if (!plan.spawn_refused.empty())
    plan.warnings.push_back(fmt::format("{} has no g.parentGoid, and goroutine creation cannot be probed: {}; "
                                        "created_by names where a goroutine was made, not by which [no-spawn-probe]",
                                        plan.target.go_version, plan.spawn_refused));
  // A function named exactly that the compiler also inlined somewhere: the calls there run no code
  // of its own, so its probe never sees them. Said, or the missing calls would look like none.
  // (Reading every inline tree took 0.08 s over cmd/compile's 14k functions; globs are not asked,
  // as hundreds of matches would bury the output in warnings.)
  for (const ProbeSpec &probe : function_spec.probes) {
    if (!pcln || is_function_glob(probe.function) || probe.inlined.value_or(true))
      continue;
    if (!sites)
      sites = pcln->inline_sites();
    auto it = sites->find(probe.function);
    if (it == sites->end())
      continue;
    std::string into;
    for (size_t i = 0; i < it->second.size() && i < 5; ++i)
      into += (i ? ", " : "") + it->second[i];
    if (it->second.size() > 5)
      into += fmt::format(" and {} more", it->second.size() - 5);
    plan.warnings.push_back(fmt::format("{} is also inlined into {}: calls there run no code of its "
                                        "own and are not traced with inlined: false",
                                        probe.function, into));
  }
  bool has_interface = false;
  for (const auto &probe : plan.probes) {
    for (const auto &c : probe.entry.captures)
      has_interface = has_interface || !c.interfaces.empty() || c.assertion;
    if (probe.ret)
      for (const auto &c : probe.ret->captures)
        has_interface = has_interface || !c.interfaces.empty() || c.assertion;
  }
  // The tracer names an interface's dynamic type from the binary's own descriptors, read from the
  // file on demand (runtime/typenames.h): the manifest says only where they are, so it grows with
  // the probes, not with the binary's type table.
  if (has_interface && pcln && pcln->types_start())
    plan.descriptors = DescriptorRange{pcln->types_start(), pcln->types_end()};
  if (plan.probes.empty())
    throw UserError("no-probes",
                    std::any_of(spec.probes.begin(), spec.probes.end(),
                                [](const ProbeSpec &p) { return is_function_glob(p.function); })
                        ? "every function the spec's wildcards matched was left out"
                        : "every probe of the spec was left out",
                    SourceLoc{spec.path},
                    plan.warnings.empty() ? "" : plan.warnings.front());
  // A record its program builds on the stack (codegen: program_view, for a call its when: condition
  // or limits may drop, so that a dropped call costs no reservation) keeps its strings in their own
  // slots: a string area would make it too large for the stack.
  auto stack_built = [&plan](const EventPlan &e) {
    bool gated = e.kind == "entry" && (e.filter || e.events_per_second || plan.total_events_per_second);
    return (gated || e.needs_entry) && !e.holds && e.event_size <= (plan.target.arch == "arm64" ? 160u : 256u);
  };
  // arm64 is left out: its verifier (Linux 6.1 in the VM tests) refuses the span code of a probe
  // with many strings (E2BIG, measured on the random-signature oracle), where each in its own slot loads.
  if (plan.target.arch != "arm64")
    for (ProbePlan &probe : plan.probes) {
      if (!stack_built(probe.entry))
        place_strings(probe.entry, probe.entry.filter_faults | (probe.ret ? probe.ret->return_filter_entry_faults : 0));
      if (probe.ret && !stack_built(*probe.ret))
        place_strings(*probe.ret, probe.ret->filter_faults | probe.ret->return_filter_faults);
    }
  assign_event_ids(plan, SourceLoc{spec.path});
  share_programs(plan);
  return plan;
}

const EventPlan &Plan::event(int id) const {
  const ProbePlan &probe = probe_of_event(id);
  return probe.entry.id == id ? probe.entry : *probe.ret;
}

const ProbePlan &Plan::probe_of_event(int id) const {
  return probes.at(event_probe.at(static_cast<size_t>(id)));
}

size_t Plan::event_count() const {
  size_t n = 0;
  for (const auto &probe : probes)
    n += probe.ret ? 2 : 1;
  return n;
}

std::string dump_plan(const Plan &plan) {
  std::ostringstream out;
  out << fmt::format("target {} build_id={} go={} arch={} ptr_size={}\n", plan.target.path,
                     plan.target.build_id, plan.target.go_version, plan.target.arch,
                     plan.target.ptr_size);
  out << fmt::format("goid *({} + {}) from {}\n", plan.g_register_name, plan.goid_offset,
                     plan.goid_source);
  if (plan.gopc_offset)
    out << fmt::format("ancestry gopc *(g + {}){} from {}\n", plan.gopc_offset,
                       plan.parent_goid_offset ? fmt::format(", parentGoid *(g + {})", plan.parent_goid_offset)
                                               : std::string(", no parentGoid"),
                       plan.ancestry_source);
  else
    out << "ancestry unknown (no DWARF runtime.g, and no table for this Go release)\n";
  if (plan.spawn) {
    out << fmt::format("spawn probe {} ({}): entry at {:#x}, {} RET{}\n", plan.spawn->signature, plan.spawn->abi,
                       plan.spawn->entry.front().vaddr, plan.spawn->returns.size(),
                       plan.spawn->returns.size() == 1 ? "" : "s");
  } else if (!plan.spawn_refused.empty()) {
    out << "spawn probe none: " << plan.spawn_refused << "\n";
  }
  if (plan.has_tls_g)
    out << fmt::format("g in ABI0 code at {}{:+#x} ({})\n", plan.target.arch == "386" ? "GS" : "FS",
                       plan.g_tls_offset, plan.g_tls_source);
  auto read_text = [](const ValueRead &r) {
    std::string text = r.saved >= 0         ? fmt::format("saved[{}]", r.saved)
                       : r.base_field >= 0 ? fmt::format("field[{}]", r.base_field)
                                           : r.base_reg;
    for (const auto &l : r.loads)
      text = fmt::format("*{}({} + {})", l.size, text, l.offset);
    return text;
  };
  for (const auto &probe : plan.probes) {
    out << fmt::format("probe {} {} {} function=[{:#x}, {:#x})\n", probe.id, probe.name, probe.abi,
                       probe.function_entry, probe.function_end);
    if (probe.inlined_into)
      out << fmt::format("  inlined into {} at {}:{} (in {})\n", probe.inlined_into->function,
                         probe.inlined_into->file, probe.inlined_into->line, probe.inlined_into->physical);
    if (probe.line)
      out << fmt::format("  line {}:{} pc={:#x} in {}{}\n", probe.line->file, probe.line->line, probe.line->pc,
                         probe.line->physical, probe.line->inlined ? " (inlined)" : "");
    for (const auto &a : probe.attach)
      out << fmt::format("  attach {} vaddr={:#x} file_offset={:#x} cookie={} ({})\n", a.kind,
                         a.vaddr, a.file_offset, a.cookie, a.note);
    for (const auto &skip : probe.skipped)
      out << "  skipped " << skip << "\n";
    std::vector<const EventPlan *> events = {&probe.entry};
    if (probe.ret)
      events.push_back(&*probe.ret);
    for (const EventPlan *event : events) {
      out << fmt::format("  event {} program={} event_size={}\n", event->kind, event->program,
                         event->event_size);
      if (event->strings_size)
        out << fmt::format("    string area offset={} size={} span={}\n", event->strings_offset, event->strings_size,
                           event->strings_span);
      if (event->min_duration_ns)
        out << fmt::format("    min_duration {}ns\n", event->min_duration_ns);
      if (event->return_filter)
        out << fmt::format("    when_return {}\n", predicate_key(*event->return_filter));
      for (size_t i = 0; i < event->saved.size(); ++i)
        out << fmt::format("    saved[{}] = {}\n", i, read_text(event->saved[i]));
      for (const auto &c : event->captures) {
        out << fmt::format("    capture {} : {} fault_bit={}\n", c.expr, c.go_type, c.fault_bit);
        if (!c.unavailable.empty())
          out << fmt::format("      unavailable: {}\n", c.unavailable);
        if (c.assertion)
          out << fmt::format("      assert {} descriptor={:#x} type word=field[{}]{}\n", c.assertion->type,
                             c.assertion->descriptor, c.assertion->type_field, plan.pie ? " + load bias" : "");
        for (const auto &k : c.contents)
          for (const auto &t : k.types)
            out << fmt::format("      contents '{}' as {} descriptor={:#x}{}: fields [{}, {}){}\n", k.iface, t.name,
                               t.descriptor, plan.pie ? " + load bias" : "", t.first, t.last,
                               t.pointer ? " (through the pointer)" : "");
        for (const auto &f : c.fields) {
          out << fmt::format("      field '{}' {} {} size={} offset={}", f.name, f.kind, f.go_type,
                             f.size, f.offset);
          out << " value=" << read_text(f.value);
          if (f.kind == "string")
            out << fmt::format(" length={} max_len={}", read_text(f.length), f.max_len);
          if (f.in_area)
            out << fmt::format(" in the string area (own slot +{})", f.area_slot);
          if (f.by_walk)
            out << " (written by the map walk)";
          if (f.assert_field >= 0)
            out << fmt::format(" if field[{}] is {:#x}", f.assert_field, f.assert_type);
          if (const auto &w = f.map_walk)
            out << fmt::format(" walk={} pairs={} max_visits={} slots=field[{}]", w->layout, w->pairs,
                               w->max_visits, w->first_slot_field);
          out << "\n";
        }
      }
    }
  }
  for (const auto &program : plan.programs) {
    out << fmt::format("program {} events", program.name);
    for (int id : program.events)
      out << " " << id;
    out << "\n";
  }
  return out.str();
}

} // namespace weave

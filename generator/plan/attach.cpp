#include "plan/attach.h"

#include "gobinary/binary.h"
#include "disasm/disasm.h"

#include <fmt/format.h>

namespace weave {

std::vector<AttachPoint> function_attach_points(const BinaryImage &image, const std::string &function,
                                                uint64_t low_pc, uint64_t high_pc, bool returns,
                                                const SourceLoc &loc) {
  CodeFacts (*analyze)(const std::vector<uint8_t> &, uint64_t) =
      image.arch == Arch::X86_64 ? analyze_x86_64 : image.arch == Arch::Arm64 ? analyze_arm64 : analyze_i386;
  // The decoded body says where the stack-growth check ends (so the entry probe fires once per
  // call) and where every RET is.
  std::vector<uint8_t> code = read_bytes(image, low_pc, high_pc - low_pc);
  CodeFacts facts = analyze(code, low_pc);
  if (!facts.error.empty())
    throw UserError("undecodable-function", fmt::format("{}: {}", function, facts.error), loc);
  std::vector<AttachPoint> points;
  auto add = [&](const std::string &kind, uint64_t vaddr, const std::string &note) {
    auto offset = file_offset(image, vaddr);
    if (!offset)
      throw UserError("bad-address",
                      fmt::format("{} at {:#x} is outside every loadable segment of {}", function, vaddr,
                                  image.path),
                      loc);
    points.push_back({kind, vaddr, *offset, 0, note});
  };
  if (facts.after_stack_check)
    add("entry", *facts.after_stack_check,
        fmt::format("after the stack-growth check (function starts at {:#x}): a call that "
                    "grows its stack re-runs the entry, and this point sees it once",
                    low_pc));
  else
    add("entry", low_pc, "function entry (no stack-growth check: a small leaf)");
  if (returns)
    for (uint64_t ret : facts.returns)
      add("return", ret, "RET");
  return points;
}

void assign_event_ids(Plan &plan, const SourceLoc &spec_loc) {
  // Every event is its own entry in the manifest, and its index there is the probe_id its BPF
  // program writes into the event header (from the attach point's cookie).
  int next_id = 0;
  for (size_t p = 0; p < plan.probes.size(); ++p) {
    ProbePlan &probe = plan.probes[p];
    probe.entry.id = next_id++;
    plan.event_probe.push_back(p);
    if (probe.ret) {
      probe.ret->id = next_id++;
      plan.event_probe.push_back(p);
    }
    size_t entries = 0, returns = 0;
    for (AttachPoint &a : probe.attach)
      a.cookie = a.kind == "entry" ? attach_cookie(probe.entry.id, probe.entry.id, entries++)
                                   : attach_cookie(probe.ret->id, probe.entry.id, returns++);
    if (returns > kMaxPointsPerEvent)
      throw UserError("too-many-returns",
                      fmt::format("{} has {} RET instructions; weave probes at most {} per function",
                                  probe.function, returns, kMaxPointsPerEvent));
  }
  if (next_id > kMaxEvents)
    throw UserError("too-many-events",
                    fmt::format("the spec makes {} events; weave supports at most {}", next_id, kMaxEvents),
                    spec_loc, "narrow the wildcards, or split the spec");
}

uint64_t attach_cookie(int event_id, int pair_id, size_t point) {
  return static_cast<uint64_t>(point) << 48 | static_cast<uint64_t>(pair_id) << 24 | static_cast<uint64_t>(event_id);
}

} // namespace weave

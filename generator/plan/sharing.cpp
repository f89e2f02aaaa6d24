#include "plan/sharing.h"

#include <fmt/format.h>

#include <map>

namespace weave {

namespace {

// The shape of an event's BPF program: everything the generated code depends on, and nothing it
// only mentions in comments (names, Go types, addresses). Equal shapes render equal code, which
// is what lets events share a program. Keep in step with codegen's program view: a value the
// template prints into code must be part of the key.
std::string program_shape(const ProbePlan &probe, const EventPlan &event, bool plan_pie_) {
  std::string key = fmt::format("{} {} pairs={} size={} duration={} stack={}@{} window={} thread={}@{} "
                                "strings={}+{}/{}\n",
                                event.kind, probe.abi, event.pairs_calls, event.event_size, event.duration_offset,
                                event.stack_depth, event.stack_offset, event.stack_window, event.thread_window,
                                event.thread_offset, event.strings_offset, event.strings_size, event.strings_span);
  auto read_key = [&key](const ValueRead &read) {
    key += read.base_field >= 0 ? fmt::format("field{}", read.base_field) : read.base_reg;
    for (const LoadStep &l : read.loads)
      key += fmt::format(" {}:{}{}", l.offset, l.size, l.skip_if_null ? "?" : "");
    key += fmt::format(" /{}", read.size);
  };
  if (event.filter)
    key += fmt::format("when {} faults={:#x}\n", predicate_key(*event.filter), event.filter_faults);
  key += fmt::format("needs_entry={} per_second={}\n", event.needs_entry, event.events_per_second);
  // A probe that holds its calls in flight has a map of its own, which its programs name.
  if (event.holds)
    key += fmt::format("holds probe={} entry={} min={}\n", probe.id, event.holds_entry, event.min_duration_ns);
  if (event.return_filter)
    key += fmt::format("when_return {} faults={:#x} entry_faults={:#x}\n", predicate_key(*event.return_filter),
                       event.return_filter_faults, event.return_filter_entry_faults);
  for (const CapturePlan &c : event.captures) {
    key += fmt::format("capture bit={}\n", c.fault_bit);
    // A type assertion compares with a constant; in a position-independent binary, plus a load bias
    // from the attach point's own address, which the program holds: it is not shared then.
    if (c.assertion)
      key += fmt::format(" assert field={} type={:#x} own={}\n", c.assertion->type_field, c.assertion->descriptor,
                         plan_pie_ ? probe.id : -1);
    if (!c.contents.empty()) // candidate types' descriptors (each field's assert_type), a PIE's bias
      key += fmt::format(" contents own={}\n", plan_pie_ ? probe.id : -1);
    for (const EventField &f : c.fields) {
      key += fmt::format(" {} size={} at={} max={} guard={}>{}{} assert={}:{:#x} opt={} value=", f.kind, f.size,
                         f.offset, f.max_len, f.guard_field, f.guard_index, f.guard_faults ? "!" : "", f.assert_field,
                         f.assert_type, f.optional);
      read_key(f.value);
      if (f.kind == "string") {
        key += " length=";
        read_key(f.length);
      }
      if (f.by_walk)
        key += " by_walk";
      if (f.in_area)
        key += fmt::format(" area@{}", f.area_slot);
      if (const auto &w = f.map_walk)
        key += fmt::format(" walk={} pairs={} visits={} slots={} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
                           w->layout, w->pairs, w->max_visits, w->first_slot_field, w->flags, w->log2_buckets,
                           w->buckets, w->oldbuckets, w->nevacuate, w->bucket_size, w->tophash, w->keys, w->key_size, w->values,
                           w->value_size, w->overflow, w->dir_ptr, w->dir_len, w->writing, w->groups_data,
                           w->groups_mask, w->group_size, w->ctrl, w->slots, w->slot_size, w->slot_key, w->slot_elem);
      key += "\n";
    }
  }
  return key;
}

} // namespace

// Events of the same shape get one program: named after, and declared with the record struct of,
// the first of them.
void share_programs(Plan &plan) {
  std::map<std::string, size_t> by_shape; // shape -> index into plan.programs
  for (ProbePlan &probe : plan.probes) {
    std::vector<EventPlan *> events = {&probe.entry};
    if (probe.ret)
      events.push_back(&*probe.ret);
    for (EventPlan *event : events) {
      auto [it, added] = by_shape.try_emplace(program_shape(probe, *event, plan.pie), plan.programs.size());
      if (added)
        plan.programs.push_back({event->program, event->struct_name, {}});
      ProgramPlan &program = plan.programs[it->second];
      program.events.push_back(event->id);
      event->program = program.name;
      event->struct_name = program.struct_name;
    }
  }
}

} // namespace weave

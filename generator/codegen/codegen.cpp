#include "codegen/codegen.h"

#include "support/resources.h"
#include "plan/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kainjow/mustache.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>

namespace weave {

namespace {

using Data = kainjow::mustache::data;

// StrictContext makes a template that names a variable the view does not have fail loudly instead
// of rendering it as empty text.
class StrictContext : public kainjow::mustache::context<std::string> {
public:
  StrictContext(const Data *data, std::string template_name)
      : kainjow::mustache::context<std::string>(data), template_name_(std::move(template_name)) {}
  const Data *get(const std::string &name) const override {
    const Data *found = kainjow::mustache::context<std::string>::get(name);
    if (!found)
      throw std::logic_error(template_name_ + ": template uses {{" + name + "}}, which the view lacks");
    return found;
  }

private:
  std::string template_name_;
};

std::string render(const std::string &template_name, const Data &view) {
  kainjow::mustache::mustache tmpl(resource(template_name));
  if (!tmpl.is_valid())
    throw std::logic_error(template_name + ": " + tmpl.error_message());
  tmpl.set_custom_escape([](const std::string &s) { return s; }); // C, not HTML
  StrictContext ctx(&view, template_name);
  std::string rendered = tmpl.render(ctx);
  if (!tmpl.is_valid())
    throw std::logic_error(template_name + ": " + tmpl.error_message());
  // Empty sections leave whitespace-only lines behind, so those are dropped, and the templates ask
  // for a blank line explicitly with a line holding only "~".
  std::string out;
  size_t start = 0;
  while (start < rendered.size()) {
    size_t end = rendered.find('\n', start);
    if (end == std::string::npos)
      end = rendered.size();
    std::string_view line(rendered.data() + start, end - start);
    if (line == "~")
      out += "\n";
    else if (line.find_first_not_of(" \t") != std::string_view::npos)
      out.append(line).append("\n");
    start = end + 1;
  }
  return out;
}

// Text placed inside a C comment must not close it.
std::string comment(const std::string &text) { return std::regex_replace(text, std::regex(R"(\*/)"), "* /"); }

std::string hex(uint64_t v) { return fmt::format("{:#x}", v); }

// 5000000 -> "5ms": the largest unit that divides it.
std::string duration_text(uint64_t ns) {
  if (ns && ns % 1'000'000'000 == 0)
    return fmt::format("{}s", ns / 1'000'000'000);
  if (ns && ns % 1'000'000 == 0)
    return fmt::format("{}ms", ns / 1'000'000);
  if (ns && ns % 1'000 == 0)
    return fmt::format("{}us", ns / 1'000);
  return fmt::format("{}ns", ns);
}

std::string conversion(const EventField &f, const std::string &var) {
  static const char *sbits[] = {"", "__s8", "__s16", "", "__s32", "", "", "", "__s64"};
  static const char *ubits[] = {"", "__u8", "__u16", "", "__u32", "", "", "", "__u64"};
  if (f.size != 1 && f.size != 2 && f.size != 4 && f.size != 8)
    throw std::logic_error("field of unexpected size " + std::to_string(f.size));
  // Registers holding sub-word values have unspecified upper bits: truncate to the declared size,
  // then sign- or zero-extend.
  if (f.kind == "int")
    return f.size == 8 ? fmt::format("(__s64){}", var) : fmt::format("(__s64)({}){}", sbits[f.size], var);
  if (f.kind == "bool")
    return fmt::format("(__u8){} != 0", var);
  // Floats travel as their IEEE bits; the tracer reinterprets them.
  return f.size == 8 ? var : fmt::format("({}){}", ubits[f.size], var);
}

// One read per region: the loads a program makes from one base (a register, or a value an earlier
// load gave: the fields of one struct through a pointer, a string's pointer and length, adjacent
// fields) are read with one bpf_probe_read_user over their span and picked apart on the stack
// (templates/region.bpf.c.mustache). On this kernel each helper call costs 60-190 ns before it
// copies a byte (bench/run.sh, step 6), the bytes themselves next to nothing. A region that faults
// is read again value by value, so a fault marks exactly the captures it affects.
struct RegionLoad {
  int64_t offset = 0;
  uint32_t size = 8;
  std::string comment;
  std::string var; // the local the value is picked into
};

struct Region {
  int id = 0;
  std::string base_expr, base_comment;
  int64_t start = 0, end = 0; // bytes [start, end) from the base
  std::vector<RegionLoad> loads;
  bool in_record = false; // read into the record's string area (plan_regions), not onto the stack
};

// A load step of a read that a region serves: the local holding its value, and its fault bit.
struct Picked {
  std::string var, fault;
  int region = 0;
};

struct RegionPlan {
  std::vector<Region> regions;
  std::map<std::pair<const ValueRead *, size_t>, Picked> picked; // (read, load step) -> where
  int64_t buffer_limit = 0; // the largest buffer one read may have on the stack beside the picked values
};

// The BPF stack is 512 bytes: the record when it is built there, one local per picked value (BPF
// has four callee-saved registers, so clang spills most of them), kStackOther for the rest, and one
// region's buffer at a time (each is scoped to its own block) gets what is left, up to kRegionMax
// bytes (beyond that a span is split: two reads cost ~100 ns more than one). Measured on Caddy's
// 11-value request entry: 8 bytes a picked value, the register copy scalarized (only the registers
// read are loaded from ctx), 272 bytes in all with a 96-byte buffer.
constexpr int64_t kRegionMax = 256;
constexpr int64_t kStackOther = 96;
constexpr int64_t kStackMargin = 128;

// A value behind a type assertion is not read through a region either: a region is read before
// its fields' guards are checked, and memory behind another type's data word is not to be read.
bool region_eligible(const EventField &field) {
  return field.kind != "empty" && !field.by_walk && !field.map_walk && field.guard_field < 0 && field.assert_field < 0;
}

bool read_eligible(const ValueRead &read) {
  if (read.saved >= 0 || read.base_field >= 0 || read.base_reg.empty() || read.loads.empty())
    return false;
  for (const LoadStep &step : read.loads)
    if (step.skip_if_null || (step.size != 1 && step.size != 2 && step.size != 4 && step.size != 8) ||
        step.offset % step.size != 0)
      return false;
  return true;
}

// `first_id`: the first region's number in the program (a program has two groups of captures, those
// its when: condition reads and the rest, each with its own regions).
RegionPlan plan_regions(const std::vector<const ValueRead *> &reads, int64_t stack_left, int first_id,
                        int64_t record_buffer) {
  RegionPlan plan;
  // A chain prefix is where a load step's base comes from: the register and the steps before it.
  auto key_of = [](const ValueRead &read, size_t step) {
    std::string key = read.base_reg;
    for (size_t i = 0; i < step; ++i)
      key += fmt::format("|{}:{}", read.loads[i].offset, read.loads[i].size);
    return key;
  };
  struct Want {
    std::string base_comment;
    std::string parent_key; // "" for a register
    int64_t parent_offset = 0;
    uint32_t parent_size = 0;
    std::map<std::pair<int64_t, uint32_t>, std::string> loads; // (offset, size) -> comment
  };
  std::map<std::string, Want> wants; // ordered: deterministic
  size_t load_count = 0;
  for (const ValueRead *read : reads) {
    std::string parent;
    for (size_t i = 0; i < read->loads.size(); ++i) {
      std::string key = key_of(*read, i);
      Want &w = wants[key];
      if (i == 0)
        w.base_comment = comment(read->base_comment);
      else {
        w.parent_key = parent;
        w.parent_offset = read->loads[i - 1].offset;
        w.parent_size = read->loads[i - 1].size;
        w.base_comment = comment(read->loads[i - 1].comment);
      }
      if (w.loads.emplace(std::make_pair(read->loads[i].offset, read->loads[i].size), comment(read->loads[i].comment))
              .second)
        ++load_count;
      parent = key;
    }
  }
  // kStackMargin: what the model above leaves out (clang's own temporaries grow with the number of
  // values picked apart). Without it, a probe with 39 picked values planned to the byte (96 + 312 +
  // a 104-byte buffer) failed clang's 512-byte check; such a probe reads value by value instead.
  int64_t stack_limit = (stack_left - 8 * int64_t(load_count) - kStackMargin) / 8 * 8;
  int64_t limit = std::min<int64_t>(kRegionMax, stack_limit);
  plan.buffer_limit = limit;
  // A record with a string area has room for the buffers there, which the strings' bytes overwrite
  // only after the captures have taken their values: the stack then holds the picked values alone.
  bool in_record = record_buffer >= 16 && stack_limit >= 0;
  if (in_record)
    limit = std::min<int64_t>(kRegionMax, record_buffer / 8 * 8);
  if (limit < 16)
    return plan;
  // Split each base's loads into spans of at most `limit` bytes, 64 values.
  struct Span {
    std::string key;
    int64_t start, end;
    std::vector<std::pair<std::pair<int64_t, uint32_t>, std::string>> loads;
  };
  std::map<std::string, std::vector<Span>> spans;
  for (auto &[key, w] : wants) {
    std::vector<Span> &list = spans[key];
    for (const auto &[at, text] : w.loads) {
      int64_t start = at.first >= 0 ? at.first / 8 * 8 : -((-at.first + 7) / 8 * 8);
      int64_t end = at.first + at.second;
      if (list.empty() || end - list.back().start > limit || list.back().loads.size() == 64)
        list.push_back({key, start, end, {}});
      Span &s = list.back();
      s.end = std::max(s.end, end);
      s.loads.push_back({at, text});
    }
  }
  // A span of one value saves nothing, unless a wider span's base is that value: then it is read
  // here too, so the regions below it have their base. Deepest bases first.
  std::set<std::pair<std::string, std::pair<int64_t, uint32_t>>> needed; // (key, load) some region's base
  std::set<const Span *> kept;
  std::vector<std::string> keys;
  for (const auto &[key, list] : spans)
    keys.push_back(key);
  std::stable_sort(keys.begin(), keys.end(), [](const std::string &a, const std::string &b) {
    return std::count(a.begin(), a.end(), '|') > std::count(b.begin(), b.end(), '|');
  });
  for (const std::string &key : keys)
    for (const Span &s : spans[key]) {
      bool keep = s.loads.size() >= 2;
      for (const auto &l : s.loads)
        keep = keep || needed.count({key, l.first});
      if (!keep)
        continue;
      kept.insert(&s);
      const Want &w = wants[key];
      if (!w.parent_key.empty())
        needed.insert({w.parent_key, {w.parent_offset, w.parent_size}});
    }
  // Emitted shallowest first (a region's base is a value of the one above it), in key order.
  std::stable_sort(keys.begin(), keys.end(), [](const std::string &a, const std::string &b) {
    return std::count(a.begin(), a.end(), '|') < std::count(b.begin(), b.end(), '|');
  });
  std::map<std::pair<std::string, std::pair<int64_t, uint32_t>>, Picked> where;
  for (const std::string &key : keys)
    for (const Span &s : spans[key]) {
      if (!kept.count(&s))
        continue;
      const Want &w = wants[key];
      Region r;
      r.id = first_id + int(plan.regions.size());
      r.start = s.start;
      r.end = s.end;
      r.in_record = in_record;
      r.base_comment = w.base_comment;
      if (w.parent_key.empty())
        r.base_expr = "regs." + key;
      else
        r.base_expr = where.at({w.parent_key, {w.parent_offset, w.parent_size}}).var;
      for (size_t j = 0; j < s.loads.size(); ++j) {
        RegionLoad l;
        l.offset = s.loads[j].first.first;
        l.size = s.loads[j].first.second;
        l.comment = s.loads[j].second;
        l.var = fmt::format("w{}_{}", r.id, j);
        where[{key, s.loads[j].first}] = {l.var, fmt::format("(w{}_faults >> {} & 1)", r.id, j), r.id};
        r.loads.push_back(l);
      }
      plan.regions.push_back(r);
    }
  for (const ValueRead *read : reads)
    for (size_t i = 0; i < read->loads.size(); ++i) {
      auto it = where.find({key_of(*read, i), {read->loads[i].offset, read->loads[i].size}});
      if (it == where.end())
        break; // the rest of the chain is loaded where the capture is read
      plan.picked[{read, i}] = it->second;
    }
  return plan;
}

Data region_view(const Region &r) {
  Data view;
  view.set("id", std::to_string(r.id));
  view.set("count", std::to_string(r.loads.size()));
  view.set("base_comment", r.base_comment);
  view.set("base_expr", r.base_expr);
  view.set("start", std::to_string(r.start));
  view.set("end", std::to_string(r.end));
  view.set("span", std::to_string(r.end - r.start));
  view.set("buf_decl", r.in_record ? std::string("*buf = (__u64 *)e->strings; /* in the string area, which the "
                                                  "strings' bytes overwrite after the captures */")
                                    : fmt::format("buf[{}];", (r.end - r.start + 7) / 8));
  view.set("mask", fmt::format("w{}_faults", r.id));
  Data loads{Data::type::list};
  for (size_t j = 0; j < r.loads.size(); ++j) {
    const RegionLoad &l = r.loads[j];
    Data d;
    d.set("var", l.var);
    d.set("offset", std::to_string(l.offset));
    d.set("at", std::to_string(l.offset - r.start));
    d.set("size", std::to_string(l.size));
    d.set("bit", std::to_string(j));
    d.set("comment", l.comment);
    loads.push_back(d);
  }
  view.set("loads", loads);
  return view;
}

// `field_member` names the record member of a capture's field, for reads that start from one;
// `regions`, where the regions read some of its loads.
Data read_view(const ValueRead &read, bool optional = false,
               const std::function<std::string(int)> &field_member = nullptr, const RegionPlan *regions = nullptr) {
  Data view;
  // Speculative reads fault into `discard`, which marks nothing.
  view.set("fault_var", optional ? "discard" : "fault");
  view.set("base_reg", read.base_reg);
  // capture_at_return reads start from what the entry saved, which the return found in `held`;
  // a map pair's key or value from the address its map's walk stored in the record.
  view.set("base_expr", read.saved >= 0 ? fmt::format("(held ? held->saved[{}] : 0)", read.saved)
                        : read.base_field >= 0 && field_member ? "e->" + field_member(read.base_field)
                                                               : "regs." + read.base_reg);
  view.set("base_comment", comment(read.base_comment));
  Data loads{Data::type::list};
  std::set<int> through;
  for (size_t i = 0; i < read.loads.size(); ++i) {
    const LoadStep &step = read.loads[i];
    Data load;
    const Picked *picked = nullptr;
    if (regions) {
      auto it = regions->picked.find({&read, i});
      if (it != regions->picked.end())
        picked = &it->second;
    }
    load.set("picked", picked != nullptr);
    if (picked) { // the value is the region's local: the capture only takes its fault bit
      load.set("picked_fault", picked->fault);
      load.set("region", std::to_string(picked->region));
      view.set("base_expr", picked->var);
      through.insert(picked->region);
    }
    load.set("offset", std::to_string(step.offset));
    load.set("size", std::to_string(step.size));
    load.set("comment", comment(step.comment));
    load.set("skip_if_null", step.skip_if_null);
    loads.push_back(load);
  }
  if (!through.empty())
    view.set("base_comment", fmt::format("{}; loaded by region{} {}", comment(read.base_comment),
                                         through.size() > 1 ? "s" : "", fmt::join(through, ", ")));
  view.set("loads", loads);
  return view;
}

std::string member_name(size_t capture, size_t field, size_t field_count) {
  return field_count == 1 ? fmt::format("c{}", capture) : fmt::format("c{}_{}", capture, field);
}

// A type assertion's check in C: the capture's dynamic type word (in the record `record`: "e->",
// "held->entry.") is the asserted type's descriptor, at its link-time address plus, in a
// position-independent binary, the load bias the program computed into weave_bias.
std::string assertion_holds_c(const Plan &plan, const CapturePlan &capture, size_t capture_index,
                              const std::string &record) {
  const CapturePlan::Assertion &a = *capture.assertion;
  return fmt::format("{}{} == {:#x}ULL{}", record,
                     member_name(capture_index, static_cast<size_t>(a.type_field), capture.fields.size()),
                     a.descriptor, plan.pie ? " + weave_bias" : "");
}

// The check a field read behind a type word makes (x.(T), or an interface's candidate type under
// contents: true): that word, a field of the same capture, is the type's descriptor.
std::string field_assertion_c(const Plan &plan, const CapturePlan &capture, size_t capture_index,
                              const EventField &field) {
  return fmt::format("e->{} == {:#x}ULL{}",
                     member_name(capture_index, static_cast<size_t>(field.assert_field), capture.fields.size()),
                     field.assert_type, plan.pie ? " + weave_bias" : "");
}

// A predicate ("when:", "when_return:") as C over the event record's members, after its captures
// are read. Integers compare as the signedness of their Go type; strings by their length and then
// their bytes one by one (a literal is never longer than what was copied: plan/predicate.cpp); nil
// as 0 in the pointer, func or interface type word the value's field holds. A when_return value
// of the entry's is read from the held entry record (`held->entry`).
//
// A value whose capture faulted is neither true nor false, so the C says when the condition is
// decided either way: predicate_decided(node, false) is true exactly when the condition is known
// to be false (the call is dropped); a leaf is decided when the captures it reads did not fault;
// an && is false when one side is known false, whatever faulted on the other, an || true when one
// side is known true; so only a fault that decides the result lets the call through, marked.
std::string predicate_compare_c(const PredicateNode &node, const EventPlan &event, const EventPlan *entry);

// A comparison of a value behind a type assertion holds only when the assertion does (Go's
// `v, ok := x.(T); ok && v.F == 1`): another dynamic type, or nil, makes it false, never a fault.
std::string predicate_leaf_c(const Plan &plan, const PredicateNode &node, const EventPlan &event,
                             const EventPlan *entry) {
  std::vector<std::string> holds;
  for (const PredicateOperand *o : {&node.lhs, &node.rhs})
    if (o->kind == PredicateOperand::Kind::Value && o->capture >= 0) {
      const EventPlan &from = o->at_entry ? *entry : event;
      const CapturePlan &capture = from.captures.at(static_cast<size_t>(o->capture));
      if (capture.assertion)
        holds.push_back(assertion_holds_c(plan, capture, static_cast<size_t>(o->capture),
                                          o->at_entry ? "held->entry." : "e->"));
    }
  std::string compare = predicate_compare_c(node, event, entry);
  if (holds.empty())
    return compare;
  return fmt::format("({} && {})", fmt::join(holds, " && "), compare);
}

std::string predicate_compare_c(const PredicateNode &node, const EventPlan &event, const EventPlan *entry) {
  auto member = [&](const PredicateOperand &o) {
    const EventPlan &from = o.at_entry ? *entry : event;
    const CapturePlan &capture = from.captures.at(static_cast<size_t>(o.capture));
    return (o.at_entry ? "held->entry." : "e->") +
           member_name(static_cast<size_t>(o.capture), static_cast<size_t>(o.field), capture.fields.size());
  };
  auto field = [&](const PredicateOperand &o) -> const EventField & {
    const EventPlan &from = o.at_entry ? *entry : event;
    return from.captures.at(static_cast<size_t>(o.capture)).fields.at(static_cast<size_t>(o.field));
  };
  auto literal = [](const PredicateOperand &o, bool is_signed) {
    if (o.kind == PredicateOperand::Kind::Bool)
      return std::string(o.magnitude ? "1" : "0");
    if (o.kind == PredicateOperand::Kind::Nil)
      return std::string("0ULL");
    if (!is_signed)
      return fmt::format("{}ULL", o.magnitude);
    if (o.negative && o.magnitude == (1ULL << 63))
      return std::string("(-9223372036854775807LL - 1)");
    return fmt::format("{}{}LL", o.negative ? "-" : "", o.magnitude);
  };
  // 8 bytes at a time (weave_bpf.h: weave_word says why), the last word masked to the literal's
  // bytes; the data array is a whole number of words, so the last read stays inside it.
  auto bytes_equal = [&](const PredicateOperand &value, const std::string &bytes, bool prefix) {
    std::string m = member(value);
    std::string out = fmt::format("({}_len {} {}", m, prefix ? ">=" : "==", bytes.size());
    for (size_t i = 0; i < bytes.size(); i += 8) {
      size_t n = std::min<size_t>(8, bytes.size() - i);
      uint64_t word = 0;
      for (size_t j = 0; j < n; ++j)
        word |= uint64_t(static_cast<unsigned char>(bytes[i + j])) << (8 * j);
      if (n == 8)
        out += fmt::format(" && weave_word({}_data + {}) == {:#x}ULL", m, i, word);
      else
        out += fmt::format(" && (weave_word({}_data + {}) & {:#x}ULL) == {:#x}ULL", m, i, (1ULL << (8 * n)) - 1, word);
    }
    return out + ")";
  };
  switch (node.kind) {
  case PredicateNode::Kind::Truth:
    return node.lhs.kind == PredicateOperand::Kind::Bool ? literal(node.lhs, false) : "(" + member(node.lhs) + " != 0)";
  case PredicateNode::Kind::StartsWith:
    return bytes_equal(node.lhs, node.rhs.text, true);
  default:
    break;
  }
  if (node.rhs.kind == PredicateOperand::Kind::Nil)
    return fmt::format("({} {} 0)", member(node.lhs), node.op);
  const EventField &f = field(node.lhs);
  if (f.kind == "string") {
    std::string equal = bytes_equal(node.lhs, node.rhs.text, false);
    return node.op == "==" ? equal : "!" + equal;
  }
  bool is_signed = f.kind == "int";
  std::string lhs = is_signed ? "(__s64)" + member(node.lhs) : member(node.lhs);
  std::string rhs = node.rhs.kind == PredicateOperand::Kind::Value
                        ? (is_signed ? "(__s64)" + member(node.rhs) : member(node.rhs))
                        : literal(node.rhs, is_signed);
  return fmt::format("({} {} {})", lhs, node.op, rhs);
}

std::string predicate_decided(const Plan &plan, const PredicateNode &node, bool want, const EventPlan &event,
                              const EventPlan *entry) {
  switch (node.kind) {
  case PredicateNode::Kind::Or:
  case PredicateNode::Kind::And: {
    // && is true when all are, false when one is; || the other way round.
    bool all = (node.kind == PredicateNode::Kind::And) == want;
    std::string out = "(";
    for (size_t i = 0; i < node.children.size(); ++i)
      out += (i ? (all ? " && " : " || ") : "") + predicate_decided(plan, node.children[i], want, event, entry);
    return out + ")";
  }
  case PredicateNode::Kind::Not:
    return predicate_decided(plan, node.children.front(), !want, event, entry);
  default:
    break;
  }
  if (node.kind == PredicateNode::Kind::Truth && node.lhs.kind == PredicateOperand::Kind::Bool)
    return (node.lhs.magnitude != 0) == want ? "1" : "0";
  // The leaf is decided when none of the captures it reads faulted.
  uint64_t bits = 0, entry_bits = 0;
  for (const PredicateOperand *o : {&node.lhs, &node.rhs})
    if (o->kind == PredicateOperand::Kind::Value && o->capture >= 0) {
      const EventPlan &from = o->at_entry ? *entry : event;
      uint64_t bit = 1ULL << from.captures.at(static_cast<size_t>(o->capture)).fault_bit;
      (o->at_entry ? entry_bits : bits) |= bit;
    }
  std::string out = "(";
  if (bits)
    out += fmt::format("!(e->hdr.faults & {:#x}ULL) && ", bits);
  if (entry_bits)
    out += fmt::format("!(held->entry.hdr.faults & {:#x}ULL) && ", entry_bits);
  return out + (want ? "" : "!") + predicate_leaf_c(plan, node, event, entry) + ")";
}

// The comment lines naming one event a program serves: its function, and where it is attached.
Data user_view(const ProbePlan &probe, const EventPlan &event, bool first) {
  Data user;
  user.set("lead", first ? "/*" : " *");
  user.set("id", std::to_string(event.id));
  user.set("kind", event.kind);
  user.set("function", comment(probe.function));
  user.set("abi", probe.abi);
  user.set("function_entry", hex(probe.function_entry));
  Data points{Data::type::list};
  for (const AttachPoint &a : probe.attach) {
    if (a.kind != event.kind)
      continue;
    Data point;
    point.set("vaddr", hex(a.vaddr));
    point.set("file_offset", hex(a.file_offset));
    point.set("cookie", hex(a.cookie));
    point.set("note", comment(a.note));
    points.push_back(point);
  }
  user.set("points", points);
  Data skipped{Data::type::list};
  // A probe's left-out values are listed once, with its entry event.
  if (event.kind == "entry" || !probe.ret)
    for (const auto &skip : probe.skipped)
      skipped.push_back(Data(comment(skip)));
  user.set("skipped", skipped);
  return user;
}

// The largest record a program builds on its stack: with the copy of the registers (168 bytes on
// x86, 272 on arm64) and the locals of the reads, it stays within BPF's 512 bytes (clang refuses
// more at compile time).
uint32_t max_stack_event(const Plan &plan) { return plan.target.arch == "arm64" ? 160 : 256; }

// A call its when: condition, its limits or a missing entry may drop is built on the BPF stack
// and copied into the ring buffer only once it passes: a dropped call then costs no ring buffer
// reservation (bench/run.sh, step 6: ~120 ns here) and, for an entry that pairs nothing, no clock
// read either (another ~120 ns). Only records that fit beside the register copy (512 bytes of
// stack in all) are built so; larger ones are reserved first and discarded when dropped.
// min_duration and capture_at_return: the probe holds its calls in flight in a map of its own,
// and its records are reserved in the ring buffer (program_view).
bool builds_on_stack(const Plan &plan, const EventPlan &event) {
  bool limited = event.kind == "entry" && (event.events_per_second || plan.total_events_per_second);
  bool gated = event.filter || limited;
  return (gated || event.needs_entry) && event.event_size <= max_stack_event(plan) && !event.holds;
}

// The largest per-CPU map value the kernel allocates (PCPU_MIN_UNIT_SIZE): a scratch record and
// its busy word must fit.
constexpr uint32_t kScratchValueMax = 32768;

// A record with a string area (which ends it) is built in a per-CPU scratch record and sent with
// only its used bytes (weave_bpf.h: weave_scratch_begin, weave_scratch_emit): the ring then holds
// as many events as their data allows instead of as many as string_max allows. Not for records
// built on the stack (sent whole, and small), nor for those a probe holds in a map until the
// call returns (min_duration, capture_at_return: built in a reservation, copied whole).
// The bytes a scratch record must have for its send to verify: the verifier may know the used
// count only as below the area's next power of two (clang's code for the clamp can lose the
// exact bound: seen on the random-signature oracle), so the record is padded to cover that too.
uint64_t scratch_bytes(const EventPlan &event) {
  uint64_t pow2 = 1;
  while (pow2 <= event.strings_size)
    pow2 <<= 1;
  uint64_t bytes = std::max<uint64_t>(event.event_size, uint64_t{event.strings_offset} + 8 + pow2 - 1);
  return (bytes + 7) / 8 * 8;
}

bool builds_in_scratch(const Plan &plan, const EventPlan &event) {
  return event.strings_size && !builds_on_stack(plan, event) && !event.holds &&
         scratch_bytes(event) + 8 <= kScratchValueMax;
}

// The code of a program and the layout of its record, from the first event it serves (every
// other one has the same shape: plan.cpp, program_shape).
Data program_view(const Plan &plan, const ProgramPlan &program) {
  const ProbePlan &probe = plan.probe_of_event(program.events.front());
  const EventPlan *event = &plan.event(program.events.front());
  Data ev;
  ev.set("program", program.name);
  ev.set("struct_name", program.struct_name);
  ev.set("kind", event->kind);
  ev.set("kind_enum", event->kind == "entry" ? "WEAVE_EVENT_ENTRY" : "WEAVE_EVENT_RETURN");
  ev.set("event_size", std::to_string(event->event_size));
  Data users{Data::type::list};
  for (int id : program.events)
    users.push_back(user_view(plan.probe_of_event(id), plan.event(id), users.is_empty_list()));
  ev.set("users", users);
  ev.set("shared", program.events.size() > 1);
  ev.set("user_count", std::to_string(program.events.size()));
  ev.set("first_function", comment(probe.function));
  ev.set("first_id", std::to_string(event->id));
  ev.set("others", std::to_string(program.events.size() - 1));
  // g: in its register in ABIInternal code, else in thread-local storage (FS on amd64, GS on 386).
  bool g_in_register = probe.abi == "ABIInternal";
  ev.set("read_goid", g_in_register || plan.has_tls_g);
  bool gs = plan.target.arch == "386";
  ev.set("g_expr", g_in_register ? "regs." + plan.g_register
                                 : fmt::format("{}({})", gs ? "weave_tls_g_386" : "weave_tls_g", plan.g_tls_offset));
  ev.set("g_comment", g_in_register ? fmt::format("g is in {} in ABIInternal code", plan.g_register_name)
                                    : fmt::format("ABI0 code: g is at {} base {} ({})", gs ? "GS" : "FS",
                                                  plan.g_tls_offset, comment(plan.g_tls_source)));
  // With "when:" or limits, the call is remembered for its return only once it has passed them.
  bool limited = event->kind == "entry" && (event->events_per_second || plan.total_events_per_second);
  bool gated = event->filter || limited;
  // Where the record is built: on the stack, in a per-CPU scratch record, or in a ring buffer
  // reservation (builds_on_stack, builds_in_scratch).
  const bool holds = event->holds, is_entry = event->kind == "entry";
  const bool min = event->min_duration_ns > 0;
  const bool keeps_entry = event->holds_entry; // min_duration or when_return: the entry record is held
  bool on_stack = builds_on_stack(plan, *event);
  bool scratch = builds_in_scratch(plan, *event);
  bool late_clock = on_stack && event->filter && event->kind == "entry" && !event->pairs_calls;
  ev.set("on_stack", on_stack);
  ev.set("in_ring", !on_stack && !scratch);
  ev.set("in_scratch", scratch);
  ev.set("early_clock", on_stack ? (late_clock ? "0" : "1") : "");
  ev.set("late_clock", late_clock);
  ev.set("drop", on_stack ? "weave_skip" : scratch ? "weave_scratch_drop" : "weave_drop");
  ev.set("drop_limited", on_stack  ? "weave_skip_limited"
                         : scratch ? "weave_scratch_drop_limited"
                                   : "weave_drop_limited");
  // Built on the stack, an entry reads what its condition needs, decides, and only then the rest:
  // goroutine id, stack and the other captures cost nothing on a call it drops.
  bool defer_reads = on_stack && event->kind == "entry";
  ev.set("goid_late", defer_reads);
  ev.set("stack_early", event->stack_depth > 0 && !defer_reads);
  ev.set("stack_late", event->stack_depth > 0 && defer_reads);
  ev.set("needs_entry_early", event->needs_entry && on_stack);
  ev.set("needs_entry_late", event->needs_entry && !on_stack);
  ev.set("pair_entry", event->pairs_calls && is_entry && !gated && !holds);
  ev.set("pair_entry_late", event->pairs_calls && is_entry && gated && !holds);
  const std::string held = fmt::format("probe_{}_held", probe.id);
  ev.set("held_struct", held);
  ev.set("held_map", held);
  ev.set("holds_entry", keeps_entry);
  Data held_decl{Data::type::list}, held_setup{Data::type::list};
  if (holds && is_entry) {
    Data d;
    d.set("probe_id", std::to_string(probe.id));
    std::vector<std::string> why;
    if (min)
      why.push_back(fmt::format("min_duration: {}", duration_text(event->min_duration_ns)));
    if (!probe.ret->return_filter_text.empty())
      why.push_back("when_return");
    if (!event->saved.empty() || why.empty())
      why.push_back("capture_at_return");
    std::string why_text;
    for (const std::string &w : why)
      why_text += (why_text.empty() ? "" : ", ") + w;
    d.set("why", why_text);
    d.set("held_struct", held);
    d.set("held_map", held);
    d.set("has_saved", !event->saved.empty());
    d.set("saved_count", std::to_string(event->saved.size()));
    d.set("entry_struct", event->struct_name);
    // Bounded memory: up to 16 MiB of held values, and between 1,024 and 65,536 calls in flight;
    // allocated as calls come (BPF_F_NO_PREALLOC), so a glob of many such probes costs what is held.
    uint64_t value_size = 8 + 8 * event->saved.size() + (keeps_entry ? event->event_size : 0);
    d.set("max_entries", std::to_string(std::clamp<uint64_t>((16u << 20) / value_size, 1024, 65536)));
    held_decl.push_back(d);
    // The value is built where no other run of the program can write (a uprobe program can be
    // preempted, so a per-CPU scratch value could be overwritten halfway): with min_duration in a
    // ring buffer reservation of the whole value, the entry record first, discarded once a copy is
    // held; otherwise (a timestamp and a few pointers) on the stack.
    held_setup.push_back(Data(keeps_entry ? fmt::format("struct {} *held = (struct {} *)e; /* the entry record is its start */", held, held)
                                  : fmt::format("struct {} held_value = {{}}, *held = &held_value;", held)));
  }
  ev.set("held_decl", held_decl);
  ev.set("held_setup", held_setup);
  ev.set("reserve_size", holds && keeps_entry && is_entry ? "struct " + held : "*e");
  ev.set("take", holds && !is_entry);
  Data at_return_faults{Data::type::list};
  if (event->at_return_faults)
    at_return_faults.push_back(Data(hex(event->at_return_faults) + "ULL"));
  ev.set("at_return_faults", at_return_faults);
  ev.set("release", holds && !is_entry && !keeps_entry);
  ev.set("hold", holds && is_entry);
  Data saves{Data::type::list};
  for (size_t i = 0; i < event->saved.size(); ++i) {
    Data sv = read_view(event->saved[i]);
    sv.set("index", std::to_string(i));
    sv.set("comment", comment(event->saved[i].base_comment));
    saves.push_back(sv);
  }
  ev.set("saves", saves);
  ev.set("counted", keeps_entry ? "1" : "0");
  ev.set("emit_pair", holds && keeps_entry && !is_entry);
  // What the return decides before it emits the held entry and itself: the duration, the results.
  Data keep_checks{Data::type::list};
  if (min) {
    Data check;
    check.set("what", fmt::format("min_duration: {}", duration_text(event->min_duration_ns)));
    check.set("c_false", fmt::format("e->duration_ns < {}ULL", event->min_duration_ns));
    keep_checks.push_back(check);
  }
  if (event->return_filter) {
    Data check;
    check.set("what", "when_return: " + comment(event->return_filter_text));
    check.set("c_false", predicate_decided(plan, *event->return_filter, false, *event, &probe.entry));
    keep_checks.push_back(check);
  }
  ev.set("keep_checks", keep_checks);
  ev.set("submit", !on_stack && !scratch && !(holds && keeps_entry));
  Data emits{Data::type::list};
  if (scratch) {
    Data emit;
    emit.set("fixed", std::to_string(event->strings_offset + 8));
    emit.set("size", std::to_string(event->strings_size));
    emits.push_back(emit);
  }
  ev.set("emit", emits);
  Data limits{Data::type::list};
  if (limited) {
    std::vector<std::string> checks, what;
    if (event->events_per_second) {
      checks.push_back(fmt::format("weave_over_rate(e->hdr.probe_id, e->hdr.ts_ns, {})", event->events_per_second));
      what.push_back(fmt::format("{} calls a second of this probe", event->events_per_second));
    }
    if (plan.total_events_per_second) {
      checks.push_back(fmt::format("weave_over_rate(WEAVE_PROBE_COUNT, e->hdr.ts_ns, {})", plan.total_events_per_second));
      what.push_back(fmt::format("{} a second of all probes together", plan.total_events_per_second));
    }
    Data limit;
    limit.set("checks", fmt::format("{}", fmt::join(checks, " || ")));
    limit.set("what", fmt::format("{}", fmt::join(what, ", then ")));
    limits.push_back(limit);
  }
  ev.set("limit", limits);
  ev.set("needs_entry", event->needs_entry);
  if (event->filter) {
    Data filter;
    filter.set("text", comment(event->filter_text));
    filter.set("faults", hex(event->filter_faults));
    filter.set("c_false", predicate_decided(plan, *event->filter, false, *event, nullptr));
    Data filters{Data::type::list};
    filters.push_back(filter);
    ev.set("filter", filters);
  } else {
    ev.set("filter", Data{Data::type::list});
  }
  // A type assertion compares a type word with a descriptor's address, which a position-
  // independent binary has moved by its load bias: the probe's address less the attach point's.
  // (Such events have a program of their own: plan/sharing.cpp.)
  Data bias{Data::type::list};
  {
    auto asserts = [](const EventPlan &e) {
      return std::any_of(e.captures.begin(), e.captures.end(), [](const CapturePlan &c) {
        return c.assertion.has_value() || !c.contents.empty();
      });
    };
    std::vector<uint64_t> points;
    for (const AttachPoint &a : probe.attach)
      if (a.kind == event->kind)
        points.push_back(a.vaddr);
    if (plan.pie && (asserts(*event) || (event->kind == "return" && asserts(probe.entry))) && !points.empty()) {
      if (points.size() == 1) {
        bias.push_back(Data(fmt::format("const __u64 weave_bias = regs.{} - {:#x}ULL; /* where the process loaded "
                                        "this position-independent binary */",
                                        plan.ip_register, points.front())));
      } else if (uint64_t span = *std::max_element(points.begin(), points.end()) - points.front();
                 span < 4096 && std::is_sorted(points.begin(), points.end())) {
        // The bias is a whole number of pages (the kernel maps the file page by page), so the
        // point that fired is the one at the same offset within a page as the probe's address:
        // with every point less than a page after the first, that offset names it.
        bias.push_back(Data(fmt::format("const __u64 weave_at = {:#x}ULL + ((regs.{} - {:#x}ULL) & 4095); /* the attach "
                                        "point that fired (they lie within {} bytes) */",
                                        points.front(), plan.ip_register, points.front(), span)));
        bias.push_back(Data(fmt::format("const __u64 weave_bias = regs.{} - weave_at; /* where the process loaded this "
                                        "position-independent binary */",
                                        plan.ip_register)));
      } else {
        // By the attach point's index in the cookie, one comparison each (no table in .rodata).
        bias.push_back(Data(std::string("const __u16 weave_point = WEAVE_COOKIE_POINT(cookie);")));
        bias.push_back(Data(std::string("__u64 weave_at = 0;")));
        for (size_t i = 0; i < points.size(); ++i)
          bias.push_back(Data(fmt::format("if (weave_point == {}) weave_at = {:#x}ULL;", i, points[i])));
        bias.push_back(Data(fmt::format("const __u64 weave_bias = weave_at ? regs.{} - weave_at : 0; /* where the "
                                        "process loaded this position-independent binary */",
                                        plan.ip_register)));
      }
    }
  }
  ev.set("bias", bias);
  ev.set("pair_return", event->pairs_calls && event->kind == "return" && !holds);
  ev.set("sp_reg", plan.sp_register);
  ev.set("ip_reg", plan.ip_register);
  ev.set("ptr_size", std::to_string(plan.target.ptr_size));
  ev.set("ctx_type", plan.ctx_type);
  ev.set("goid_offset", std::to_string(plan.goid_offset));
  ev.set("goid_source", comment(plan.goid_source));
  // Ancestry: parentGoid and gopc are adjacent where both exist (Go 1.21+), one read of both.
  bool pair = plan.gopc_offset && plan.parent_goid_offset &&
              plan.parent_goid_offset + 8 == plan.gopc_offset;
  ev.set("ancestry_pair", pair);
  ev.set("gopc_only", plan.gopc_offset && !pair);
  ev.set("parent_goid_offset", std::to_string(plan.parent_goid_offset));
  ev.set("gopc_offset", std::to_string(plan.gopc_offset));
  ev.set("ancestry_size", std::to_string(8 + plan.target.ptr_size));
  ev.set("ancestry_source", comment(plan.ancestry_source));
  ev.set("spawn_lookup", plan.spawn.has_value() && plan.gopc_offset && !pair);
  Data captures{Data::type::list}, late_captures{Data::type::list};
  Data members{Data::type::list};
  if (event->duration_offset) {
    Data m;
    m.set("decl", "__u64 duration_ns");
    m.set("name", "duration_ns");
    m.set("offset", std::to_string(event->duration_offset));
    m.set("comment", "since the paired entry; 0 when the entry was not seen");
    members.push_back(m);
  }
  ev.set("stack_depth", std::to_string(event->stack_depth));
  ev.set("stack_window", event->stack_window > 0);
  // The window ends at the end of g's stack (g.stack.hi), where there is a g to read it from.
  const char *stack_g = g_in_register || plan.has_tls_g ? "g" : "0";
  if (event->stack_window)
    ev.set("stack_call", (plan.target.arch == "arm64"
                              ? fmt::format("weave_stack_copy(&e->stack_window, e->stack_bytes, {}, regs.pc, regs.sp, "
                                            "regs.regs[29], regs.regs[30], {}, {})",
                                            event->stack_window, stack_g, plan.target.ptr_size)
                              : fmt::format("weave_stack_copy(&e->stack_window, e->stack_bytes, {}, regs.ip, regs.sp, "
                                            "regs.bp, 0, {}, {})",
                                            event->stack_window, stack_g, plan.target.ptr_size)) +
                             (event->thread_window
                                  ? fmt::format(";\n\t/* and the other stack ({}): on a goroutine the thread's own, where "
                                                "runtime.cgocallback left it (m.g0.sched.sp), for the C frames of a "
                                                "callback; on g0 the goroutine's, where systemstack left it "
                                                "(m.curg.sched) */\n\t"
                                                "weave_thread_stack_copy(&e->thread_window, e->thread_bytes, {}, g, "
                                                "{}, {}, {}, {}, {}, {})",
                                                comment(plan.thread_sp_source), event->thread_window, plan.g_m_offset,
                                                plan.m_g0_offset, plan.m_curg_offset, plan.g_sched_sp_offset,
                                                plan.g_sched_pc_offset, plan.target.ptr_size)
                                  : std::string()));
  else
    ev.set("stack_call", plan.target.arch == "arm64"
                             ? fmt::format("weave_walk_frames(e->stack, {}, regs.regs[30], regs.regs[29])",
                                           event->stack_depth)
                             : fmt::format("weave_stack_x86_64(e->stack, {}, regs.sp, regs.bp)", event->stack_depth));
  // Each group of captures (those the when: condition reads, read before it; the rest, after) has
  // regions of its own, so a call the condition drops reads nothing it does not need.
  auto late_group = [&](const CapturePlan &capture) {
    return defer_reads && !(event->filter_faults & (uint64_t{1} << capture.fault_bit));
  };
  RegionPlan group_regions[2];
  {
    int64_t stack_left = 512 - (on_stack ? event->event_size : 0) -
                         (holds && is_entry && !min ? 8 + 8 * int64_t(event->saved.size()) : 0) - kStackOther;
    int first_id = 0;
    for (int late = 0; late < 2; ++late) {
      std::vector<const ValueRead *> reads;
      for (const CapturePlan &capture : event->captures) {
        if (late_group(capture) != bool(late))
          continue;
        for (const EventField &field : capture.fields) {
          if (!region_eligible(field))
            continue;
          if (read_eligible(field.value))
            reads.push_back(&field.value);
          if (field.kind == "string" && read_eligible(field.length))
            reads.push_back(&field.length);
        }
      }
      group_regions[late] =
          plan_regions(reads, stack_left, first_id, on_stack || late ? 0 : int64_t(event->strings_size));
      first_id += int(group_regions[late].regions.size());
    }
  }
  // The goroutine id and the ancestry pair lie within a few hundred bytes of each other in g (Go
  // 1.26: +152 and +280): one read of the span costs one helper call instead of two (a helper call
  // costs ~50-120 ns here before it copies a byte, bench/run.sh step 6). The span is read into the
  // record where the captures' slots will be (a record in the ring buffer that has the room: they
  // are written after it), else into a buffer on the stack that takes no more than a region's may
  // (plan_regions; it is scoped before theirs). Not for a record built on the stack, nor where a
  // pointer is 4 bytes.
  int64_t g_span = int64_t(plan.parent_goid_offset) + 16 - int64_t(plan.goid_offset);
  bool span_g = pair && !on_stack && plan.target.ptr_size == 8 && plan.parent_goid_offset > plan.goid_offset &&
                (plan.parent_goid_offset - plan.goid_offset) % 8 == 0 && plan.goid_offset % 8 == 0 &&
                g_span <= kRegionMax;
  bool g_in_record = span_g && int64_t(event->event_size) >= int64_t(plan.header_size) + g_span;
  span_g = span_g && (g_in_record || g_span <= std::min(group_regions[0].buffer_limit, group_regions[1].buffer_limit));
  ev.set("g_span", span_g);
  if (span_g) {
    ev.set("g_span_size", std::to_string(g_span));
    ev.set("g_buf_decl", g_in_record ? fmt::format("__u64 *gbuf = (__u64 *)((char *)e + {}); /* the captures' slots, "
                                                   "written below */",
                                                   plan.header_size)
                                     : fmt::format("__u64 gbuf[{}];", g_span / 8));
    ev.set("g_span_end", std::to_string(plan.goid_offset + g_span));
    ev.set("g_parent_word", std::to_string((plan.parent_goid_offset - plan.goid_offset) / 8));
    ev.set("g_gopc_word", std::to_string((plan.parent_goid_offset - plan.goid_offset) / 8 + 1));
  }
  for (int late = 0; late < 2; ++late) {
    Data list{Data::type::list};
    for (const Region &r : group_regions[late].regions)
      list.push_back(region_view(r));
    ev.set(late ? "late_regions" : "regions", list);
  }
  Data area_strings{Data::type::list}, late_area_strings{Data::type::list}; // in_area strings, by group
  for (size_t c = 0; c < event->captures.size(); ++c) {
    const CapturePlan &capture = event->captures[c];
    const RegionPlan *regions = &group_regions[late_group(capture) ? 1 : 0];
    Data cv;
    cv.set("fault_bit", std::to_string(capture.fault_bit));
    cv.set("expr", comment(capture.expr));
    cv.set("go_type", comment(capture.go_type));
    Data fields{Data::type::list};
    // Fault bookkeeping only where something can fault: a load through memory, a string's bytes,
    // or an index past a slice's length. A capture of registers alone, or of a zero-size value,
    // needs none.
    bool reads = false, may_fault = false;
    for (const EventField &field : capture.fields) {
      if (field.kind == "empty" || field.by_walk)
        continue;
      reads = true;
      may_fault = may_fault || field.kind == "string" || !field.value.loads.empty() || field.guard_faults ||
                  field.map_walk;
    }
    cv.set("reads", reads);
    cv.set("may_fault", may_fault);
    for (size_t f = 0; f < capture.fields.size(); ++f) {
      const EventField &field = capture.fields[f];
      if (field.kind == "empty") // nothing to read, no slot in the record
        continue;
      std::string member = member_name(c, f, capture.fields.size());
      std::string label = comment(capture.expr + (field.name.empty() ? "" : " ." + field.name));
      auto field_member = [&](int index) {
        return member_name(c, static_cast<size_t>(index), capture.fields.size());
      };
      if (field.by_walk) { // a map pair's address: the walk writes it, nothing reads it here
        Data m;
        m.set("decl", "__u64 " + member);
        m.set("name", member);
        m.set("offset", std::to_string(field.offset));
        m.set("comment", label + " (written by the map walk)");
        members.push_back(m);
        continue;
      }
      Data fv;
      fv.set("label", label);
      fv.set("value", read_view(field.value, field.optional, field_member, regions));
      fv.set("is_map_walk", field.map_walk.has_value());
      if (field.map_walk) {
        const MapWalk &w = *field.map_walk;
        const EventField &first_slot = capture.fields.at(static_cast<size_t>(w.first_slot_field));
        std::string head = fmt::format("(__u64 *)&e->{}, (__u64 *)((char *)e + {}), {}, {}, v, {}", member,
                                       first_slot.offset, w.pairs, w.max_visits, plan.target.ptr_size);
        if (w.layout == "hmap") {
          fv.set("walk_comment",
                 fmt::format("the first {} pairs, bucket by bucket (old buckets first while the map grows), "
                             "at most {} buckets read",
                             w.pairs, w.max_visits));
          fv.set("walk_call",
                 fmt::format("weave_map_hmap({},\n\t\t\t\t{}, {}, {}, {}, {}, /* hmap flags, B, buckets, oldbuckets, "
                             "nevacuate */"
                             "\n\t\t\t\t{}, {}, {}, {}, {}, {}, {}) /* bucket size, tophash, keys, key size, "
                             "values, value size, overflow */",
                             head, w.flags, w.log2_buckets, w.buckets, w.oldbuckets, w.nevacuate, w.bucket_size, w.tophash,
                             w.keys, w.key_size, w.values, w.value_size, w.overflow));
        } else {
          fv.set("walk_comment",
                 fmt::format("the first {} pairs, group by group, table by table, at most {} groups read",
                             w.pairs, w.max_visits));
          fv.set("walk_call",
                 fmt::format("weave_map_swiss({},\n\t\t\t\t{}, {}, {}, /* Map dirPtr, dirLen, writing */"
                             "\n\t\t\t\t{}, {}, /* table groups.data, groups.lengthMask */"
                             "\n\t\t\t\t{}, {}, {}, {}, {}, {}) /* group size, ctrl, slots, slot size, "
                             "key, elem */",
                             head, w.dir_ptr, w.dir_len, w.writing, w.groups_data, w.groups_mask, w.group_size,
                             w.ctrl, w.slots, w.slot_size, w.slot_key, w.slot_elem));
        }
      }
      // A slice element is read only when the slice is long enough to have it; a value behind a
      // type assertion only when the interface holds the asserted type.
      std::vector<std::string> guards;
      if (field.guard_field >= 0)
        guards.push_back(fmt::format("e->{} > {}",
                                     member_name(c, static_cast<size_t>(field.guard_field), capture.fields.size()),
                                     field.guard_index));
      if (field.assert_field >= 0)
        guards.push_back(field_assertion_c(plan, capture, c, field));
      fv.set("guarded", !guards.empty());
      fv.set("guard_faults", field.guard_faults);
      fv.set("guard", fmt::format("{}", fmt::join(guards, " && ")));
      // Past the slice's length is a fault; another dynamic type is not.
      fv.set("fault_guard", guards.size() > 1 ? "if (!(" + guards.front() + "))\n\t\t\t" : "");
      bool is_string = field.kind == "string";
      fv.set("is_string", is_string);
      fv.set("is_scalar", !is_string && !field.map_walk);
      if (is_string) {
        fv.set("length", read_view(field.length, field.optional, field_member, regions));
        fv.set("fault_var", field.optional ? "discard" : "fault");
        fv.set("len_member", member + "_len");
        fv.set("data_member", member + "_data");
        fv.set("at_member", member + "_at");
        fv.set("in_area", field.in_area);
        fv.set("max_len", std::to_string(field.max_len));
        Data len_m, data_m;
        len_m.set("decl", "__u64 " + member + "_len");
        len_m.set("name", member + "_len");
        len_m.set("offset", std::to_string(field.offset));
        len_m.set("comment", label + ": length (" + comment(field.go_type) + ")");
        if (field.in_area) {
          data_m.set("decl", "__u64 " + member + "_at");
          data_m.set("name", member + "_at");
          data_m.set("offset", std::to_string(field.offset + 8));
          data_m.set("comment", fmt::format("{}: where its first {} bytes are in `strings` (its data pointer "
                                            "until they are read)",
                                            label, field.max_len));
          Data sv;
          sv.set("label", label);
          sv.set("at_member", member + "_at");
          sv.set("len_member", member + "_len");
          sv.set("max_len", std::to_string(field.max_len));
          sv.set("slot", std::to_string(field.area_slot));
          sv.set("fault_bit", std::to_string(capture.fault_bit));
          Data &group = late_group(capture) ? late_area_strings : area_strings;
          sv.set("index", std::to_string(group.is_empty_list() ? 0 : group.list_value().size()));
          group.push_back(sv);
        } else {
          data_m.set("decl", fmt::format("char {}_data[{}]", member, (field.max_len + 7) / 8 * 8));
          data_m.set("name", member + "_data");
          data_m.set("offset", std::to_string(field.offset + 8));
          data_m.set("comment", fmt::format("{}: first {} bytes", label, field.max_len));
        }
        members.push_back(len_m);
        members.push_back(data_m);
      } else {
        fv.set("member", member);
        fv.set("conversion", conversion(field, "v"));
        Data m;
        m.set("decl", (field.kind == "int" ? "__s64 " : "__u64 ") + member);
        m.set("name", member);
        m.set("offset", std::to_string(field.offset));
        m.set("comment", label + " (" + comment(field.go_type) + ")");
        members.push_back(m);
      }
      fields.push_back(fv);
    }
    cv.set("fields", fields);
    (late_group(capture) ? late_captures : captures).push_back(cv);
  }
  ev.set("captures", captures);
  ev.set("late_captures", late_captures);
  // The string area (plan/captures.cpp: place_strings): its strings' bytes are read after the
  // captures of their group. Never in a record built on the stack (plan.cpp keeps those out): the
  // verifier would track the span's bounds through it, and the branches of the joins would multiply.
  if (event->strings_size && on_stack)
    throw std::logic_error(program.name + ": a string area in a record built on the stack");
  for (int late = 0; late < 2; ++late) {
    Data list{Data::type::list};
    Data &group = late ? late_area_strings : area_strings;
    if (!group.is_empty_list()) {
      Data sv;
      sv.set("strings", group);
      sv.set("size", std::to_string(event->strings_size));
      sv.set("span_size", std::to_string(event->strings_span));
      list.push_back(sv);
    }
    ev.set(late ? "late_string_area" : "string_area", list);
  }
  if (event->stack_window) {
    // A window: its header (registers, bytes read) at `offset`, then `size` bytes of stack.
    auto window = [&members](const std::string &name, const std::string &bytes, uint32_t offset, uint32_t size,
                             const char *header_comment, const char *bytes_comment) {
      Data m;
      m.set("decl", "struct weave_stack_window " + name);
      m.set("name", name);
      m.set("offset", std::to_string(offset));
      m.set("comment", header_comment);
      members.push_back(m);
      Data b;
      b.set("decl", fmt::format("__u8 {}[{}]", bytes, size));
      b.set("name", bytes);
      b.set("offset", std::to_string(offset + kStackWindowHeader));
      b.set("comment", bytes_comment);
      members.push_back(b);
    };
    window("stack_window", "stack_bytes", event->stack_offset, event->stack_window,
           "the registers at the probe, and how much of the stack follows",
           "the stack from SP, for the tracer to unwind with .gopclntab");
    if (event->thread_window)
      window("thread_window", "thread_bytes", event->thread_offset, event->thread_window,
             "the thread's stack pointer saved by runtime.cgocallback, and how much follows",
             "the thread's stack from there, for the C frames below a callback");
  } else if (event->stack_depth) {
    Data m;
    m.set("decl", fmt::format("__u64 stack[{}]", event->stack_depth));
    m.set("name", "stack");
    m.set("offset", std::to_string(event->stack_offset));
    m.set("comment", "return addresses, innermost caller first, 0-terminated");
    members.push_back(m);
  }
  if (event->strings_size) {
    Data used, area;
    used.set("decl", "__u64 strings_len");
    used.set("name", "strings_len");
    used.set("offset", std::to_string(event->strings_offset));
    used.set("comment", "bytes of `strings` used: the span read, or all of them when read string by string");
    area.set("decl", fmt::format("char strings[{}]", event->strings_size));
    area.set("name", "strings");
    area.set("offset", std::to_string(event->strings_offset + 8));
    area.set("comment", "the bytes of the strings whose slots say where theirs are");
    members.push_back(used);
    members.push_back(area);
  }
  ev.set("members", members);
  return ev;
}

// The C that reads a spawn probe's word (Plan::Spawn) into `var`: a register, or a chain of loads
// from one (a stack slot in ABI0 code). A fault leaves 0, which the programs treat as not known.
std::string spawn_read_c(const ValueRead &read, const std::string &var) {
  std::string c = fmt::format("__u64 {} = regs.{}; /* {} */\n", var, read.base_reg, comment(read.base_comment));
  if (read.loads.empty() && read.size < 8)
    c += fmt::format("\t{} &= {:#x}ULL;\n", var, (uint64_t{1} << (8 * read.size)) - 1);
  for (const LoadStep &step : read.loads)
    c += fmt::format("\tweave_load(&{}, {} + ({}), {}); /* {} */\n", var, var, step.offset, step.size,
                     comment(step.comment));
  return c;
}

Data spawn_view(const Plan &plan) {
  const Plan::Spawn &spawn = *plan.spawn;
  Data v;
  v.set("function", spawn.function);
  v.set("signature", comment(spawn.signature));
  v.set("abi", spawn.abi);
  v.set("ctx_type", plan.ctx_type);
  v.set("goid_offset", std::to_string(plan.goid_offset));
  v.set("goid_source", comment(plan.goid_source));
  v.set("parents_max", std::to_string(kSpawnParents));
  v.set("read_parent", spawn_read_c(spawn.parent, "gp"));
  v.set("read_child", spawn_read_c(spawn.child, "newg"));
  Data points{Data::type::list};
  auto add = [&](const AttachPoint &a) {
    Data p;
    p.set("kind", a.kind);
    p.set("vaddr", hex(a.vaddr));
    p.set("file_offset", hex(a.file_offset));
    p.set("note", comment(a.note));
    points.push_back(p);
  };
  for (const AttachPoint &a : spawn.entry)
    add(a);
  for (const AttachPoint &a : spawn.returns)
    add(a);
  v.set("points", points);
  return v;
}

Data plan_view(const Plan &plan) {
  Data view;
  view.set("version", WEAVE_VERSION);
  view.set("target_path", comment(plan.target.path));
  view.set("build_id", comment(plan.target.build_id));
  view.set("go_version", plan.target.go_version);
  view.set("arch", plan.target.arch);
  view.set("probe_count", std::to_string(plan.event_count()));
  view.set("program_count", std::to_string(plan.programs.size()));
  Data programs{Data::type::list};
  for (const ProgramPlan &program : plan.programs)
    programs.push_back(program_view(plan, program));
  view.set("programs", programs);
  // The per-CPU scratch records (weave_bpf.h): as large as the largest record built there.
  uint32_t scratch_size = 0;
  for (const ProgramPlan &program : plan.programs) {
    const EventPlan &event = plan.event(program.events.front());
    if (builds_in_scratch(plan, event))
      scratch_size = std::max(scratch_size, uint32_t(scratch_bytes(event)));
  }
  Data scratch{Data::type::list};
  if (scratch_size)
    scratch.push_back(Data(std::to_string(scratch_size)));
  view.set("scratch_size", scratch);
  view.set("spawn", plan.spawn ? spawn_view(plan) : Data(false));
  view.set("target_arch", plan.target.arch == "arm64" ? "arm64" : "x86");
  std::string flags;
  for (const auto &arg : bpf_cflags(plan))
    flags += (flags.empty() ? "" : " ") + arg;
  view.set("bpf_cflags", flags);
  // The pieces a program renders in one of two places (before or after its when: condition).
  view.set("capture", Data{kainjow::mustache::partial([] { return resource("templates/capture.bpf.c.mustache"); })});
  view.set("region", Data{kainjow::mustache::partial([] { return resource("templates/region.bpf.c.mustache"); })});
  view.set("goid", Data{kainjow::mustache::partial([] { return resource("templates/goid.bpf.c.mustache"); })});
  view.set("string_reads", Data{kainjow::mustache::partial([] { return resource("templates/strings.bpf.c.mustache"); })});
  return view;
}

nlohmann::ordered_json read_json(const ValueRead &read) {
  nlohmann::ordered_json loads = nlohmann::ordered_json::array();
  for (const auto &l : read.loads)
    loads.push_back({{"offset", l.offset}, {"size", l.size}});
  if (read.saved >= 0) // capture_at_return: from what the entry saved
    return {{"saved", read.saved}, {"loads", loads}};
  if (read.base_field >= 0) // a map pair's key or value: from the address in that field
    return {{"base_field", read.base_field}, {"loads", loads}};
  return {{"base", read.base_reg}, {"loads", loads}};
}

} // namespace

std::vector<std::string> bpf_cflags(const Plan &plan) {
  std::string arch = plan.target.arch == "arm64" ? "arm64" : "x86";
  return {"-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_" + arch, "-fdebug-compilation-dir=."};
}

std::vector<std::string> bpf_clang_args(const Plan &plan) {
  std::vector<std::string> args = bpf_cflags(plan);
  for (const char *arg : {"-c", "probes.bpf.c", "-o", "probes.bpf.o"})
    args.push_back(arg);
  return args;
}

std::string render_manifest(const Plan &plan) {
  using json = nlohmann::ordered_json;
  // The tracer opens the binary by this path, so it must survive JSON (UTF-8) unchanged.
  if (invalid_utf8(plan.target.path) != std::string::npos)
    throw UserError("binary-path-encoding",
                    "the binary's path is not valid UTF-8, which probes.json cannot record",
                    SourceLoc{}, "rename the file or its directory, or give it through a symlink whose path is UTF-8");
  json manifest;
  manifest["format"] = 1;
  manifest["weave_version"] = WEAVE_VERSION;
  manifest["target"] = {{"path", plan.target.path},
                        {"build_id", plan.target.build_id},
                        {"go_version", plan.target.go_version},
                        {"arch", plan.target.arch},
                        {"pointer_size", plan.target.ptr_size}};
  // The probes submit with BPF_RB_NO_WAKEUP (a wakeup per event costs more than the probe itself),
  // so the tracer drains the ring buffer on a short timer instead of sleeping in epoll.
  manifest["options"] = {
      {"string_max", plan.string_max}, {"slice_max", plan.slice_max}, {"ringbuf_wakeup", "none"}};
  if (plan.ring_size) // else the tracer's default
    manifest["options"]["ring_size"] = plan.ring_size;
  manifest["event_header_size"] = plan.header_size;
  manifest["goid"] = {{"offset", plan.goid_offset}, {"source", plan.goid_source}};
  // Which of the header's parent_goid and gopc the probes fill in: none without "ancestry", and no
  // parent goroutine without "parent_goid_offset" (Go before 1.21).
  if (plan.gopc_offset) {
    manifest["ancestry"] = {{"gopc_offset", plan.gopc_offset}, {"source", plan.ancestry_source}};
    if (plan.parent_goid_offset)
      manifest["ancestry"]["parent_goid_offset"] = plan.parent_goid_offset;
    if (plan.spawn) {
      // The spawn probe (Plan::Spawn): the tracer attaches its two programs, and a parent_goid of 0
      // then means a goroutine made before it attached.
      json points = json::object();
      for (const auto &[kind, list] : {std::pair{"entry", &plan.spawn->entry}, std::pair{"return", &plan.spawn->returns}}) {
        json each = json::array();
        for (const AttachPoint &a : *list)
          each.push_back({{"vaddr", hex(a.vaddr)}, {"file_offset", hex(a.file_offset)}});
        points[kind] = each;
      }
      manifest["ancestry"]["spawn"] = {{"function", plan.spawn->function},
                                       {"signature", plan.spawn->signature},
                                       {"programs", {{"entry", "weave_spawn_entry"}, {"return", "weave_spawn_return"}}},
                                       {"attach", points},
                                       {"parents_max", kSpawnParents}};
    } else if (!plan.spawn_refused.empty()) {
      manifest["ancestry"]["spawn_refused"] = plan.spawn_refused;
    }
  }
  json probes = json::array();
  auto captures_json = [](const EventPlan &event) {
    json captures = json::array();
    for (const auto &c : event.captures) {
      json fields = json::array();
      for (const auto &f : c.fields) {
        json field = {{"name", f.name}, {"kind", f.kind},     {"go_type", f.go_type},
                      {"size", f.size}, {"offset", f.offset}};
        if (f.kind == "string")
          field["max_len"] = f.max_len;
        if (f.in_area) // its slot: the length, then where its bytes are in the probe's "strings"
          field["in_area"] = true;
        if (f.hidden)
          field["hidden"] = true;
        if (f.empty_array) // shown as [], whatever its type is named
          field["array"] = true;
        if (f.kind != "empty" && !f.by_walk) // a zero-size value reads nothing
          field["read"] = read_json(f.value);
        if (f.map_walk) // how the pairs after it were found (templates/weave_bpf.h)
          field["map_walk"] = {{"layout", f.map_walk->layout},
                               {"pairs", f.map_walk->pairs},
                               {"max_visits", f.map_walk->max_visits}};
        if (f.kind == "string")
          field["length_read"] = read_json(f.length);
        fields.push_back(field);
      }
      json capture = {{"expr", c.expr}, {"type", c.go_type}, {"fault_bit", c.fault_bit}, {"fields", fields}};
      if (!c.interfaces.empty())
        capture["interfaces"] = c.interfaces;
      if (c.assertion) // x.(T): the type word's field, and T's descriptor (link-time address)
        capture["assertion"] = {{"type_field", c.assertion->type_field},
                                {"type", c.assertion->type},
                                {"descriptor", c.assertion->descriptor}};
      if (!c.contents.empty()) { // contents: true: an interface's candidate types and their fields
        json contents = json::array();
        for (const CapturePlan::Contents &k : c.contents) {
          json types = json::array();
          for (const CapturePlan::Contents::Type &t : k.types)
            types.push_back({{"type", t.name},
                             {"descriptor", t.descriptor},
                             {"first", t.first},
                             {"last", t.last},
                             {"pointer", t.pointer}});
          contents.push_back(
              {{"interface", k.iface}, {"type_field", k.type_field}, {"data_field", k.data_field}, {"types", types}});
        }
        capture["contents"] = contents;
      }
      if (!c.unavailable.empty())
        capture["unavailable"] = c.unavailable; // an inlined copy's value DWARF does not locate
      if (!c.lists.empty()) {
        json lists = json::array();
        for (const auto &l : c.lists)
          lists.push_back(l.map ? json{{"path", l.path}, {"count", l.count}, {"map", true}}
                                : json{{"path", l.path}, {"count", l.count}});
        capture["lists"] = lists;
      }
      captures.push_back(capture);
    }
    return captures;
  };
  // One manifest entry per BPF program: a probe's entry event, then its return event if any.
  for (const ProbePlan &probe : plan.probes) {
    std::vector<const EventPlan *> events = {&probe.entry};
    if (probe.ret)
      events.push_back(&*probe.ret);
    for (const EventPlan *event : events) {
      json attach = json::array();
      for (const auto &a : probe.attach)
        if (a.kind == event->kind)
          attach.push_back({{"kind", a.kind},
                            {"vaddr", hex(a.vaddr)},
                            {"file_offset", hex(a.file_offset)},
                            {"cookie", hex(a.cookie)}});
      json p = {{"id", event->id},
                {"name", probe.name},
                {"function", probe.function},
                {"kind", event->kind},
                {"abi", probe.abi},
                {"function_entry", hex(probe.function_entry)},
                {"program", event->program},
                {"event_size", event->event_size},
                {"attach", attach},
                {"captures", captures_json(*event)}};
      if (event->duration_offset)
        p["duration_offset"] = event->duration_offset;
      if (event->strings_size) // the string area: a u64 of the bytes used, then `size` bytes
        p["strings"] = {{"offset", event->strings_offset}, {"size", event->strings_size}};
      if (event->min_duration_ns)
        p["min_duration_ns"] = event->min_duration_ns;
      // when_return: the condition its return decides; like min_duration, entries arrive late,
      // with their returns.
      if (event->holds_entry)
        p["holds_entry"] = true;
      if (!event->return_filter_text.empty())
        p["when_return"] = event->return_filter_text;
      if (event->stack_depth) {
        p["stack"] = event->stack_window
                         ? json{{"offset", event->stack_offset},
                                {"depth", event->stack_depth},
                                {"window", event->stack_window}}
                         : json{{"offset", event->stack_offset}, {"depth", event->stack_depth}};
        if (event->thread_window)
          p["stack"]["thread"] = json{{"offset", event->thread_offset}, {"window", event->thread_window}};
      }
      if (!probe.skipped.empty())
        p["skipped"] = probe.skipped;
      if (probe.inlined_into)
        p["inlined_into"] = {{"function", probe.inlined_into->function},
                             {"file", probe.inlined_into->file},
                             {"line", probe.inlined_into->line},
                             {"physical", probe.inlined_into->physical}};
      // A source-line probe: its events are "line" events, with where the line is.
      if (probe.line)
        p["line"] = {{"file", probe.line->file},
                     {"line", probe.line->line},
                     {"pc", probe.line->pc},
                     {"physical", probe.line->physical},
                     {"inlined", probe.line->inlined}};
      // The condition the entry program evaluates (its returns follow the entry's verdict).
      if (!probe.entry.filter_text.empty())
        p["when"] = probe.entry.filter_text;
      // A generic shape instance: which capture holds its dictionary, and the instantiation each
      // dictionary address stands for.
      if (event == &probe.entry && probe.dict_capture >= 0) {
        json names = json::object();
        for (const auto &[address, name] : probe.instantiations)
          names[hex(address)] = name;
        p["dictionary"] = {{"capture", probe.dict_capture}, {"instantiations", names}};
      }
      probes.push_back(p);
    }
  }
  manifest["probes"] = probes;
  // Where the type descriptors an interface capture may point to are: the tracer names them from
  // the binary itself (whose build id it checks), reading only the descriptors it meets.
  if (plan.descriptors)
    manifest["type_descriptors"] = {{"start", hex(plan.descriptors->start)}, {"end", hex(plan.descriptors->end)}};
  // Names from the binary (symbols, DWARF types) are bytes: ones that are not UTF-8 are shown
  // with U+FFFD (the tracer only displays them) instead of making the dump throw.
  return manifest.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string render_bpf_source(const Plan &plan) {
  return render("templates/probes.bpf.c.mustache", plan_view(plan));
}

std::vector<GeneratedFile> generate(const Plan &plan) {
  Data view = plan_view(plan);
  return {
      {"probes.bpf.c", render("templates/probes.bpf.c.mustache", view)},
      {"probes.h", render("templates/probes.h.mustache", view)},
      {"weave_bpf.h", resource("templates/weave_bpf.h")},
      {"weave_event.h", resource("templates/weave_event.h")},
      {"Makefile.bpf", render("templates/Makefile.bpf.mustache", view)},
      {"probes.json", render_manifest(plan)},
  };
}

} // namespace weave

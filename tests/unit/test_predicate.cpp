// The condition language of when: and when_return: parsed and resolved against hand-made captures,
// no binary needed: nil, the values compared with it, and where each operand is read from.
#include "plan/plan.h"
#include "plan/predicate.h"

#include <doctest/doctest.h>

using namespace weave;

namespace {

const SourceLoc kLoc{"spec.yaml", 3, 11};

CapturePlan scalar(const std::string &expr, const std::string &kind, const std::string &go_type, int bit) {
  CapturePlan c;
  c.expr = expr;
  c.go_type = go_type;
  c.fault_bit = bit;
  EventField f;
  f.kind = kind;
  f.go_type = go_type;
  c.fields.push_back(f);
  return c;
}

CapturePlan interface_value(const std::string &expr, int bit) {
  CapturePlan c;
  c.expr = expr;
  c.go_type = "error";
  c.fault_bit = bit;
  c.interfaces.push_back("");
  for (const char *name : {"type", "data", "value", "text"}) {
    EventField f;
    f.name = name;
    f.kind = std::string(name) == "text" ? "string" : "uint";
    c.fields.push_back(f);
  }
  return c;
}

std::string error_of(const std::string &text, const std::vector<CapturePlan> &captures,
                     const std::vector<CapturePlan> *entry = nullptr) {
  try {
    PredicateNode node = parse_predicate(text, kLoc, "when_return");
    uint64_t entry_faults = 0;
    resolve_predicate(node, captures, text, kLoc, "when_return", entry, &entry_faults);
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("nil is a literal, and the values compared with it are marked for their header word") {
  PredicateNode node = parse_predicate("p != nil && p.Name == \"x\" || nil == m", kLoc);
  std::vector<PredicateOperand> values = predicate_values(node);
  REQUIRE(values.size() == 3);
  CHECK(values[0].text == "p");
  CHECK(values[0].nil_compared);
  CHECK(values[1].text == "p.Name");
  CHECK(!values[1].nil_compared);
  CHECK(values[2].text == "m");
  CHECK(values[2].nil_compared);
}

TEST_CASE("when_return: results first, then the entry's values, and nil against an interface reads its type word") {
  std::vector<CapturePlan> ret = {scalar("v", "int", "int", 0), interface_value("err", 1)};
  std::vector<CapturePlan> entry = {scalar("o", "pointer", "*main.Order", 0), scalar("o.Qty", "int", "int", 1)};
  const std::string text = "err != nil && o != nil && o.Qty > 100 || v < 0";
  PredicateNode node = parse_predicate(text, kLoc, "when_return");
  uint64_t entry_faults = 0;
  uint64_t faults = resolve_predicate(node, ret, text, kLoc, "when_return", &entry, &entry_faults);
  CHECK(faults == 0b11);
  CHECK(entry_faults == 0b11);
  CHECK(predicate_key(node) == "or(and((c1.0!=nil),(entry.c0.0!=nil),(entry.c1.0>100),),(c0.0<0),)");
}

TEST_CASE("nil: what it cannot be compared with is refused, in the key's own words") {
  std::vector<CapturePlan> ret = {scalar("v", "int", "int", 0), interface_value("err", 1)};
  CHECK(error_of("v == nil", ret).find("v is a int: nil compares pointers, funcs, interfaces, maps, slices and chans") !=
        std::string::npos);
  CHECK(error_of("err < nil", ret) == "only == and != compare with nil in when_return: \"err < nil\"");
  CHECK(error_of("nil == nil", ret).find("nil compares with a value: a pointer, func, interface, map, slice or chan") != std::string::npos);
  CHECK(error_of("err == 3", ret).find("err is a error, not one value") != std::string::npos);
  CHECK(error_of("o != nil", ret).find("o is not captured") != std::string::npos);
}

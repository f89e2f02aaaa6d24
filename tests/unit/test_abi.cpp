// Table tests of the Go ABI model: one signature in, every location out. The expected values are
// the ones GO-ABI.md §1.4 and §2.1 verified against Go 1.19.8 binaries (uprobes and disassembly),
// including the `_func.args` width the compiler recorded in .gopclntab.
#include "abi/abi.h"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace weave;

namespace {

// TypeBuilder makes the handful of Go types the tables need, sized for one pointer width.
struct TypeBuilder {
  explicit TypeBuilder(uint64_t ptr) : ptr(ptr) {}
  TypeTable table;
  uint64_t ptr;

  TypeId base(TypeKind kind, const char *name, uint64_t size) {
    uint64_t align = std::min(size, ptr);
    if (kind == TypeKind::Complex)
      align = std::min(size / 2, ptr);
    return table.add({kind, name, size, align});
  }
  TypeId i8() { return base(TypeKind::Int, "int8", 1); }
  TypeId u8() { return base(TypeKind::Uint, "uint8", 1); }
  TypeId u16() { return base(TypeKind::Uint, "uint16", 2); }
  TypeId i16() { return base(TypeKind::Int, "int16", 2); }
  TypeId i32() { return base(TypeKind::Int, "int32", 4); }
  TypeId i64() { return base(TypeKind::Int, "int64", 8); }
  TypeId integer() { return base(TypeKind::Int, "int", ptr); }
  TypeId uintptr() { return base(TypeKind::Uintptr, "uintptr", ptr); }
  TypeId boolean() { return base(TypeKind::Bool, "bool", 1); }
  TypeId f32() { return base(TypeKind::Float, "float32", 4); }
  TypeId f64() { return base(TypeKind::Float, "float64", 8); }
  TypeId c64() { return base(TypeKind::Complex, "complex64", 8); }
  TypeId c128() { return base(TypeKind::Complex, "complex128", 16); }
  TypeId pointer(TypeId elem) {
    GoType t{TypeKind::Pointer, "*T", ptr, ptr};
    t.elem = elem;
    return table.add(t);
  }
  TypeId string() { return table.add({TypeKind::String, "string", 2 * ptr, ptr}); }
  TypeId slice(TypeId elem) {
    GoType t{TypeKind::Slice, "[]T", 3 * ptr, ptr};
    t.elem = elem;
    return table.add(t);
  }
  TypeId iface(bool empty) {
    GoType t{TypeKind::Interface, empty ? "interface {}" : "main.Shape", 2 * ptr, ptr};
    t.empty_interface = empty;
    return table.add(t);
  }
  TypeId array(TypeId elem, uint64_t count) {
    const GoType &e = table.at(elem);
    GoType t{TypeKind::Array, "[N]T", e.size * count, e.align};
    t.elem = elem;
    t.count = count;
    return table.add(t);
  }
  // Lays the fields out as Go does: each at its alignment, the struct padded to its own alignment,
  // plus one byte when the last field is zero-sized (abi-internal.md, "Memory layout").
  TypeId structure(const char *name, std::vector<TypeId> fields) {
    GoType t{TypeKind::Struct, name, 0, 1};
    uint64_t offset = 0;
    for (size_t i = 0; i < fields.size(); ++i) {
      const GoType &f = table.at(fields[i]);
      offset = (offset + f.align - 1) / f.align * f.align;
      t.fields.push_back({"f" + std::to_string(i), offset, fields[i], false});
      offset += f.size;
      t.align = std::max(t.align, f.align);
    }
    if (!fields.empty() && table.at(fields.back()).size == 0 && offset > 0)
      offset += 1;
    t.size = (offset + t.align - 1) / t.align * t.align;
    return table.add(t);
  }
};

std::vector<std::pair<int, int>> regs(const ParamLocation &loc) {
  std::vector<std::pair<int, int>> out; // (class 0 int / 1 float, index)
  for (auto &p : loc.pieces)
    out.emplace_back(p.cls == RegClass::Int ? 0 : 1, p.index);
  return out;
}

using R = std::vector<std::pair<int, int>>;
constexpr int I = 0, F = 1;

void check_stack(const ParamLocation &loc, uint64_t offset) {
  CHECK(loc.on_stack);
  CHECK(loc.pieces.empty());
  CHECK(loc.stack_offset == offset);
}

} // namespace

TEST_CASE("amd64 Ints: one integer register each, sub-word values keep their size") {
  TypeBuilder t(8);
  auto layout = assign_locations(t.table, {t.integer(), t.boolean(), t.u8(), t.i64(), t.pointer(t.integer())},
                                 {t.integer()}, abi_internal_amd64());
  for (int i = 0; i < 5; ++i)
    CHECK(regs(layout.inputs[i]) == R{{I, i}});
  CHECK(layout.inputs[1].pieces[0].size == 1);
  CHECK(regs(layout.results[0]) == R{{I, 0}});
  CHECK(layout.arg_width == 32);
  CHECK(layout.inputs[3].spill_offset == 16); // int64 after two bytes: aligned to 8
}

TEST_CASE("amd64 Strs: strings, slices and interfaces decompose into words") {
  TypeBuilder t(8);
  auto layout = assign_locations(t.table, {t.string(), t.slice(t.u8()), t.iface(true), t.iface(false)},
                                 {t.integer(), t.string()}, abi_internal_amd64());
  CHECK(regs(layout.inputs[0]) == R{{I, 0}, {I, 1}});
  CHECK(regs(layout.inputs[1]) == R{{I, 2}, {I, 3}, {I, 4}});
  CHECK(regs(layout.inputs[2]) == R{{I, 5}, {I, 6}});
  CHECK(regs(layout.inputs[3]) == R{{I, 7}, {I, 8}});
  CHECK(regs(layout.results[0]) == R{{I, 0}});
  CHECK(regs(layout.results[1]) == R{{I, 1}, {I, 2}});
  CHECK(layout.inputs[1].pieces[2].offset == 16);
  CHECK(layout.arg_width == 72);
}

TEST_CASE("amd64 Floats: float and integer registers are counted separately") {
  TypeBuilder t(8);
  auto layout = assign_locations(t.table, {t.f32(), t.f64(), t.c64(), t.c128(), t.integer()},
                                 {t.f64(), t.c128()}, abi_internal_amd64());
  CHECK(regs(layout.inputs[0]) == R{{F, 0}});
  CHECK(regs(layout.inputs[1]) == R{{F, 1}});
  CHECK(regs(layout.inputs[2]) == R{{F, 2}, {F, 3}});
  CHECK(regs(layout.inputs[3]) == R{{F, 4}, {F, 5}});
  CHECK(layout.inputs[3].pieces[1].offset == 8);
  CHECK(regs(layout.inputs[4]) == R{{I, 0}});
  CHECK(regs(layout.results[0]) == R{{F, 0}});
  CHECK(regs(layout.results[1]) == R{{F, 1}, {F, 2}});
}

TEST_CASE("amd64 Arrays: length 0 takes nothing, 1 is its element, 2 goes to the stack") {
  TypeBuilder t(8);
  TypeId integer = t.integer();
  auto layout = assign_locations(t.table,
                                 {t.array(integer, 0), t.array(integer, 1), t.array(integer, 2), integer},
                                 {t.array(integer, 2)}, abi_internal_amd64());
  check_stack(layout.inputs[0], 0);
  CHECK(regs(layout.inputs[1]) == R{{I, 0}});
  check_stack(layout.inputs[2], 0);
  CHECK(regs(layout.inputs[3]) == R{{I, 1}});
  check_stack(layout.results[0], 16); // SP+24 at RET
  CHECK(layout.arg_width == 48);
}

TEST_CASE("amd64 Int128ish: the abi-internal.md example") {
  TypeBuilder t(8);
  TypeId up = t.uintptr();
  TypeId pair = t.array(up, 2);
  TypeId r1 = t.structure("r1", {up, pair});
  auto layout = assign_locations(t.table, {t.u8(), pair, t.u8()}, {r1, t.string()}, abi_internal_amd64());
  CHECK(regs(layout.inputs[0]) == R{{I, 0}});
  check_stack(layout.inputs[1], 0);
  CHECK(regs(layout.inputs[2]) == R{{I, 1}});
  check_stack(layout.results[0], 16);
  CHECK(regs(layout.results[1]) == R{{I, 0}, {I, 1}});
  CHECK(layout.arg_width == 48);
}

TEST_CASE("amd64 Many: arguments past nine words spill to the stack, results too") {
  TypeBuilder t(8);
  TypeId integer = t.integer();
  std::vector<TypeId> in(11, integer), out(10, integer);
  in.push_back(t.string());
  auto layout = assign_locations(t.table, in, out, abi_internal_amd64());
  for (int i = 0; i < 9; ++i)
    CHECK(regs(layout.inputs[i]) == R{{I, i}});
  check_stack(layout.inputs[9], 0);
  check_stack(layout.inputs[10], 8);
  check_stack(layout.inputs[11], 16);
  for (int i = 0; i < 9; ++i)
    CHECK(regs(layout.results[i]) == R{{I, i}});
  check_stack(layout.results[9], 32);
  CHECK(layout.arg_width == 112);
}

TEST_CASE("amd64 SpillOver: all or nothing, and a later argument still gets a register") {
  TypeBuilder t(8);
  TypeId integer = t.integer();
  std::vector<TypeId> in(8, integer);
  in.push_back(t.string());
  in.push_back(integer);
  auto layout = assign_locations(t.table, in, {integer}, abi_internal_amd64());
  check_stack(layout.inputs[8], 0);
  CHECK(regs(layout.inputs[9]) == R{{I, 8}});
  CHECK(layout.arg_width == 88);
  CHECK(layout.spill_base == 16);
  CHECK(layout.inputs[9].spill_offset == 16 + 64);
}

TEST_CASE("amd64 structs: each field its own register, integer and float mixed") {
  TypeBuilder t(8);
  TypeId student = t.structure("Student", {t.string(), t.integer(), t.f64()});
  TypeId small = t.structure("Small", {t.u16(), t.u8(), t.i32()});
  auto layout = assign_locations(t.table, {student, small}, {}, abi_internal_amd64());
  CHECK(regs(layout.inputs[0]) == R{{I, 0}, {I, 1}, {I, 2}, {F, 0}});
  CHECK(regs(layout.inputs[1]) == R{{I, 3}, {I, 4}, {I, 5}});
  CHECK(layout.inputs[1].pieces[2].offset == 4);
  CHECK(layout.inputs[1].pieces[2].size == 4);
}

TEST_CASE("a struct holding an array of two goes to the stack whole") {
  TypeBuilder t(8);
  TypeId s = t.structure("S", {t.integer(), t.array(t.integer(), 2)});
  auto layout = assign_locations(t.table, {s, t.integer()}, {}, abi_internal_amd64());
  check_stack(layout.inputs[0], 0);
  CHECK(regs(layout.inputs[1]) == R{{I, 0}});
}

TEST_CASE("zero-sized values still align the stack") {
  TypeBuilder t(8);
  TypeId a3 = t.array(t.u8(), 3), c2 = t.array(t.u8(), 2);
  auto with_z = assign_locations(t.table, {a3, t.array(t.i64(), 0), c2}, {}, abi_internal_amd64());
  check_stack(with_z.inputs[2], 8);
  auto without = assign_locations(t.table, {a3, c2}, {}, abi_internal_amd64());
  check_stack(without.inputs[1], 3);
}

TEST_CASE("running out of float registers sends only the float argument to the stack") {
  TypeBuilder t(8);
  std::vector<TypeId> in(15, t.f64());
  in.push_back(t.f64());
  in.push_back(t.integer());
  auto layout = assign_locations(t.table, in, {}, abi_internal_amd64());
  CHECK(regs(layout.inputs[14]) == R{{F, 14}});
  check_stack(layout.inputs[15], 0);
  CHECK(regs(layout.inputs[16]) == R{{I, 0}});
}

TEST_CASE("arm64 has sixteen integer registers") {
  TypeBuilder t(8);
  std::vector<TypeId> in(17, t.integer());
  auto layout = assign_locations(t.table, in, {}, abi_internal_arm64());
  CHECK(regs(layout.inputs[15]) == R{{I, 15}});
  check_stack(layout.inputs[16], 0);
  CHECK(arm64_registers().int_args[15] == "regs[15]");
  CHECK(arm64_registers().g == "regs[28]");
}

TEST_CASE("ABI0 Mixed: the stack layout of the abi0 wrapper (same on amd64 and arm64)") {
  TypeBuilder t(8);
  TypeId small = t.structure("Small", {t.u16(), t.u8(), t.i32()});
  auto layout = assign_locations(t.table,
                                 {t.u8(), t.string(), t.f32(), small, t.array(t.i16(), 2), t.boolean(), t.i64()},
                                 {t.i32(), t.string(), t.f64()}, abi0(8));
  uint64_t expected_in[] = {0, 8, 24, 28, 36, 40, 48};
  for (size_t i = 0; i < 7; ++i)
    check_stack(layout.inputs[i], expected_in[i]);
  check_stack(layout.results[0], 56);
  check_stack(layout.results[1], 64);
  check_stack(layout.results[2], 80);
  CHECK(layout.arg_width == 88);
}

TEST_CASE("386 ABI0: int64 aligns to 4") {
  TypeBuilder t(4);
  auto layout = assign_locations(t.table, {t.integer(), t.boolean(), t.u8(), t.i64(), t.pointer(t.integer())},
                                 {t.integer()}, abi0(4));
  uint64_t expected[] = {0, 4, 5, 8, 16};
  for (size_t i = 0; i < 5; ++i)
    check_stack(layout.inputs[i], expected[i]);
  check_stack(layout.results[0], 20);
}

TEST_CASE("types the ABI cannot place are refused, not guessed") {
  TypeBuilder t(8);
  TypeId odd = t.table.add({TypeKind::Unsupported, "weird", 8, 8});
  CHECK_THROWS_AS(assign_locations(t.table, {odd}, {}, abi_internal_amd64()), std::invalid_argument);
}

// Where a value is at an inlined copy (plan/inlined.cpp): DWARF's location at the copy's first
// instruction, matched piece for piece to the value's scalar parts, stack slots moved from the CFA
// to SP. Every shape Go writes is read or refused with a reason; none is guessed.
#include "plan/inlined.h"

#include "gobinary/binary.h"

#include <doctest/doctest.h>

using namespace weave;

namespace {

struct Types {
  TypeTable table;
  TypeId integer = table.add(GoType{TypeKind::Int, "int", 8, 8});
  TypeId str = table.add(GoType{TypeKind::String, "string", 16, 8});
  TypeId real = table.add(GoType{TypeKind::Float, "float64", 8, 8});
};

DwarfPiece reg(int n, uint64_t size = 0) { return {DwarfPiece::Kind::Register, n, 0, size}; }
DwarfPiece cfa(int64_t offset, uint64_t size = 0) { return {DwarfPiece::Kind::Memory, -1, offset, size}; }
DwarfPiece absent(uint64_t size) { return {DwarfPiece::Kind::Absent, -1, 0, size}; }

InlinedCopyLocations::Param located(std::vector<DwarfPiece> pieces) {
  InlinedCopyLocations::Param p;
  p.name = "v";
  p.location.status = ParamEntryLocation::Status::AtEntry;
  p.location.pieces = std::move(pieces);
  p.location.ops = "test";
  return p;
}

BinaryImage amd64() {
  BinaryImage image;
  image.arch = Arch::X86_64;
  image.ptr_size = 8;
  return image;
}

} // namespace

TEST_CASE("an int in a register is read there; DWARF register 2 is RCX") {
  Types t;
  NamedValue v = inlined_value(located({reg(2)}), t.integer, t.table, amd64(), 40);
  CHECK(v.unavailable.empty());
  REQUIRE(v.pieces.size() == 1);
  CHECK(v.pieces[0].reg == "cx");
  CHECK(describe_inlined_value(v) == "RCX");
}

TEST_CASE("a stack slot at CFA-24 is SP + SP delta + 8 - 24 on amd64") {
  Types t;
  NamedValue v = inlined_value(located({cfa(-24)}), t.integer, t.table, amd64(), 120);
  CHECK(v.unavailable.empty());
  CHECK(v.whole_in_memory);
  CHECK(v.whole_sp_offset == 120 + 8 - 24);
}

TEST_CASE("a string's two pieces, each where DWARF says: pointer on the stack, length in RBX") {
  Types t;
  NamedValue v = inlined_value(located({cfa(-88, 8), reg(3, 8)}), t.str, t.table, amd64(), 136);
  CHECK(v.unavailable.empty());
  REQUIRE(v.pieces.size() == 2);
  CHECK(v.pieces[0].memory);
  CHECK(v.pieces[0].sp_offset == 136 + 8 - 88);
  CHECK(v.pieces[0].offset == 0);
  CHECK(v.pieces[1].reg == "bx");
  CHECK(v.pieces[1].offset == 8);
  CHECK(describe_inlined_value(v) == "SP+56,RBX");
}

TEST_CASE("what cannot be read is unavailable, with the reason") {
  Types t;
  auto reason = [&](InlinedCopyLocations::Param p, TypeId type, Arch arch = Arch::X86_64) {
    BinaryImage image = amd64();
    image.arch = arch;
    return inlined_value(p, type, t.table, image, 16).unavailable;
  };
  // Part of the string optimized out: no half value.
  CHECK(reason(located({absent(8), reg(3, 8)}), t.str) == "part of it is optimized out at this copy");
  // A piece count that does not match the parts (Go writes a slot twice when it has two types).
  CHECK(reason(located({reg(0, 8), reg(3, 8), reg(1, 8)}), t.str) == "DWARF's pieces (test) cover 24 of its 16 bytes");
  // A 16-byte value in one register cannot be.
  CHECK(reason(located({reg(0)}), t.str).starts_with("DWARF's location for it"));
  // XMM registers (DWARF 17+): a uprobe has no floating-point registers.
  CHECK(reason(located({reg(17)}), t.real).starts_with("DWARF's location for it"));
  // Only amd64's frame rule was checked against real programs.
  CHECK(reason(located({reg(0)}), t.integer, Arch::Arm64) == "values at inlined copies are read on amd64 only");
  InlinedCopyLocations::Param none;
  none.location.status = ParamEntryLocation::Status::NoAttribute;
  CHECK(reason(none, t.integer) == "DWARF records no location for it at this copy");
  none.location.status = ParamEntryLocation::Status::Empty;
  CHECK(reason(none, t.integer) == "optimized out at this copy");
  none.location.status = ParamEntryLocation::Status::NotAtEntry;
  CHECK(reason(none, t.integer) == "its location list does not cover the copy's first instruction");
}

TEST_CASE("pieces that do not add up to the value are refused, never read as fields") {
  // Go 1.26 describes some optimized struct locals in pieces covering 24 of their 32 bytes
  // (golang/go#72053): which piece is which field is then unknowable, so nothing is read.
  Types t;
  GoType pt{TypeKind::Struct, "main.point", 32, 8};
  pt.fields = {{"X", 0, t.integer}, {"Y", 8, t.integer}, {"Name", 16, t.str}};
  TypeId point = t.table.add(pt);
  NamedValue v = inlined_value(located({reg(0, 8), reg(3, 8), reg(1, 8)}), point, t.table, amd64(), 16, true);
  CHECK(v.unavailable == "DWARF's pieces (test) cover 24 of its 32 bytes");
  CHECK(v.pieces.empty());
  // The same struct in four pieces that do add up is read piece by piece.
  NamedValue whole = inlined_value(located({reg(0, 8), reg(3, 8), reg(1, 8), cfa(-8, 8)}), point, t.table, amd64(),
                                   16, true);
  CHECK(whole.unavailable.empty());
  CHECK(describe_inlined_value(whole) == "RAX,RBX,RDX,SP+16"); // DWARF 1 is RDX
  // At a line probe the reasons say where: this PC.
  InlinedCopyLocations::Param none;
  none.location.status = ParamEntryLocation::Status::NotAtEntry;
  CHECK(inlined_value(none, t.integer, t.table, amd64(), 16, true).unavailable ==
        "its location list does not cover this PC");
}

// Stage 4 — abi: where Go puts each argument and result, as a pure function of the types.
//
// Implements the register assignment of the Go internal ABI (cmd/compile/abi-internal.md, "Function
// call argument and result passing"; code: cmd/compile/internal/abi/abiutils.go) and ABI0, which is
// the same algorithm with no registers. Nothing here reads a binary: the unit tests drive it with
// hand-built TypeTables. No library implements Go's ABI, so it is written here.
#pragma once

#include "debuginfo/gotypes.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weave {

enum class RegClass { Int, Float };

// RegPiece is one register holding part of a value: `size` bytes found at `offset` inside the
// value's in-memory layout.
struct RegPiece {
  RegClass cls = RegClass::Int;
  int index = 0; // Nth integer (or float) argument register of the ABI
  uint64_t size = 0;
  uint64_t offset = 0;
};

// ParamLocation: either in registers (pieces non-empty), or on the stack at `stack_offset` from the
// start of the argument area (entry SP + ptr_size on amd64 / 386, entry SP + 8 on arm64).
// Zero-sized values are "on the stack" with size 0.
struct ParamLocation {
  bool on_stack = false;
  uint64_t stack_offset = 0;
  std::vector<RegPiece> pieces;
  int64_t spill_offset = -1; // register inputs only: offset of its spill slot in the argument area
};

struct AbiConfig {
  std::string name;  // "ABIInternal" or "ABI0"
  int int_regs = 0;  // 9 on amd64, 16 on arm64, 0 for ABI0
  int float_regs = 0; // 15 on amd64, 16 on arm64, 0 for ABI0
  int ptr_size = 8;
};

AbiConfig abi_internal_amd64();
AbiConfig abi_internal_arm64();
AbiConfig abi0(int ptr_size);

struct FunctionLayout {
  std::vector<ParamLocation> inputs;  // same order as the `inputs` given
  std::vector<ParamLocation> results; // same order as the `results` given
  uint64_t spill_base = 0; // start of the spill area in the argument area
  uint64_t arg_width = 0;  // whole argument area; equals .gopclntab _func.args
};

// `inputs` must be the complete list: [generic dictionary], [receiver], every parameter including
// blank and unnamed ones, in order. Types the ABI cannot place (Unsupported) throw std::invalid_argument.
FunctionLayout assign_locations(const TypeTable &types, const std::vector<TypeId> &inputs,
                                const std::vector<TypeId> &results, const AbiConfig &config);

// Machine registers of an architecture as a uprobe sees them (struct pt_regs / user_pt_regs).
struct ArchRegisters {
  std::vector<std::string> int_args;       // pt_regs field of integer argument register i
  std::vector<std::string> int_arg_names;  // assembler name of the same, for comments: "RAX"
  std::string float_arg_prefix = "X";      // Go assembler name of float register i: X0 amd64, F0 arm64
  std::string sp;                          // pt_regs field holding the stack pointer
  std::string g;                           // register holding the current g in ABIInternal
  std::string g_name;
  uint64_t stack_args_offset = 8;          // entry SP + this = first stack argument
};
ArchRegisters amd64_registers();
ArchRegisters arm64_registers();
// 386 processes on an x86-64 kernel: the uprobe context is the 64-bit struct pt_regs holding the
// 32-bit registers; every argument is on the stack (ABI0), above the 4-byte return address.
ArchRegisters i386_registers();

// TargetAbi is what an architecture and Go version imply for the functions of a binary.
struct TargetAbi {
  ArchRegisters regs;
  AbiConfig internal;      // the register ABI, when the version has one
  bool has_regabi = false; // amd64 from Go 1.17, arm64 from Go 1.18, never 386
  int ptr_size = 8;
};

// `goarch` in Go's spelling ("amd64", "arm64", "386"); throws std::invalid_argument otherwise.
TargetAbi target_abi(const std::string &goarch, int go_major, int go_minor);

// The ABI of one function: ABIInternal when the version has it and the function's compile unit
// was built with it (DWARF producer "regabi"; assembly and pre-1.17 code is ABI0).
AbiConfig function_abi(const TargetAbi &target, bool compiled_regabi);

} // namespace weave

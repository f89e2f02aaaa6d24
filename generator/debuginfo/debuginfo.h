// Stage 3 — debuginfo: functions, parameters and the Go type model from DWARF, read with libdw.
//
// Functions are indexed by name lazily, on the first lookup, by walking the top level of every CU
// once. Types are converted on demand and memoized by DIE offset (so recursive types terminate).
#pragma once

#include "debuginfo/gotypes.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weave {

struct GoParam {
  std::string name; // "req", "~r0"
  TypeId type = kNoType;
  bool is_result = false; // DW_AT_variable_parameter
};

struct GoFunction {
  std::string name; // fully qualified: "main.(*Server).Handle"
  uint64_t low_pc = 0;
  uint64_t high_pc = 0; // one past the last byte
  std::vector<GoParam> params; // DWARF order: [receiver], inputs, results
  bool regabi = false;  // the CU's DW_AT_producer ends in "regabi"
  std::string producer; // the CU's DW_AT_producer
};

// RuntimeType: a Go type descriptor in the binary (DW_AT_go_runtime_type), which an interface value
// points to: how the tracer names the dynamic type of an interface it captured.
struct RuntimeType {
  uint64_t address = 0;
  std::string name; // "*errors.errorString", "int", "main.Header"
  uint64_t kind = 0; // reflect.Kind (DW_AT_go_kind)
  uint64_t size = 0;
};

class DebugInfo {
public:
  // Throws UserError [no-dwarf] when the file has no DWARF, [binary-unreadable] when it cannot be
  // opened. `ptr_size` sets alignments (4 on 386).
  static std::unique_ptr<DebugInfo> open(const std::string &path, int ptr_size);
  virtual ~DebugInfo() = default;

  // The out-of-line (concrete, has low_pc) subprogram with exactly this name, or nullptr.
  virtual const GoFunction *find_function(const std::string &name) = 0;

  // Every concrete function name, sorted (for suggestions and listings).
  virtual const std::vector<std::string> &function_names() = 0;

  // Byte offset of `member` inside the struct type named `type_name` (e.g. runtime.g / goid).
  virtual std::optional<uint64_t> member_offset(const std::string &type_name,
                                                const std::string &member) = 0;

  // The type named `type_name` ("main.Header", "runtime.g", "int"), converted into types(), or
  // nullopt. Named Go types resolve to their typedef, so the result carries the Go name.
  virtual std::optional<TypeId> find_type(const std::string &type_name) = 0;

  virtual TypeTable &types() = 0;

  // Every type name DWARF has, sorted (for suggestions).
  virtual std::vector<std::string> type_names() = 0;

  // Every type with a runtime type descriptor, sorted by address, one entry per address.
  virtual std::vector<RuntimeType> runtime_types() = 0;
};

} // namespace weave

// Signatures, one room of the plan stage: the function a probe names (from DWARF or, stripped, from
// .gopclntab) and the complete list of what the ABI lays out for it — parameters, results — declared
// in the spec or read from DWARF, checked against each other and against the argument size the
// compiler recorded, so that no value is read from a place computed from a wrong signature.
#pragma once

#include "abi/abi.h"
#include "debuginfo/debuginfo.h"
#include "spec/spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weave {

struct BinaryImage;
class Pclntab;

struct ProbeSignature {
  std::string name;
  uint64_t low_pc = 0, high_pc = 0;
  bool regabi = false;
  std::vector<GoParam> params; // inputs and results in order: what the ABI model lays out
  int32_t pcln_args = -1;      // the compiler's argument-area size, when .gopclntab has it
  // Results nobody can name: a binary without DWARF whose spec declares none. The probe still
  // times its calls; its return events carry no values.
  bool results_unknown = false;
  // DWARF or the spec said what the parameters are; without either a probe reads no values, and
  // there is nothing to check against the argument size.
  bool declared = false;
  // .gopclntab records the argument area, which holds no register-assigned results: results
  // declared for a register-ABI function of a binary without DWARF cannot be checked.
  bool results_unchecked = false;
};

// Where the types and functions come from; `debug` and `pcln` may be null.
struct SignatureSources {
  const BinaryImage &image;
  DebugInfo *debug;
  const Pclntab *pcln;
  TypeTable &types;
};

// Throws UserError at the probe: [unknown-function], [params-mismatch], [no-dwarf-params].
ProbeSignature resolve_signature(const ProbeSpec &probe, const SignatureSources &sources);

// The compiler recorded the size of the whole argument area: a signature that does not add up to it
// is missing a parameter (DWARF omits blank and unnamed ones) or has a wrong one, and values read by
// it would be wrong. Returns why the signature cannot be trusted ("" when it adds up, or when there
// is nothing to check it against). Results that are not known (neither DWARF nor the spec names
// them) are only allowed to take no argument space: the parameters alone must then add up.
std::string check_argument_width(const ProbeSignature &signature, const FunctionLayout &layout,
                                 const SignatureSources &sources);

std::string describe_params(const std::vector<GoParam> &params, const TypeTable &types);

} // namespace weave

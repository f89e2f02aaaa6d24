#include "abi/abi.h"

#include <stdexcept>

namespace weave {

namespace {

uint64_t align_up(uint64_t value, uint64_t align) {
  return align <= 1 ? value : (value + align - 1) / align * align;
}

// Assigner runs the register assignment of abi-internal.md ("Function call argument and result
// passing") over one signature. Integer and float registers are counted separately; an argument
// either fits entirely in the remaining registers or goes entirely on the stack, and the indexes are
// rolled back so that a later, smaller argument can still take registers.
class Assigner {
public:
  Assigner(const TypeTable &types, const AbiConfig &config) : types_(types), config_(config) {}

  ParamLocation assign(TypeId id, bool is_result) {
    const GoType &type = types_.at(id);
    ParamLocation loc;
    if (type.size == 0) {
      // Zero-sized values are stack-assigned with size 0 but still align the stack offset.
      stack_ = align_up(stack_, type.align);
      loc.on_stack = true;
      loc.stack_offset = stack_;
      return loc;
    }
    int saved_int = next_int_, saved_float = next_float_;
    if (registerize(id, 0, loc.pieces)) {
      if (!is_result) {
        spill_ = align_up(spill_, type.align);
        loc.spill_offset = static_cast<int64_t>(spill_);
        spill_ += type.size;
      }
      return loc;
    }
    next_int_ = saved_int;
    next_float_ = saved_float;
    loc.pieces.clear();
    stack_ = align_up(stack_, type.align);
    loc.on_stack = true;
    loc.stack_offset = stack_;
    stack_ += type.size;
    return loc;
  }

  void start_results() {
    stack_ = align_up(stack_, config_.ptr_size);
    next_int_ = next_float_ = 0;
  }

  uint64_t stack() const { return stack_; }
  uint64_t spill() const { return spill_; }

private:
  bool take_int(uint64_t size, uint64_t offset, std::vector<RegPiece> &pieces) {
    // A value wider than a register (int64 on 386) takes consecutive registers.
    uint64_t words = (size + config_.ptr_size - 1) / config_.ptr_size;
    if (next_int_ + static_cast<int>(words) > config_.int_regs)
      return false;
    for (uint64_t w = 0; w < words; ++w) {
      uint64_t piece = std::min<uint64_t>(config_.ptr_size, size - w * config_.ptr_size);
      pieces.push_back({RegClass::Int, next_int_++, piece, offset + w * config_.ptr_size});
    }
    return true;
  }

  bool take_float(uint64_t size, uint64_t offset, std::vector<RegPiece> &pieces) {
    if (next_float_ + 1 > config_.float_regs)
      return false;
    pieces.push_back({RegClass::Float, next_float_++, size, offset});
    return true;
  }

  bool registerize(TypeId id, uint64_t base, std::vector<RegPiece> &pieces) {
    const GoType &type = types_.at(id);
    uint64_t ptr = static_cast<uint64_t>(config_.ptr_size);
    switch (type.kind) {
    case TypeKind::Bool:
    case TypeKind::Int:
    case TypeKind::Uint:
    case TypeKind::Uintptr:
    case TypeKind::Pointer:
    case TypeKind::UnsafePointer:
    case TypeKind::Map:
    case TypeKind::Chan:
    case TypeKind::Func:
      return take_int(type.size, base, pieces);
    case TypeKind::Float:
      return take_float(type.size, base, pieces);
    case TypeKind::Complex: {
      uint64_t half = type.size / 2;
      if (next_float_ + 2 > config_.float_regs)
        return false;
      return take_float(half, base, pieces) && take_float(half, base + half, pieces);
    }
    case TypeKind::String:
      return take_int(ptr, base, pieces) && take_int(ptr, base + ptr, pieces);
    case TypeKind::Slice:
      return take_int(ptr, base, pieces) && take_int(ptr, base + ptr, pieces) &&
             take_int(ptr, base + 2 * ptr, pieces);
    case TypeKind::Interface:
      return take_int(ptr, base, pieces) && take_int(ptr, base + ptr, pieces);
    case TypeKind::Array:
      // Length 0 takes nothing, length 1 is its element, anything longer never goes in registers.
      if (type.count == 0)
        return true;
      if (type.count == 1)
        return registerize(type.elem, base, pieces);
      return false;
    case TypeKind::Struct:
      for (const GoField &field : type.fields)
        if (!registerize(field.type, base + field.offset, pieces))
          return false;
      return true;
    case TypeKind::Unsupported:
      break;
    }
    throw std::invalid_argument("the Go ABI cannot place a value of type " + type.name);
  }

  const TypeTable &types_;
  const AbiConfig &config_;
  int next_int_ = 0;
  int next_float_ = 0;
  uint64_t stack_ = 0;
  uint64_t spill_ = 0;
};

} // namespace

AbiConfig abi_internal_amd64() { return {"ABIInternal", 9, 15, 8}; }
AbiConfig abi_internal_arm64() { return {"ABIInternal", 16, 16, 8}; }
AbiConfig abi0(int ptr_size) { return {"ABI0", 0, 0, ptr_size}; }

FunctionLayout assign_locations(const TypeTable &types, const std::vector<TypeId> &inputs,
                                const std::vector<TypeId> &results, const AbiConfig &config) {
  Assigner assigner(types, config);
  FunctionLayout layout;
  for (TypeId id : inputs)
    layout.inputs.push_back(assigner.assign(id, false));
  assigner.start_results();
  for (TypeId id : results)
    layout.results.push_back(assigner.assign(id, true));
  // Stack results end the stack area; the spill area for register inputs follows, pointer-aligned.
  uint64_t ptr = static_cast<uint64_t>(config.ptr_size);
  layout.spill_base = align_up(assigner.stack(), ptr);
  for (ParamLocation &loc : layout.inputs)
    if (loc.spill_offset >= 0)
      loc.spill_offset += static_cast<int64_t>(layout.spill_base);
  layout.arg_width = layout.spill_base + align_up(assigner.spill(), ptr);
  return layout;
}

ArchRegisters amd64_registers() {
  ArchRegisters regs;
  // Integer argument order of ABIInternal on amd64 (abi-internal.md, "amd64 architecture"),
  // as field names of the kernel's struct pt_regs.
  regs.int_args = {"ax", "bx", "cx", "di", "si", "r8", "r9", "r10", "r11"};
  regs.int_arg_names = {"RAX", "RBX", "RCX", "RDI", "RSI", "R8", "R9", "R10", "R11"};
  regs.sp = "sp";
  regs.g = "r14";
  regs.g_name = "R14";
  regs.stack_args_offset = 8; // the return address CALL pushed
  return regs;
}

ArchRegisters arm64_registers() {
  ArchRegisters regs;
  for (int i = 0; i < 16; ++i) {
    regs.int_args.push_back("regs[" + std::to_string(i) + "]");
    regs.int_arg_names.push_back("R" + std::to_string(i));
  }
  regs.sp = "sp";
  regs.g = "regs[28]";
  regs.g_name = "R28";
  regs.float_arg_prefix = "F"; // not "X": on arm64 X0 reads as the integer register
  regs.stack_args_offset = 8; // FixedFrameSize: 0(RSP) is the caller's saved LR slot
  return regs;
}

ArchRegisters i386_registers() {
  ArchRegisters regs;
  regs.sp = "sp";
  regs.stack_args_offset = 4;
  return regs;
}

TargetAbi target_abi(const std::string &goarch, int go_major, int go_minor) {
  auto at_least = [&](int minor) { return go_major > 1 || (go_major == 1 && go_minor >= minor); };
  TargetAbi t;
  if (goarch == "amd64") {
    t.regs = amd64_registers();
    t.internal = abi_internal_amd64();
    t.has_regabi = at_least(17);
  } else if (goarch == "arm64") {
    t.regs = arm64_registers();
    t.internal = abi_internal_arm64();
    t.has_regabi = at_least(18);
  } else if (goarch == "386") {
    t.regs = i386_registers();
    t.ptr_size = 4;
  } else {
    throw std::invalid_argument("no Go ABI model for GOARCH " + goarch);
  }
  return t;
}

AbiConfig function_abi(const TargetAbi &target, bool compiled_regabi) {
  return target.has_regabi && compiled_regabi ? target.internal : abi0(target.ptr_size);
}

} // namespace weave

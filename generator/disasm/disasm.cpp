#include "disasm/disasm.h"

#include <Zydis/Zydis.h>

#include <algorithm>

#include <fmt/format.h>

namespace weave {

namespace {

// The Go amd64 prologue (cmd/internal/obj/x86/obj6.go, stacksplit) compares SP, or SP minus the
// frame size computed into a scratch register, with g.stackguard0 at 16(R14) in ABIInternal (or
// through a register loaded from TLS in ABI0), then branches to the morestack call at the end of
// the function with JBE (or JLS, the same opcode).
// `guard` is the offset of g.stackguard0 (2 words into runtime.g: 16 on 64-bit, 8 on 386).
// The compared register must be SP or hold SP minus the frame (`sp_derived`): a closure's bounds
// check on its context (`CMPQ 16(DX), $0; JLS panic`, esbuild 0.25's css_parser func1) has the same
// memory operand and branch, but the function has no stack check at all.
bool is_stack_bound_compare(const ZydisDecodedInstruction &insn, const ZydisDecodedOperand *ops,
                            int64_t guard, ZydisRegister sp, ZydisRegister sp_derived) {
  if (insn.mnemonic != ZYDIS_MNEMONIC_CMP || insn.operand_count_visible != 2)
    return false;
  if (ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
      (ops[0].reg.value != sp && (sp_derived == ZYDIS_REGISTER_NONE || ops[0].reg.value != sp_derived)))
    return false;
  const ZydisDecodedOperand &op = ops[1];
  return op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.disp.has_displacement && op.mem.disp.value == guard &&
         op.mem.index == ZYDIS_REGISTER_NONE && op.mem.segment != ZYDIS_REGISTER_FS &&
         op.mem.segment != ZYDIS_REGISTER_GS;
}

// `LEAQ -n(SP), R` or `MOVQ SP, R` (then `SUBQ $n, R`): R holds SP minus the frame for the compare.
ZydisRegister sp_copy(const ZydisDecodedInstruction &insn, const ZydisDecodedOperand *ops, ZydisRegister sp) {
  if (insn.operand_count_visible != 2 || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER)
    return ZYDIS_REGISTER_NONE;
  if (insn.mnemonic == ZYDIS_MNEMONIC_LEA && ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[1].mem.base == sp &&
      ops[1].mem.index == ZYDIS_REGISTER_NONE)
    return ops[0].reg.value;
  if (insn.mnemonic == ZYDIS_MNEMONIC_MOV && ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[1].reg.value == sp)
    return ops[0].reg.value;
  return ZYDIS_REGISTER_NONE;
}

// `MOVQ 16(reg), reg2` (MOVL 8(reg), reg2 on 386): g.stackguard0 loaded for Go 1.16's big-frame check.
bool is_stackguard_load(const ZydisDecodedInstruction &insn, const ZydisDecodedOperand *ops, int64_t guard) {
  return insn.mnemonic == ZYDIS_MNEMONIC_MOV && insn.operand_count_visible == 2 &&
         ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
         ops[1].mem.disp.has_displacement && ops[1].mem.disp.value == guard &&
         ops[1].mem.index == ZYDIS_REGISTER_NONE && ops[1].mem.segment != ZYDIS_REGISTER_FS &&
         ops[1].mem.segment != ZYDIS_REGISTER_GS;
}

// A decoder for amd64 (long mode) or 386 code.
ZydisDecoder x86_decoder(bool long_mode) {
  ZydisDecoder decoder;
  if (long_mode)
    ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  else
    ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LEGACY_32, ZYDIS_STACK_WIDTH_32);
  return decoder;
}

// `CMPQ reg, $StackPreempt`: StackPreempt is uintptrMask & -1314 (0xfffffade; sign-extended on amd64).
bool is_preempt_compare(const ZydisDecodedInstruction &insn, const ZydisDecodedOperand *ops, ZydisRegister reg) {
  return insn.mnemonic == ZYDIS_MNEMONIC_CMP && insn.operand_count_visible == 2 &&
         ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[0].reg.value == reg &&
         ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
         static_cast<int32_t>(static_cast<uint32_t>(ops[1].imm.value.u)) == -1314;
}

CodeFacts analyze_x86(const std::vector<uint8_t> &code, uint64_t vaddr, bool long_mode) {
  CodeFacts facts;
  ZydisDecoder decoder = x86_decoder(long_mode);
  const int64_t guard = long_mode ? 16 : 8;
  const ZydisRegister sp = long_mode ? ZYDIS_REGISTER_RSP : ZYDIS_REGISTER_ESP;
  ZydisRegister sp_derived = ZYDIS_REGISTER_NONE;
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  size_t offset = 0;
  int index = 0;
  bool saw_compare = false;
  // Go 1.16's check for frames over StackBig (4 KB) reads g.stackguard0 into a register, compares it
  // with StackPreempt (JEQ morestack), then compares SP-relative arithmetic with the frame size
  // (JLS morestack): `MOVQ 16(CX), SI; CMPQ SI, $-0x522; JEQ m; LEAQ n(SP), AX; SUBQ SI, AX;
  // CMPQ AX, $size; JLS m` (go1.16 cmd/internal/obj/x86/obj6.go, stacksplit). The body starts after
  // the second branch, which goes to the same morestack call as the first.
  ZydisRegister guard_reg = ZYDIS_REGISTER_NONE;
  bool saw_preempt_compare = false;
  uint64_t morestack = 0; // target of the JEQ after the StackPreempt compare
  bool saw_any_compare = false;
  // Go text holds no data between instructions (jump tables are separate symbols) and pads with
  // INT3, so a linear sweep from the entry to the end decodes every instruction.
  while (offset < code.size()) {
    ZyanStatus status =
        ZydisDecoderDecodeFull(&decoder, code.data() + offset, code.size() - offset, &insn, ops);
    if (!ZYAN_SUCCESS(status)) {
      facts.error = fmt::format("cannot decode the instruction at {:#x}", vaddr + offset);
      facts.returns.clear();
      return facts;
    }
    uint64_t address = vaddr + offset;
    if (insn.mnemonic == ZYDIS_MNEMONIC_RET)
      facts.returns.push_back(address);
    // The check is within the first few instructions: [LEAQ -n(SP), R12 | MOVQ SP, R12; SUBQ $n, R12;
    // JB ...] CMPQ ..., 16(R14); JBE.
    if (index < 10) {
      bool forward = insn.operand_count_visible == 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
                     ops[0].imm.value.s > 0; // to the morestack call after the body
      uint64_t target = forward ? address + insn.length + static_cast<uint64_t>(ops[0].imm.value.s) : 0;
      if (ZydisRegister copy = sp_copy(insn, ops, sp); copy != ZYDIS_REGISTER_NONE)
        sp_derived = copy;
      if (is_stack_bound_compare(insn, ops, guard, sp, sp_derived)) {
        saw_compare = true;
      } else if (saw_compare && !facts.after_stack_check) {
        if (insn.mnemonic == ZYDIS_MNEMONIC_JBE && forward)
          facts.after_stack_check = address + insn.length;
        saw_compare = false;
      } else if (is_stackguard_load(insn, ops, guard)) {
        guard_reg = ops[0].reg.value;
      } else if (guard_reg != ZYDIS_REGISTER_NONE && is_preempt_compare(insn, ops, guard_reg)) {
        saw_preempt_compare = true;
      } else if (saw_preempt_compare && !morestack) {
        if (insn.mnemonic == ZYDIS_MNEMONIC_JZ && forward)
          morestack = target;
        saw_preempt_compare = false;
      } else if (morestack && !facts.after_stack_check) {
        if (insn.mnemonic == ZYDIS_MNEMONIC_CMP)
          saw_any_compare = true;
        else if (saw_any_compare && insn.mnemonic == ZYDIS_MNEMONIC_JBE && target == morestack)
          facts.after_stack_check = address + insn.length;
        else
          saw_any_compare = false;
      }
    }
    offset += insn.length;
    ++index;
  }
  return facts;
}

} // namespace

CodeFacts analyze_x86_64(const std::vector<uint8_t> &code, uint64_t vaddr) {
  return analyze_x86(code, vaddr, true);
}

CodeFacts analyze_i386(const std::vector<uint8_t> &code, uint64_t vaddr) {
  return analyze_x86(code, vaddr, false);
}

CodeFacts analyze_arm64(const std::vector<uint8_t> &code, uint64_t vaddr) {
  constexpr uint32_t kRet = 0xd65f03c0;              // ret x30
  constexpr uint32_t kLoadStackguard = 0xf9400b90;   // ldr x16, [x28, #16]: MOVD 16(R28), R16
  constexpr uint32_t kBranchCondMask = 0xff000010;   // b.cond: 0101 0100 imm19 0 cond
  constexpr uint32_t kBranchCond = 0x54000000;
  constexpr uint32_t kCondLs = 9;                    // unsigned lower or same
  constexpr size_t kPrologueWords = 8;
  CodeFacts facts;
  bool loaded_stackguard = false;
  for (size_t offset = 0; offset + 4 <= code.size(); offset += 4) {
    uint32_t word = static_cast<uint32_t>(code[offset]) | static_cast<uint32_t>(code[offset + 1]) << 8 |
                    static_cast<uint32_t>(code[offset + 2]) << 16 |
                    static_cast<uint32_t>(code[offset + 3]) << 24;
    if (word == kRet)
      facts.returns.push_back(vaddr + offset);
    if (offset / 4 >= kPrologueWords || facts.after_stack_check)
      continue;
    if (offset == 0)
      loaded_stackguard = word == kLoadStackguard;
    else if (loaded_stackguard && (word & kBranchCondMask) == kBranchCond && (word & 0xf) == kCondLs) {
      uint32_t imm19 = (word >> 5) & 0x7ffff;
      if (imm19 != 0 && !(imm19 & 0x40000)) // forward, to the morestack call after the body
        facts.after_stack_check = vaddr + offset + 4;
    }
  }
  return facts;
}

namespace {

// Zydis register -> DWARF amd64 number (System V psABI): RAX 0, RDX 1, RCX 2, RBX 3, RSI 4, RDI 5,
// RBP 6, RSP 7, R8-R15 8-15; -1 for others. Sub-registers count as their whole register.
int dwarf_number_i386(ZydisRegister reg) {
  ZydisRegister wide = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LEGACY_32, reg);
  static const ZydisRegister order[] = {ZYDIS_REGISTER_EAX, ZYDIS_REGISTER_ECX, ZYDIS_REGISTER_EDX, ZYDIS_REGISTER_EBX,
                                        ZYDIS_REGISTER_ESP, ZYDIS_REGISTER_EBP, ZYDIS_REGISTER_ESI, ZYDIS_REGISTER_EDI};
  for (int i = 0; i < 8; ++i)
    if (order[i] == wide)
      return i;
  return -1;
}

int dwarf_number(ZydisRegister reg) {
  ZydisRegister wide = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
  static const ZydisRegister order[] = {ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RDX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RBX,
                                        ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RBP, ZYDIS_REGISTER_RSP,
                                        ZYDIS_REGISTER_R8,  ZYDIS_REGISTER_R9,  ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R11,
                                        ZYDIS_REGISTER_R12, ZYDIS_REGISTER_R13, ZYDIS_REGISTER_R14, ZYDIS_REGISTER_R15};
  for (int i = 0; i < 16; ++i)
    if (order[i] == wide)
      return i;
  return -1;
}

} // namespace

namespace {

Writes x86_writes(const std::vector<uint8_t> &code, uint64_t vaddr, uint64_t start, uint64_t end, bool long_mode) {
  const int nregs = long_mode ? 16 : 8, sp_number = long_mode ? 7 : 4;
  const ZydisRegister sp = long_mode ? ZYDIS_REGISTER_RSP : ZYDIS_REGISTER_ESP;
  const ZydisRegister ip = long_mode ? ZYDIS_REGISTER_RIP : ZYDIS_REGISTER_NONE;
  Writes w;
  if (start < vaddr || end > vaddr + code.size() || start >= end) {
    w.unknown_stack = true;
    for (int r = 0; r < nregs; ++r)
      w.regs.push_back(r);
    return w;
  }
  ZydisDecoder decoder = x86_decoder(long_mode);
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  // SP holds no variable: a CALL's push and return leave it where it was.
  auto reg = [&](int r) {
    if (r >= 0 && r != sp_number && std::find(w.regs.begin(), w.regs.end(), r) == w.regs.end())
      w.regs.push_back(r);
  };
  for (uint64_t at = start; at < end;) {
    size_t offset = at - vaddr;
    if (ZYAN_FAILED(ZydisDecoderDecodeFull(&decoder, code.data() + offset, code.size() - offset, &insn, ops))) {
      w.unknown_stack = true;
      for (int r = 0; r < nregs; ++r)
        reg(r);
      return w;
    }
    if (insn.mnemonic == ZYDIS_MNEMONIC_CALL) {
      for (int r = 0; r < nregs; ++r)
        if (r != sp_number) // a call returns with SP where it was; every other register may be reused
          reg(r);
      w.unknown_stack = true; // and the callee may store through a pointer into this frame
    }
    for (int i = 0; i < insn.operand_count; ++i) {
      const ZydisDecodedOperand &op = ops[i];
      if (!(op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
        continue;
      if (op.type == ZYDIS_OPERAND_TYPE_REGISTER) {
        reg(long_mode ? dwarf_number(op.reg.value) : dwarf_number_i386(op.reg.value));
      } else if (op.type == ZYDIS_OPERAND_TYPE_MEMORY) {
        if (op.mem.base == sp && op.mem.index == ZYDIS_REGISTER_NONE) {
          int64_t from = op.mem.disp.has_displacement ? op.mem.disp.value : 0;
          w.stack.push_back({from, from + op.size / 8});
        } else if ((op.mem.base != ip && op.mem.base != ZYDIS_REGISTER_NONE) || op.mem.index != ZYDIS_REGISTER_NONE ||
                   (!long_mode && op.mem.base == ZYDIS_REGISTER_NONE && op.mem.segment != ZYDIS_REGISTER_DS)) {
          // Through BP, an index, or a pointer, which may hold the address of a local in this
          // frame: any slot may be written. RIP-relative stores reach globals only.
          w.unknown_stack = true;
        }
      }
    }
    at += insn.length;
  }
  return w;
}

Jumps x86_jumps(const std::vector<uint8_t> &code, uint64_t vaddr, bool long_mode) {
  Jumps out;
  ZydisDecoder decoder = x86_decoder(long_mode);
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  for (size_t offset = 0; offset < code.size();) {
    const uint64_t at = vaddr + offset;
    if (ZYAN_FAILED(ZydisDecoderDecodeFull(&decoder, code.data() + offset, code.size() - offset, &insn, ops))) {
      out.error = fmt::format("cannot decode the instruction at {:#x}", at);
      return out;
    }
    if (insn.meta.category == ZYDIS_CATEGORY_COND_BR || insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR) {
      ZyanU64 target = 0;
      if (insn.operand_count_visible >= 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
          ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[0], at, &target)))
        out.jumps.push_back({at, long_mode ? target : (target & 0xffffffffu)});
      else
        out.computed = true;
    } else if (insn.meta.category == ZYDIS_CATEGORY_CALL) {
      ZyanU64 target = 0;
      if (insn.operand_count_visible >= 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
          ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[0], at, &target)))
        out.calls.push_back({at, long_mode ? target : (target & 0xffffffffu)});
    }
    offset += insn.length;
  }
  return out;
}

} // namespace

Jumps x86_64_jumps(const std::vector<uint8_t> &code, uint64_t vaddr) { return x86_jumps(code, vaddr, true); }

Jumps i386_jumps(const std::vector<uint8_t> &code, uint64_t vaddr) { return x86_jumps(code, vaddr, false); }

Writes x86_64_writes(const std::vector<uint8_t> &code, uint64_t vaddr, uint64_t start, uint64_t end) {
  return x86_writes(code, vaddr, start, end, true);
}

Writes i386_writes(const std::vector<uint8_t> &code, uint64_t vaddr, uint64_t start, uint64_t end) {
  return x86_writes(code, vaddr, start, end, false);
}


Jumps arm64_jumps(const std::vector<uint8_t> &code, uint64_t vaddr) {
  Jumps out;
  // imm (bits wide) * 4, sign-extended, from the branch's own address.
  auto target = [](uint64_t at, uint32_t imm, int bits) {
    int64_t words = static_cast<int64_t>(imm);
    if (imm & (1u << (bits - 1)))
      words -= int64_t(1) << bits;
    return at + static_cast<uint64_t>(words * 4);
  };
  for (size_t offset = 0; offset + 4 <= code.size(); offset += 4) {
    const uint64_t at = vaddr + offset;
    uint32_t w = static_cast<uint32_t>(code[offset]) | static_cast<uint32_t>(code[offset + 1]) << 8 |
                 static_cast<uint32_t>(code[offset + 2]) << 16 | static_cast<uint32_t>(code[offset + 3]) << 24;
    if ((w & 0xfc000000) == 0x14000000) // B imm26
      out.jumps.push_back({at, target(at, w & 0x3ffffff, 26)});
    else if ((w & 0xfc000000) == 0x94000000) // BL imm26
      out.calls.push_back({at, target(at, w & 0x3ffffff, 26)});
    else if ((w & 0xff000000) == 0x54000000) // B.cond (and BC.cond) imm19
      out.jumps.push_back({at, target(at, (w >> 5) & 0x7ffff, 19)});
    else if ((w & 0x7e000000) == 0x34000000) // CBZ, CBNZ imm19
      out.jumps.push_back({at, target(at, (w >> 5) & 0x7ffff, 19)});
    else if ((w & 0x7e000000) == 0x36000000) // TBZ, TBNZ imm14
      out.jumps.push_back({at, target(at, (w >> 5) & 0x3fff, 14)});
    else if ((w & 0xfe000000) == 0xd6000000) { // branch to a register
      uint32_t opc = (w >> 21) & 0xf;
      if (opc != 1 && opc != 9 && opc != 2 && opc != 10) // not BLR(AA/AB) or RET(AA/AB)
        out.computed = true;
    }
  }
  if (code.size() % 4)
    out.error = fmt::format("{} bytes at {:#x} are not whole 4-byte arm64 instructions", code.size(), vaddr);
  return out;
}

} // namespace weave

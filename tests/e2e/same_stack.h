// The check every stack test makes: a traced stack (JSON "stack") against the list the program got
// from runtime.Callers + runtime.CallersFrames at that call, whole: the same length, and each
// frame's function, file and line, so a walk that stops early or invents a frame fails; and each
// named frame from `module`. Header-only, for doctest test programs.
#pragma once

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace e2e {

inline void check_same_stack(const nlohmann::json &got, const nlohmann::json &want, const std::string &module) {
  REQUIRE(got.is_array());
  CHECK(got.size() == want.size());
  for (size_t f = 0; f < std::min(got.size(), want.size()); ++f) {
    CAPTURE(f);
    CHECK(got[f]["function"] == want[f]["function"]);
    CHECK(got[f]["file"] == want[f]["file"]);
    CHECK(got[f]["line"] == want[f]["line"]);
    CHECK(got[f]["module"] == module);
  }
}

// A JSON pc ("0x4a3a39") as a number.
inline uint64_t stack_pc(const nlohmann::json &pc) { return std::stoull(pc.get<std::string>(), nullptr, 16); }

// The whole window stack of a Go function that C called back (the cgo fixtures), against the
// program's two views of it: `callers` (runtime.Callers in the callback, each frame's function, file
// and line) and `c_stack` (c3's own backtrace(): "pc", glibc's "symbol", and "go" for a frame in Go
// code). The traced stack must be the callback's frames up to runtime.cgocallback; crosscall2 and
// cgo's C export wrapper goCallback, which neither view lists (c3 recorded its stack before it
// called them; runtime.Callers skips from cgocallback to the goroutine); c3's backtrace() frames,
// named by `addr2line` (a C pc to its frames, innermost first, inlined ones included) and checked
// against glibc's name where the dynamic symbol table gives one; then the goroutine's frames from the
// cgo call down. Frame for frame, and c2 on at the very return addresses backtrace() saw (c3's
// differs by the one call to record_c_stack on the same line).
inline void check_cgo_callback_stack(const nlohmann::json &got, const nlohmann::json &callers,
                                     const nlohmann::json &c_stack, const std::string &module,
                                     const std::function<std::vector<nlohmann::json>(uint64_t)> &addr2line) {
  using nlohmann::json;
  REQUIRE(got.is_array());
  size_t cb = 0;
  while (cb < callers.size() && callers[cb]["function"] != "runtime.cgocallback")
    ++cb;
  REQUIRE(cb + 1 < callers.size());
  REQUIRE(c_stack.size() >= 4); // c3, c2, c1, the cgo wrapper (and asmcgocall, Go code)
  json want = json::array();
  auto go_frame = [&](json w) {
    w["module"] = module;
    want.push_back(w);
  };
  for (size_t f = 0; f <= cb; ++f)
    go_frame(callers[f]);
  REQUIRE(got.size() > cb + 2);
  CHECK(got[cb + 1]["function"] == "crosscall2");
  want.push_back({{"function", "crosscall2"}, {"file", got[cb + 1]["file"]}, {"line", got[cb + 1]["line"]},
                  {"module", module}});
  json wrapper = addr2line(stack_pc(got[cb + 2]["pc"])).back();
  CHECK(wrapper["function"] == "goCallback");
  CHECK(wrapper["file"].get<std::string>().find("_cgo_export.c") != std::string::npos);
  want.push_back(wrapper);
  std::vector<uint64_t> c_pcs;
  for (const json &f : c_stack) {
    c_pcs.push_back(stack_pc(f["pc"]));
    if (f.contains("go")) {
      go_frame(f["go"]);
      continue;
    }
    // "/path/cgo(c3+0x9) [0x4a3a39]", the name from the dynamic symbol table, which Go 1.19's
    // external link exports C functions to; newer Go's does not ("/path/cgo() [0x...]"), and then
    // the name is addr2line's alone.
    std::string symbol = f["symbol"];
    size_t open = symbol.find('('), plus = symbol.find('+', open);
    REQUIRE(open != std::string::npos);
    std::vector<json> frames = addr2line(c_pcs.back());
    REQUIRE(!frames.empty());
    if (plus != std::string::npos && plus > open + 1)
      CHECK(frames.back()["function"] == symbol.substr(open + 1, plus - open - 1));
    for (const json &w : frames)
      want.push_back(w);
  }
  for (size_t f = cb + 1; f < callers.size(); ++f)
    go_frame(callers[f]);
  check_same_stack(got, want, module);
  for (size_t f = 1; f < c_pcs.size() && cb + 3 + f < got.size(); ++f) {
    CAPTURE(f);
    CHECK(stack_pc(got[cb + 3 + f]["pc"]) == c_pcs[f]);
  }
}

// The same callback's stack in a stripped cgo build (-ldflags=-s -w: no DWARF, no .symtab): the
// functions only, the C ones as glibc's backtrace_symbols names them from .dynsym, and a bare PC
// (no function) where neither view has a name (Go 1.21 on exports no C functions there); every named
// frame from `module`; c2 on at backtrace()'s very return addresses.
inline void check_stripped_cgo_callback_stack(const nlohmann::json &got, const nlohmann::json &callers,
                                              const nlohmann::json &c_stack, const std::string &module) {
  using nlohmann::json;
  size_t cb = 0;
  while (cb < callers.size() && callers[cb]["function"] != "runtime.cgocallback")
    ++cb;
  REQUIRE(cb < callers.size());
  std::vector<std::string> want;
  for (size_t f = 0; f <= cb; ++f)
    want.push_back(callers[f]["function"]);
  want.push_back("crosscall2");
  want.push_back("goCallback");
  for (const json &f : c_stack) {
    if (f.contains("go")) {
      want.push_back(f["go"]["function"]);
      continue;
    }
    std::string symbol = f["symbol"];
    size_t open = symbol.find('('), plus = symbol.find('+', open);
    want.push_back(open == std::string::npos || plus == std::string::npos || plus == open + 1
                       ? ""
                       : symbol.substr(open + 1, plus - open - 1));
  }
  for (size_t f = cb + 1; f < callers.size(); ++f)
    want.push_back(callers[f]["function"]);
  REQUIRE(got.is_array());
  CHECK(got.size() == want.size());
  for (size_t f = 0; f < std::min(got.size(), want.size()); ++f) {
    CAPTURE(f);
    if (want[f].empty()) {
      CHECK(!got[f].contains("function"));
      continue;
    }
    CHECK(got[f]["function"] == want[f]);
    CHECK(got[f]["module"] == module);
  }
  for (size_t f = 1; f < c_stack.size() && cb + 3 + f < got.size(); ++f) {
    CAPTURE(f);
    CHECK(stack_pc(got[cb + 3 + f]["pc"]) == stack_pc(c_stack[f]["pc"]));
  }
}

} // namespace e2e

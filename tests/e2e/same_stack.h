// The check every stack test makes: a traced stack (JSON "stack") against the list the program got
// from runtime.Callers + runtime.CallersFrames at that call, whole: the same length, and each
// frame's function, file and line, so a walk that stops early or invents a frame fails; and each
// named frame from `module`. Header-only, for doctest test programs.
#pragma once

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

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

} // namespace e2e

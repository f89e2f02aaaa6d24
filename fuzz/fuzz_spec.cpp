// libFuzzer target: the spec parser (YAML and JSON through yaml-cpp, the linter, the schema
// validator, the Spec builder) and the rendering of its errors. Any exception other than a
// UserError, any crash, hang or sanitizer report is a bug.
#include "spec/spec.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

// Every text of a parsed spec ends up in probes.json: nlohmann::json throws on bytes that are not
// UTF-8, which here escapes as a crash.
void dump_params(const std::vector<weave::ParamSpec> &params);
void dump_type(const weave::TypeSpec &type) {
  (void)nlohmann::json(type.expr).dump();
  dump_params(type.fields);
  for (const auto &elem : type.elem)
    dump_type(elem);
}
void dump_params(const std::vector<weave::ParamSpec> &params) {
  for (const auto &param : params) {
    (void)nlohmann::json(param.name).dump();
    dump_type(param.type);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    weave::Spec spec = weave::parse_spec_text(text, "fuzz.yaml");
    (void)weave::dump_spec(spec);
    for (const auto &probe : spec.probes) {
      (void)nlohmann::json({probe.name, probe.function}).dump();
      for (const auto &capture : probe.captures)
        (void)nlohmann::json(capture.expr).dump();
      for (const auto &pattern : probe.exclude)
        (void)nlohmann::json(pattern).dump();
      dump_params(probe.params);
      dump_params(probe.results);
    }
  } catch (const weave::UserError &e) {
    // The file does not exist, so no source line is read: only the message is rendered.
    (void)weave::format_error(e);
  }
  return 0;
}

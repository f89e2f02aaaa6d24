// Files compiled into weave (templates, schema): see cmake/embed.cmake.
#pragma once

#include <map>
#include <string>

namespace weave {

// Path relative to the source tree ("templates/weave_bpf.h") -> contents.
const std::map<std::string, std::string> &embedded_resources();

// The contents of one embedded file; throws std::logic_error when it is not embedded (a build bug).
const std::string &resource(const std::string &path);

} // namespace weave

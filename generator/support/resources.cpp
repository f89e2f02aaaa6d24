#include "support/resources.h"

#include <stdexcept>

namespace weave {

const std::string &resource(const std::string &path) {
  auto &files = embedded_resources();
  auto it = files.find(path);
  if (it == files.end())
    throw std::logic_error("resource not embedded: " + path);
  return it->second;
}

} // namespace weave

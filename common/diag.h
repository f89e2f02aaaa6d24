// Diagnostics shared by every generator stage.
//
// UserError is what a user can act on: bad spec, unknown function, unsupported type, a binary that
// is not Go. It carries a stable id ("unknown-function"), an optional spec location and a hint,
// and is printed bpftrace-style: "spec.yaml:3:15: error[unknown-function]: ...", the source line,
// a caret, then the hint. Anything else that escapes (std::logic_error, ...) is an internal bug.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace weave {

// SourceLoc is a position in a spec file (1-based line and column); line 0 means "no location".
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;
};

class UserError : public std::runtime_error {
public:
  UserError(std::string id, std::string message, SourceLoc loc = {}, std::string hint = {})
      : std::runtime_error(message), id(std::move(id)), loc(std::move(loc)), hint(std::move(hint)) {}

  std::string id;
  SourceLoc loc;
  std::string hint;
  // Further independent errors found in the same run (a spec with three typos gets three
  // messages), in the order they are shown; format_error prints them after this one.
  std::vector<UserError> others;
};

// At most this many errors of one run are printed; the rest are counted.
inline constexpr size_t kMaxErrorsShown = 20;

// The first of `errors` (in order of their location) carrying the rest as others. `errors` must not
// be empty; an error that already carries others is flattened.
UserError combine_errors(std::vector<UserError> errors);

// The offset of the first byte of `text` that does not belong to well-formed UTF-8, or npos.
size_t invalid_utf8(std::string_view text);

// Text that is not a file, shown under errors located in it by this name (weave trace's command
// line, say); a name given again replaces its text.
void set_source_text(const std::string &name, std::string text);

// Renders an error with its location, the offending source line and a caret under the column
// (when the file can be read), and the hint; then its others (at most kMaxErrorsShown in all, then
// how many more there are) and, for more than one, the count.
std::string format_error(const UserError &error);

// Up to `max` candidates closest to `wanted` by edit distance (case-insensitive), best first,
// only those close enough to be a plausible typo. Ties keep the candidates' order.
std::vector<std::string> nearest_names(std::string_view wanted,
                                       const std::vector<std::string> &candidates, size_t max = 3);

// "did you mean X?" / "did you mean X, Y or Z?" / "" when nothing is close.
std::string did_you_mean(std::string_view wanted, const std::vector<std::string> &candidates);

// For a Go name given without its package's whole import path ("server.(*client).processPub" for
// "github.com/nats-io/nats-server/v2/server.(*client).processPub"): the candidates that end with
// "/" + `wanted`, then, when none does, did_you_mean's typos. "" when nothing fits.
std::string did_you_mean_go_name(std::string_view wanted, const std::vector<std::string> &candidates);

} // namespace weave

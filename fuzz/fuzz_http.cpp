// libFuzzer target: the HTTP parsers of runtime/http.h, what a hostile collector's response or a
// hostile /metrics client's request reaches. The first byte picks the body limit and where the
// rest is cut in two; the response is parsed whole and in those two pieces, byte by byte for
// short inputs, and every way must agree. A crash, a hang, a body past its limit, a status
// outside 100-599 or two parses that disagree is a bug.
#include "http.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

struct Outcome {
  bool done, failed;
  int status;
  std::string body;
  bool truncated;
  bool operator==(const Outcome &) const = default;
};

Outcome parse(std::string_view in, size_t limit, size_t piece, bool close) {
  weave::HttpResponseParser parser(limit);
  for (size_t at = 0; at < in.size(); at += piece)
    parser.feed(in.data() + at, std::min(piece, in.size() - at));
  if (close)
    parser.finish();
  if (parser.body().size() > limit)
    __builtin_trap();
  if (parser.done() && (parser.status() < 100 || parser.status() > 599))
    __builtin_trap();
  if (parser.done() && parser.failed())
    __builtin_trap();
  if (close && !parser.done() && !parser.failed())
    __builtin_trap(); // after the close it has decided
  return {parser.done(), parser.failed(), parser.status(), parser.body(), parser.truncated()};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const size_t limits[] = {0, 1, 16, 4096};
  size_t limit = limits[data[0] & 3];
  bool close = data[0] & 4;
  size_t piece = 1 + (data[0] >> 3);
  std::string_view in(reinterpret_cast<const char *>(data + 1), size - 1);
  Outcome whole = parse(in, limit, in.size() ? in.size() : 1, close);
  if (!(parse(in, limit, piece, close) == whole))
    __builtin_trap();
  if (in.size() <= 512 && !(parse(in, limit, 1, close) == whole))
    __builtin_trap();

  weave::HttpRequestHead request;
  std::string error;
  weave::HttpParse parsed = weave::parse_http_request(in, request, error);
  if (parsed == weave::HttpParse::Complete && (request.method.empty() || request.path.find('?') != std::string::npos))
    __builtin_trap();
  if (parsed == weave::HttpParse::Bad && error.empty())
    __builtin_trap();
  (void)weave::printable_prefix(in);
  return 0;
}

// format_bench: the tracer's user-space hot path alone. Decodes and formats N event records of a
// manifest's first probe through EventWriter (runtime/output.h), exactly as the ring-buffer
// callback does, into a file descriptor (/dev/null by default), once as text and once as JSON, and
// reports the cost per event and the write sizes. No BPF involved: this is what the tracer spends
// per event on top of the probe itself. With a return probe paired with the first one, a third line
// measures both through the Calls stage (decode, pair, call id) into the JSON writer.
//
//   format_bench probes.json [N] [OUT]
//
// Built by bench/run.sh against the runtime library (libweave_runtime_core.a) of a weave build.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "calls.h"
#include "event.h"
#include "manifest.h"
#include "output.h"

using namespace weave;

namespace {

// One record for `probe`: every field filled by its kind (ints count up with i, strings hold
// "hello, weave"), a fresh timestamp, no faults.
void fill(std::vector<uint8_t> &record, const ManifestProbe &probe, uint64_t i) {
  weave_event_header h = {};
  h.ts_ns = 1'000'000'000 + i * 1000;
  h.goid = 1;
  h.pid = 4242;
  h.tid = 4242;
  h.probe_id = probe.id;
  h.kind = probe.attach.empty() || probe.attach[0].kind == AttachKind::Entry ? WEAVE_EVENT_ENTRY
                                                                             : WEAVE_EVENT_RETURN;
  std::memcpy(record.data(), &h, sizeof h);
  static const char text[] = "hello, weave";
  for (const ManifestCapture &capture : probe.captures)
    for (const ManifestField &field : capture.fields) {
      uint64_t v = i;
      if (field.kind == FieldKind::String) {
        v = sizeof text - 1;
        std::memcpy(record.data() + field.offset + 8, text, std::min<size_t>(v, field.max_len));
      }
      std::memcpy(record.data() + field.offset, &v, 8);
    }
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: format_bench probes.json [N] [OUT]\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  std::optional<Manifest> manifest = parse_manifest(text.str(), error);
  if (!manifest || manifest->probes.empty()) {
    std::fprintf(stderr, "format_bench: %s: %s\n", argv[1], error.c_str());
    return 1;
  }
  uint64_t n = argc > 2 ? std::stoull(argv[2]) : 2'000'000;
  const char *out_path = argc > 3 ? argv[3] : "/dev/null";
  const ManifestProbe &probe = manifest->probes[0];

  // A batch of distinct records, cycled through, as the ring buffer would hand them over.
  constexpr size_t kBatch = 1024;
  std::vector<std::vector<uint8_t>> records(kBatch, std::vector<uint8_t>(probe.event_size));
  for (size_t i = 0; i < kBatch; ++i)
    fill(records[i], probe, i);

  for (OutputFormat format : {OutputFormat::Text, OutputFormat::Json}) {
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      std::perror(out_path);
      return 1;
    }
    EventWriter writer(*manifest, format, 1'000'000'000, fd);
    auto start = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      const std::vector<uint8_t> &r = records[i % kBatch];
      writer.on_event(r.data(), r.size());
      if (i % kBatch == kBatch - 1)
        writer.flush(); // the end of a drained batch
    }
    writer.flush();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    off_t bytes = lseek(fd, 0, SEEK_CUR);
    close(fd);
    if (writer.failed()) {
      std::fprintf(stderr, "format_bench: %s\n", writer.error().c_str());
      return 1;
    }
    std::printf("%s %.1f ns/event %.0f events/s %.1f bytes/event\n",
                format == OutputFormat::Text ? "text" : "json", seconds * 1e9 / double(n),
                double(n) / seconds, bytes > 0 ? double(bytes) / double(n) : 0.0);
  }
  // The tracer's whole path for a traced call: both records through the Calls stage (decode, pair,
  // call id) into the writer, as JSON. Needs the return probe that pairs with the first one.
  uint32_t ret_id = UINT32_MAX;
  for (const ManifestProbe &p : manifest->probes)
    if (p.id != probe.id && !p.attach.empty() && p.attach[0].kind == AttachKind::Return &&
        entry_probe_of(*manifest, p.id) == probe.id)
      ret_id = p.id;
  if (ret_id == UINT32_MAX)
    return 0;
  const ManifestProbe &ret = manifest->probes[ret_id];
  std::vector<std::vector<uint8_t>> pairs(kBatch);
  for (size_t i = 0; i < kBatch; ++i) {
    bool is_return = i % 2;
    pairs[i].resize(is_return ? ret.event_size : probe.event_size);
    fill(pairs[i], is_return ? ret : probe, i / 2);
  }
  int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::perror(out_path);
    return 1;
  }
  struct ToWriter final : EventSink {
    EventWriter writer;
    ToWriter(const Manifest &m, int fd) : writer(m, OutputFormat::Json, 1'000'000'000, fd) {}
    void on_event(const CallEvent &event) override { writer.on_event(event); }
  } sink(*manifest, fd);
  Calls calls(*manifest, 1'000'000'000);
  calls.add_sink(&sink);
  auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    std::vector<uint8_t> &r = pairs[i % kBatch];
    // Each call a fresh timestamp, its return 500 ns later with that duration (as BPF measures it).
    weave_event_header h;
    std::memcpy(&h, r.data(), sizeof h);
    h.ts_ns = 1'000'000'000 + (i / 2) * 1000 + (i % 2) * 500;
    std::memcpy(r.data(), &h, sizeof h);
    if (i % 2 && ret.duration_offset) {
      uint64_t d = 500;
      std::memcpy(r.data() + ret.duration_offset, &d, 8);
    }
    calls.on_record(r.data(), r.size());
    if (i % kBatch == kBatch - 1)
      sink.writer.flush();
  }
  sink.writer.flush();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  off_t bytes = lseek(fd, 0, SEEK_CUR);
  close(fd);
  std::printf("json+calls %.1f ns/event %.0f events/s %.1f bytes/event (entry and return paired, %llu open)\n",
              seconds * 1e9 / double(n), double(n) / seconds, bytes > 0 ? double(bytes) / double(n) : 0.0,
              static_cast<unsigned long long>(calls.open_calls()));
  return 0;
}

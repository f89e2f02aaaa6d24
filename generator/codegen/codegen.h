// Stage 6 — codegen: renders templates/ with the plan into the files of an output directory.
// Pure text in, text out: nothing here touches the disk or runs a program.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace weave {

struct Plan;

struct GeneratedFile {
  std::string name; // relative to the output directory
  std::string content;
};

// probes.bpf.c, probes.h, weave_bpf.h, weave_event.h, Makefile.bpf and probes.json, in that order.
// Identical plans give byte-identical files.
std::vector<GeneratedFile> generate(const Plan &plan);

// probes.bpf.c alone, as generate() writes it. The tests render one program at a time with it, to
// check that every event a program serves would have got the same code on its own.
std::string render_bpf_source(const Plan &plan);

// The manifest alone (probes.json): the plan serialized for the tracer.
std::string render_manifest(const Plan &plan);

// clang's arguments after the executable to build probes.bpf.o inside the output directory; the same
// flags appear in the generated Makefile.bpf. -fdebug-compilation-dir keeps the object free of the
// directory it was built in, so it is byte-identical wherever it is built.
std::vector<std::string> bpf_clang_args(const Plan &plan);

// The compiler flags alone (no input or output files).
std::vector<std::string> bpf_cflags(const Plan &plan);

} // namespace weave

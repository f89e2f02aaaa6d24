// Helpers shared by the unit tests that work on files and fixtures.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace weave_test {

// The Go fixtures tests/CMakeLists.txt builds with Debian's Go 1.19 (-trimpath: the same bytes on
// every machine).
inline const std::string kFixtures = WEAVE_FIXTURE_DIR;
inline const std::string kFixture = kFixtures + "/fixture";
inline const std::string kStripped = kFixtures + "/fixture_stripped";
inline const std::string kFixture386 = kFixtures + "/fixture_386";
inline const std::string kFixtureArm64 = kFixtures + "/fixture_arm64";

inline std::vector<uint8_t> read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::string &path, const void *data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char *>(data), static_cast<std::streamsize>(size));
  REQUIRE(out.good());
}

inline void write_file(const std::string &path, const std::vector<uint8_t> &bytes) {
  write_file(path, bytes.data(), bytes.size());
}

// The standard output of a shell command, which must succeed.
inline std::string run(const std::string &command) {
  FILE *pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
    out.append(buffer, n);
  int status = pclose(pipe);
  REQUIRE_MESSAGE(status == 0, command << " failed: " << out.substr(0, 2000));
  return out;
}

// Build info as cmd/go writes it (read by gobinary/buildinfo.cpp): a uvarint-length-
// prefixed string, and modinfo framed by its 16-byte sentinels.
inline void append_varint_string(std::vector<uint8_t> &blob, const std::string &text) {
  uint64_t size = text.size();
  do {
    uint8_t byte = size & 0x7f;
    size >>= 7;
    blob.push_back(byte | (size ? 0x80 : 0));
  } while (size);
  blob.insert(blob.end(), text.begin(), text.end());
}

inline std::string framed_modinfo(const std::string &lines) {
  const std::string start("0w\xaf\x0c\x92t\x08\x02\x41\xe1\xc1\x07\xe6\xd6\x18\xe6", 16);
  const std::string end("\xf9"
                        "2C1\x86\x18 r\x00\x82\x42\x10\x41\x16\xd8\xf2",
                        16);
  return start + lines + end;
}

// TempDir is a fresh directory under $TMPDIR, removed with everything in it at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "weave-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  std::string file(const std::string &name) const { return path + "/" + name; }
};

} // namespace weave_test

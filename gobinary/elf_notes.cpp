#include "gobinary/elf_notes.h"

#include "common/diag.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

namespace weave {

namespace {
constexpr unsigned kGoBuildIdNote = 4; // cmd/link: ELF_NOTE_GOBUILDID_TAG
constexpr unsigned kGnuBuildIdNote = 3; // NT_GNU_BUILD_ID

std::string hex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}
} // namespace

std::string read_build_id(Elf *elf) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0)
    return {};
  std::string gnu;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_NOTE)
      continue;
    Elf_Data *data = elf_getdata_rawchunk(elf, phdr.p_offset, phdr.p_filesz, ELF_T_NHDR);
    if (!data)
      continue;
    size_t offset = 0, name_off = 0, desc_off = 0;
    GElf_Nhdr note;
    while ((offset = gelf_getnote(data, offset, &note, &name_off, &desc_off)) > 0) {
      const char *base = static_cast<const char *>(data->d_buf);
      std::string owner(base + name_off, strnlen(base + name_off, note.n_namesz));
      if (owner == "Go" && note.n_type == kGoBuildIdNote) {
        // cmd/go writes base64-like text, but the note is bytes: anything else is shown as hex,
        // as the build id travels in probes.json (JSON strings are UTF-8) and in messages.
        std::string id(base + desc_off, strnlen(base + desc_off, note.n_descsz));
        bool text = invalid_utf8(id) == std::string::npos &&
                    std::all_of(id.begin(), id.end(), [](unsigned char c) { return c >= 0x20 && c != 0x7f; });
        return text ? id : "hex:" + hex(id);
      }
      if (owner == "GNU" && note.n_type == kGnuBuildIdNote && gnu.empty())
        gnu = "gnu:" + hex(std::string_view(base + desc_off, note.n_descsz));
    }
  }
  return gnu;
}

std::string read_build_id_file(const std::string &path, std::string &error) {
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("cannot open: ") + strerror(errno);
    return {};
  }
  Elf *elf = elf_begin(fd, ELF_C_READ, nullptr);
  std::string id;
  if (!elf || elf_kind(elf) != ELF_K_ELF)
    error = "not an ELF file";
  else
    id = read_build_id(elf);
  if (elf)
    elf_end(elf);
  close(fd);
  return id;
}

namespace {

std::optional<std::string> find_note(Elf_Data *data, const std::string &owner, unsigned type) {
  size_t offset = 0, name_off = 0, desc_off = 0;
  GElf_Nhdr note;
  while ((offset = gelf_getnote(data, offset, &note, &name_off, &desc_off)) > 0) {
    const char *base = static_cast<const char *>(data->d_buf);
    if (std::string(base + name_off, strnlen(base + name_off, note.n_namesz)) == owner && note.n_type == type)
      return std::string(base + desc_off, strnlen(base + desc_off, note.n_descsz));
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> read_note_file(const std::string &path, const std::string &owner, unsigned type,
                                          std::string &error) {
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("cannot open: ") + strerror(errno);
    return std::nullopt;
  }
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  std::optional<std::string> found;
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    error = "not an ELF file";
  } else {
    size_t phnum = 0;
    if (elf_getphdrnum(elf, &phnum) == 0)
      for (size_t i = 0; i < phnum && !found; ++i) {
        GElf_Phdr phdr;
        if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_NOTE)
          continue;
        if (Elf_Data *data = elf_getdata_rawchunk(elf, phdr.p_offset, phdr.p_filesz, ELF_T_NHDR))
          found = find_note(data, owner, type);
      }
    for (Elf_Scn *scn = nullptr; !found && (scn = elf_nextscn(elf, scn));) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
        continue;
      if (Elf_Data *data = elf_getdata(scn, nullptr))
        found = find_note(data, owner, type);
    }
  }
  if (elf)
    elf_end(elf);
  close(fd);
  return found;
}

} // namespace weave

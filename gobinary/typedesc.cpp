// Stage 2 — binary: the type descriptor reader (see typedesc.h for the layouts it knows).
//
// Sources: go1.19 runtime/type.go (_type, uncommontype, method, imethod, arraytype, chantype,
// slicetype, functype, ptrtype, structfield, structtype, interfacetype, maptype, name) and
// runtime/symtab.go (moduledata); go1.26 internal/abi/type.go and map.go (the same records under
// new names; the swiss-table MapType from 1.24); Go 1.18's reflect structField.offsetEmbed (the
// embedded bit below the offset, before 1.19).
#include "gobinary/typedesc.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <set>

namespace weave {

namespace {

uint32_t le32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

uint16_t le16(const uint8_t *p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

std::string hex(uint64_t v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%#llx", static_cast<unsigned long long>(v));
  return buffer;
}

constexpr uint8_t kTflagUncommon = 1;
constexpr uint32_t kNoOffset = 0xffffffffu; // a method's type offset the linker dropped
// More fields or parameters than this are a damaged descriptor, not a Go type (the compiler's own
// limits are lower: a struct past ~10k fields is not a program anyone links).
constexpr uint64_t kMaxFields = 1 << 16;

} // namespace

std::optional<TypeDescriptor> TypeDescriptors::decode(uint64_t vaddr, std::string &why) const {
  const uint64_t ps = static_cast<uint64_t>(pcln_.ptr_size());
  const uint64_t header = 4 * ps + 16;
  const uint64_t types = pcln_.types_start(), etypes = pcln_.types_end();
  auto fail = [&](std::string what) -> std::optional<TypeDescriptor> {
    why = std::move(what);
    return std::nullopt;
  };
  // type_at checks the header (kind, alignments, equal, gcdata, ptrToThis) and decodes the name.
  auto described = pcln_.type_at(vaddr);
  if (!described)
    return fail("no descriptor starts at " + hex(vaddr) + " (its header or name does not decode)");
  const uint8_t *h = pcln_.bytes_at(vaddr, header);
  if (!h)
    return fail("the header at " + hex(vaddr) + " is not in the file");
  TypeDescriptor d;
  d.address = vaddr;
  d.kind = static_cast<GoKind>(described->kind);
  d.name = described->name;
  d.size = described->size;
  const uint8_t tflag = h[2 * ps + 4];
  d.named = (tflag & 4) != 0;
  d.align = h[2 * ps + 5];
  d.field_align = h[2 * ps + 6];
  const GoVersion v = pcln_.go_version();
  // KindDirectIface (1 << 5) moved from the kind byte to the tflag in Go 1.26 (internal/abi/type.go).
  const bool tflag_direct = v.major > 1 || (v.major == 1 && v.minor >= 26);
  d.direct_iface = ((tflag_direct ? tflag : h[2 * ps + 7]) & 0x20) != 0;
  const bool old = v.major == 1 && v.minor <= 18;       // structfield.offsetAnon
  const bool old_maps = v.major == 1 && v.minor <= 23;  // maptype with buckets, not groups
  if (uint32_t ptr_to_this = le32(h + 4 * ps + 12); ptr_to_this)
    d.references.push_back(types + ptr_to_this);

  auto word = [&](uint64_t at) -> std::optional<uint64_t> { return pcln_.pointer_at(at); };
  // A pointer to another descriptor: inside the types, aligned. (A nil element is no Go type.)
  auto type_pointer = [&](uint64_t at, const char *what, uint64_t &out) -> bool {
    auto p = word(at);
    if (!p || *p < types || *p >= etypes || *p % ps) {
      why = std::string(what) + " of " + d.name + " at " + hex(vaddr) + " does not point at a descriptor";
      return false;
    }
    out = *p;
    d.references.push_back(*p);
    return true;
  };
  const uint64_t body = vaddr + header;
  uint64_t extra = 0; // the kind's own record, where an uncommon type follows
  switch (d.kind) {
  case GoKind::Pointer:
  case GoKind::Slice:
    if (!type_pointer(body, "the element", d.elem))
      return std::nullopt;
    extra = ps;
    break;
  case GoKind::Array: {
    if (!type_pointer(body, "the element", d.elem))
      return std::nullopt;
    auto len = word(body + 2 * ps);
    if (!len)
      return fail("the length of " + d.name + " is not in the file");
    d.len = *len;
    extra = 3 * ps;
    break;
  }
  case GoKind::Chan: {
    if (!type_pointer(body, "the element", d.elem))
      return std::nullopt;
    auto dir = word(body + ps);
    if (!dir || *dir < 1 || *dir > 3)
      return fail("the direction of " + d.name + " is not 1, 2 or 3");
    d.chan_dir = static_cast<int>(*dir);
    extra = 2 * ps;
    break;
  }
  case GoKind::Map:
    if (!type_pointer(body, "the key", d.key) || !type_pointer(body + ps, "the value", d.elem))
      return std::nullopt;
    extra = old_maps ? 4 * ps + 8 : (7 * ps + 4 + ps - 1) / ps * ps;
    // Then the bucket or group type, the hasher, and the sizes (runtime/type.go maptype up to
    // 1.23: keysize, elemsize uint8, bucketsize uint16; internal/abi SwissMapType / MapType from
    // 1.24: GroupSize, SlotSize, ElemOff uintptr). Not a reference of the walk: the compiler's
    // bucket types are no type of the program's. Read for the walk over a map without DWARF.
    if (auto group = word(body + 2 * ps); group && *group >= types && *group < etypes && *group % ps == 0) {
      if (old_maps) {
        if (const uint8_t *sizes = pcln_.bytes_at(body + 4 * ps, 4)) {
          d.group = *group;
          d.slot_key = sizes[0];
          d.slot_value = sizes[1];
          d.group_size = le16(sizes + 2);
        }
      } else if (auto gsize = word(body + 4 * ps), ssize = word(body + 5 * ps), eoff = word(body + 6 * ps);
                 gsize && ssize && eoff) {
        d.group = *group;
        d.group_size = *gsize;
        d.slot_size = *ssize;
        d.elem_offset = *eoff;
      }
    }
    break;
  case GoKind::Struct: {
    auto fields = word(body + ps), count = word(body + 2 * ps), cap = word(body + 3 * ps);
    if (!fields || !count || !cap || *count != *cap || *count > kMaxFields)
      return fail("the field list of " + d.name + " is not a slice of fields");
    const uint64_t field_size = 3 * ps;
    for (uint64_t i = 0; i < *count; ++i) {
      uint64_t at = *fields + i * field_size;
      auto name_ptr = word(at), offset = word(at + 2 * ps);
      if (!name_ptr || !offset)
        return fail("field " + std::to_string(i) + " of " + d.name + " is not in the file");
      TypeDescriptor::Field f;
      uint8_t flags = 0;
      auto name = pcln_.name_at_address(*name_ptr, &flags);
      if (!name)
        return fail("the name of field " + std::to_string(i) + " of " + d.name + " does not decode");
      f.name = *name;
      if (!type_pointer(at + ps, ("the type of field " + f.name).c_str(), f.type))
        return std::nullopt;
      f.offset = old ? *offset >> 1 : *offset;
      f.embedded = old ? (*offset & 1) != 0 : (flags & 8) != 0;
      if (f.offset > d.size)
        return fail("field " + f.name + " of " + d.name + " starts past the struct's size");
      d.fields.push_back(std::move(f));
    }
    extra = 4 * ps;
    break;
  }
  case GoKind::Interface: {
    auto methods = word(body + ps), count = word(body + 2 * ps), cap = word(body + 3 * ps);
    if (!methods || !count || !cap || *count != *cap || *count > kMaxFields)
      return fail("the method list of " + d.name + " is not a slice of methods");
    d.interface_methods = *count;
    if (*count) {
      const uint8_t *m = pcln_.bytes_at(*methods, 8 * *count);
      if (!m)
        return fail("the methods of " + d.name + " are not in the file");
      for (uint64_t i = 0; i < *count; ++i)
        if (uint32_t t = le32(m + 8 * i + 4); t && t != kNoOffset && t < etypes - types)
          d.references.push_back(types + t);
    }
    extra = 4 * ps;
    break;
  }
  case GoKind::Func: {
    const uint8_t *counts = pcln_.bytes_at(body, 4);
    if (!counts)
      return fail("the parameter counts of " + d.name + " are not in the file");
    uint64_t n = le16(counts) + (le16(counts + 2) & 0x7fff);
    uint64_t params = body + ps + ((tflag & kTflagUncommon) ? 16 : 0);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t t = 0;
      if (!type_pointer(params + i * ps, "a parameter", t))
        return std::nullopt;
    }
    extra = ps;
    break;
  }
  default:
    break;
  }
  if (tflag & kTflagUncommon) {
    const uint8_t *u = pcln_.bytes_at(body + extra, 16);
    if (!u)
      return fail("the uncommon type of " + d.name + " is not in the file");
    uint16_t mcount = le16(u + 4);
    uint32_t moff = le32(u + 8);
    if (mcount) {
      const uint8_t *m = pcln_.bytes_at(body + extra + moff, 16ull * mcount);
      if (!m)
        return fail("the methods of " + d.name + " are not in the file");
      for (uint16_t i = 0; i < mcount; ++i)
        if (uint32_t t = le32(m + 16 * i + 4); t && t != kNoOffset && t < etypes - types)
          d.references.push_back(types + t);
    }
  }
  return d;
}

const TypeDescriptor *TypeDescriptors::at(uint64_t vaddr) {
  if (auto it = decoded_.find(vaddr); it != decoded_.end())
    return &it->second;
  if (failed_.count(vaddr))
    return nullptr;
  std::string why;
  auto d = decode(vaddr, why);
  if (!d) {
    failed_[vaddr] = why;
    return nullptr;
  }
  return &decoded_.emplace(vaddr, std::move(*d)).first->second;
}

std::string TypeDescriptors::failure(uint64_t vaddr) const {
  auto it = failed_.find(vaddr);
  return it == failed_.end() ? "" : it->second;
}

// moduledata.typelinks and itablinks are slices right after textsectmap: words 40 and 43 in Go
// 1.16–1.17, 42 and 45 in 1.18–1.19 (rodata, gofunc added), 44 and 47 in 1.20+ (covctrs, ecovctrs),
// one later once epclntab follows gofunc (Go 1.26). Each candidate is accepted only when both are
// slices (len == cap) whose contents are in the file and whose first typelinks are descriptors.
bool TypeDescriptors::locate_links(uint64_t &typelinks, uint64_t &ntypelinks, uint64_t &itablinks,
                                   uint64_t &nitab) const {
  const uint64_t md = pcln_.moduledata(), ps = static_cast<uint64_t>(pcln_.ptr_size());
  const uint64_t types = pcln_.types_start(), etypes = pcln_.types_end();
  if (!md || !types)
    return false;
  std::vector<uint64_t> candidates = {45, 44, 42, 40};
  for (uint64_t k = 36; k < 64; ++k)
    if (std::find(candidates.begin(), candidates.end(), k) == candidates.end())
      candidates.push_back(k);
  for (uint64_t index : candidates) {
    auto ptr = pcln_.pointer_at(md + index * ps), len = pcln_.pointer_at(md + (index + 1) * ps),
         cap = pcln_.pointer_at(md + (index + 2) * ps);
    auto iptr = pcln_.pointer_at(md + (index + 3) * ps), ilen = pcln_.pointer_at(md + (index + 4) * ps),
         icap = pcln_.pointer_at(md + (index + 5) * ps);
    if (!ptr || !len || !cap || *len != *cap || *len == 0 || *len > (etypes - types) / 4 || !iptr || !ilen ||
        !icap || *ilen != *icap || *ilen > (etypes - types) / 4)
      continue;
    const uint8_t *links = pcln_.bytes_at(*ptr, 4 * *len);
    if (!links || (*ilen && !pcln_.bytes_at(*iptr, *ilen * ps)))
      continue;
    bool ok = true;
    for (uint64_t i = 0; ok && i < *len; ++i) {
      uint32_t off = le32(links + 4 * i);
      ok = off < etypes - types && (i >= 4 || pcln_.type_at(types + off));
    }
    if (!ok)
      continue;
    typelinks = *ptr;
    ntypelinks = *len;
    itablinks = *iptr;
    nitab = *ilen;
    return true;
  }
  return false;
}

void TypeDescriptors::walk() {
  if (walked_)
    return;
  walked_ = true;
  const uint64_t types = pcln_.types_start(), ps = static_cast<uint64_t>(pcln_.ptr_size());
  uint64_t typelinks = 0, ntypelinks = 0, itablinks = 0, nitab = 0;
  if (!locate_links(typelinks, ntypelinks, itablinks, nitab))
    return;
  census_.located = true;
  census_.typelinks = ntypelinks;
  census_.itabs = nitab;
  std::deque<uint64_t> queue;
  std::set<uint64_t> seen;
  auto push = [&](uint64_t a) {
    if (seen.insert(a).second)
      queue.push_back(a);
  };
  const uint8_t *links = pcln_.bytes_at(typelinks, 4 * ntypelinks);
  for (uint64_t i = 0; i < ntypelinks; ++i)
    push(types + le32(links + 4 * i));
  // itab (go1.16-1.20 runtime.itab, go1.21+ internal/abi.ITab): inter *interfacetype, _type
  // *_type, hash, fun...
  std::vector<std::pair<std::optional<uint64_t>, std::optional<uint64_t>>> itab_words;
  for (uint64_t i = 0; i < nitab; ++i) {
    std::optional<uint64_t> inter, concrete;
    if (auto itab = pcln_.pointer_at(itablinks + i * ps)) {
      inter = pcln_.pointer_at(*itab);
      concrete = pcln_.pointer_at(*itab + ps);
    }
    for (const auto &t : {inter, concrete})
      if (t)
        push(*t);
    itab_words.emplace_back(inter, concrete);
  }
  while (!queue.empty()) {
    uint64_t a = queue.front();
    queue.pop_front();
    const TypeDescriptor *d = at(a);
    if (!d)
      continue;
    for (uint64_t r : d->references)
      push(r);
  }
  for (const auto &[address, d] : decoded_) {
    auto &list = by_name_[d.name];
    list.push_back(address);
  }
  census_.decoded = decoded_.size();
  for (const auto &[inter, concrete] : itab_words) {
    const TypeDescriptor *i = inter ? at(*inter) : nullptr, *c = concrete ? at(*concrete) : nullptr;
    if (i && c && i->kind == GoKind::Interface && i->interface_methods > 0 && c->kind != GoKind::Interface)
      itabs_.emplace_back(*inter, *concrete);
    else
      ++itabs_left_out_;
  }
  for (const auto &[address, why] : failed_)
    census_.failed.emplace_back(address, why);
}

void TypeDescriptors::scan() {
  if (scanned_)
    return;
  scanned_ = true;
  const uint64_t types = pcln_.types_start(), etypes = pcln_.types_end(), ps = static_cast<uint64_t>(pcln_.ptr_size());
  if (!types)
    return;
  std::map<std::string, std::vector<uint64_t>> found;
  for (uint64_t a = types; a < etypes; a += ps) {
    if (failed_.count(a))
      continue;
    const TypeDescriptor *d = nullptr;
    if (auto it = decoded_.find(a); it != decoded_.end()) {
      d = &it->second;
    } else {
      std::string why;
      auto decoded = decode(a, why); // not remembered as failed: most addresses are no descriptor at all
      if (!decoded)
        continue;
      d = &decoded_.emplace(a, std::move(*decoded)).first->second;
    }
    if (by_name_.count(d->name))
      continue; // the walk's: reached from the program's own tables
    found[d->name].push_back(a);
    ++census_.scanned;
  }
  for (auto &[name, list] : found)
    by_name_[name] = std::move(list);
}

const TypeDescriptor *TypeDescriptors::find(const std::string &name) {
  walk();
  if (!by_name_.count(name))
    scan();
  auto it = by_name_.find(name);
  if (it == by_name_.end() || it->second.size() != 1)
    return nullptr;
  return at(it->second.front());
}

bool TypeDescriptors::ambiguous(const std::string &name) {
  walk();
  if (!by_name_.count(name))
    scan();
  auto it = by_name_.find(name);
  return it != by_name_.end() && it->second.size() > 1;
}

const TypeDescriptors::Census &TypeDescriptors::census() {
  walk();
  return census_;
}

const std::vector<std::pair<uint64_t, uint64_t>> &TypeDescriptors::itabs() {
  walk();
  return itabs_;
}

size_t TypeDescriptors::itabs_left_out() {
  walk();
  return itabs_left_out_;
}

const std::map<uint64_t, TypeDescriptor> &TypeDescriptors::all() {
  walk();
  return decoded_;
}

std::vector<std::string> TypeDescriptors::names() {
  walk();
  scan();
  std::vector<std::string> out;
  for (const auto &[name, list] : by_name_)
    out.push_back(name);
  return out;
}

} // namespace weave

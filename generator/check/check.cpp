#include "check/check.h"

#include "build/build.h"
#include "common/safe_io.h"

#include "payload.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace weave {

namespace {

// ---- Line diff --------------------------------------------------------------------------------

// Lines including their '\n' (the last one may lack it), so "a" and "a\n" differ as they should.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

// Myers' greedy algorithm ("An O(ND) Difference Algorithm and Its Variations", 1986) on a[lo..]
// and b[lo..] after the common prefix and suffix are stripped. The V array of each round d is kept
// (only its live diagonals, -d-1..d+1) to walk the path back; past kMaxEdits edits the memory
// (about D² integers) is not worth it and the middle is reported as one replaced block, as GNU
// diff's heuristics also do for very different files.
constexpr long kMaxEdits = 2000;

void myers(const std::vector<std::string_view> &a, const std::vector<std::string_view> &b,
           size_t a_lo, size_t a_hi, size_t b_lo, size_t b_hi, std::vector<DiffLine> &out) {
  const long n = static_cast<long>(a_hi - a_lo), m = static_cast<long>(b_hi - b_lo);
  auto replace_block = [&] {
    for (size_t i = a_lo; i < a_hi; ++i)
      out.push_back({'-', i, b_lo});
    for (size_t j = b_lo; j < b_hi; ++j)
      out.push_back({'+', a_hi, j});
  };
  if (n == 0 || m == 0) {
    replace_block();
    return;
  }
  const long max_d = std::min(n + m, kMaxEdits);
  const long offset = max_d + 1;
  std::vector<int> v(static_cast<size_t>(2 * max_d + 3), 0);
  std::vector<std::vector<int>> trace; // trace[d][k + d + 1] = V[k] before round d
  long found = -1;
  for (long d = 0; d <= max_d && found < 0; ++d) {
    trace.emplace_back(v.begin() + (offset - d - 1), v.begin() + (offset + d + 2));
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                   ? v[offset + k + 1]
                   : v[offset + k - 1] + 1;
      long y = x - k;
      while (x < n && y < m && a[a_lo + x] == b[b_lo + y]) {
        ++x;
        ++y;
      }
      v[offset + k] = static_cast<int>(x);
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) {
    replace_block();
    return;
  }
  // Walk back from (n, m), collecting the script in reverse.
  std::vector<DiffLine> reversed;
  long x = n, y = m;
  for (long d = found; d >= 0; --d) {
    const std::vector<int> &vd = trace[static_cast<size_t>(d)];
    auto at = [&](long k) { return vd[static_cast<size_t>(k + d + 1)]; };
    long k = x - y;
    long prev_k = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
    long prev_x = d == 0 ? 0 : at(prev_k);
    long prev_y = d == 0 ? 0 : prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      --x;
      --y;
      reversed.push_back({' ', a_lo + x, b_lo + y});
    }
    if (d > 0) {
      if (x == prev_x)
        reversed.push_back({'+', a_lo + x, b_lo + y - 1});
      else
        reversed.push_back({'-', a_lo + x - 1, b_lo + y});
    }
    x = prev_x;
    y = prev_y;
  }
  out.insert(out.end(), reversed.rbegin(), reversed.rend());
}

// ---- Manifest diff ----------------------------------------------------------------------------

std::string render(const json &value) {
  if (value.is_string()) {
    const std::string &s = value.get_ref<const std::string &>();
    return s.empty() ? "\"\"" : s;
  }
  std::string text = value.dump();
  return text.size() > 120 ? text.substr(0, 117) + "..." : text;
}

// Where a change is, as the text before it ("probe main.F: capture r.ID: ") and after it
// (" (load 1 of 2)").
struct Where {
  std::string prefix;
  std::string suffix;
};

// What the enclosing element is, which decides how some keys are named.
struct Ctx {
  enum Kind { Other, Load, EventField } kind = Other;
  size_t load_index = 0;   // Load: 1-based
  bool stack_base = false; // Load: the read starts at the stack pointer
};

class ManifestDiff {
public:
  std::vector<std::string> lines;

  void object(const json &a, const json &b, const Where &where, const Ctx &ctx) {
    // An attach point's file offset and vaddr move together: one line for both.
    bool merge_vaddr = a.contains("file_offset") && b.contains("file_offset") &&
                       a.contains("vaddr") && b.contains("vaddr") &&
                       a["file_offset"] != b["file_offset"] && a["vaddr"] != b["vaddr"];
    std::vector<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it)
      keys.push_back(it.key());
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key()))
        keys.push_back(it.key());
    for (const std::string &key : keys) {
      if (merge_vaddr && key == "vaddr")
        continue;
      if (!b.contains(key)) {
        add(where, label(key, ctx) + " removed (was " + render(a[key]) + ")");
      } else if (!a.contains(key)) {
        add(where, label(key, ctx) + " added: " + render(b[key]));
      } else if (merge_vaddr && key == "file_offset") {
        add(where, fmt::format("{} {} -> {} (vaddr {} -> {})", label(key, ctx), render(a[key]),
                               render(b[key]), render(a["vaddr"]), render(b["vaddr"])));
      } else {
        value(key, a[key], b[key], where, ctx, a);
      }
    }
  }

private:
  void add(const Where &where, const std::string &what) {
    lines.push_back(where.prefix + what + where.suffix);
  }

  static std::string label(const std::string &key, const Ctx &ctx) {
    if (key == "offset" && ctx.kind == Ctx::Load)
      return ctx.load_index == 1 && ctx.stack_base ? "stack offset" : "field offset";
    if (key == "offset" && ctx.kind == Ctx::EventField)
      return "event offset";
    if (key == "size" && ctx.kind == Ctx::Load)
      return "load size";
    static const std::map<std::string, std::string> names = {
        {"build_id", "build id"},      {"go_version", "Go version"},
        {"go_type", "Go type"},        {"weave_version", "weave version"},
        {"format", "manifest format"}, {"file_offset", "file offset"},
        {"base", "base register"},     {"pointer_size", "pointer size"},
        {"length_read", "length"}};
    if (auto it = names.find(key); it != names.end())
      return it->second;
    std::string text = key;
    std::replace(text.begin(), text.end(), '_', ' ');
    return text;
  }

  void value(const std::string &key, const json &a, const json &b, const Where &where,
             const Ctx &ctx, const json &parent) {
    if (a == b)
      return;
    if (a.is_object() && b.is_object()) {
      Where inner = where;
      // "read" is how a value is read: its base and loads speak for themselves.
      if (key != "read")
        inner.prefix += label(key, ctx) + " ";
      Ctx next = ctx;
      if (a.contains("base")) // a read: does its chain start at the stack pointer?
        next.stack_base = a.value("base", "") == "sp" && b.value("base", "") == "sp";
      object(a, b, inner, next);
      return;
    }
    if (a.is_array() && b.is_array() && (contains_objects(a) || contains_objects(b))) {
      array(key, a, b, where, ctx);
      return;
    }
    add(where, fmt::format("{} {} -> {}", label(key, ctx), render(a), render(b)));
  }

  static bool contains_objects(const json &array) {
    return std::any_of(array.begin(), array.end(), [](const json &e) { return e.is_object(); });
  }

  // An element's identity within its array, and how to name it.
  struct Element {
    std::string id;
    std::string name; // "probe main.F", "entry", "" (a capture's only field)
  };

  // `other` is the array it is compared with: an attach point is numbered ("return #1") when
  // either side has more than one of its kind, so both sides name it alike.
  static std::vector<Element> elements(const std::string &key, const json &array,
                                       const json &other) {
    std::vector<Element> out;
    std::map<std::string, size_t> per_kind, kind_total;
    if (key == "attach")
      for (const json *side : {&array, &other}) {
        std::map<std::string, size_t> total;
        for (const json &e : *side)
          if (e.is_object())
            ++total[e.value("kind", "")];
        for (const auto &[kind, n] : total)
          kind_total[kind] = std::max(kind_total[kind], n);
      }
    for (size_t i = 0; i < array.size(); ++i) {
      const json &e = array[i];
      auto field = [&](const char *name) {
        return e.is_object() && e.contains(name) && e[name].is_string()
                   ? std::optional<std::string>(e[name].get<std::string>())
                   : std::nullopt;
      };
      if (key == "probes" && field("name")) {
        // A probe with return: true is two manifest entries of one name, its entry and its
        // return event: matched by name and kind, so removing `return: true` is one line.
        std::string kind = field("kind").value_or("");
        // An inlined copy's entry is told apart by its call site, as the tracer names it.
        std::string copy;
        if (e.contains("inlined_into") && e["inlined_into"].is_object()) {
          const json &into = e["inlined_into"];
          copy = fmt::format(" [inlined into {} at {}:{}]", into.value("function", "?"), into.value("file", "?"),
                             into.value("line", 0));
        }
        out.push_back({*field("name") + "#" + kind + copy,
                       "probe " + *field("name") + copy + (kind == "return" ? ": return event" : "")});
      } else if (key == "captures" && field("expr")) {
        out.push_back({*field("expr"), "capture " + *field("expr")});
      } else if (key == "fields" && field("name")) {
        out.push_back({*field("name"), field("name")->empty() ? "" : "." + *field("name")});
      } else if (key == "attach" && field("kind")) {
        std::string kind = *field("kind");
        size_t n = ++per_kind[kind];
        out.push_back({kind + "#" + std::to_string(n),
                       kind_total[kind] == 1 ? kind : fmt::format("{} #{}", kind, n)});
      } else if (key != "loads" && field("name")) {
        out.push_back({*field("name"), key + " " + *field("name")});
      } else {
        out.push_back({std::to_string(i), fmt::format("{}[{}]", key, i)});
      }
    }
    return out;
  }

  void array(const std::string &key, const json &a, const json &b, const Where &where,
             const Ctx &ctx) {
    if (key == "loads") {
      // The chain of loads of one read: by position, named by it.
      if (a.size() != b.size())
        add(where, fmt::format("loads {} -> {}", render(a), render(b)));
      for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        Ctx load = ctx;
        load.kind = Ctx::Load;
        load.load_index = i + 1;
        Where inner = where;
        inner.suffix = fmt::format(" (load {} of {}){}", i + 1, b.size(), where.suffix);
        element(key, a[i], b[i], inner, load);
      }
      return;
    }
    std::vector<Element> ea = elements(key, a, b), eb = elements(key, b, a);
    std::map<std::string, size_t> in_b;
    for (size_t j = 0; j < eb.size(); ++j)
      in_b.emplace(eb[j].id, j);
    std::map<std::string, size_t> in_a;
    for (size_t i = 0; i < ea.size(); ++i)
      in_a.emplace(ea[i].id, i);
    for (size_t i = 0; i < ea.size(); ++i) {
      auto it = in_b.find(ea[i].id);
      if (it == in_b.end()) {
        add(where, ea[i].name + " removed" + attach_detail(key, a[i]));
        continue;
      }
      Where inner = where;
      // "entry file offset ...", but "capture r.ID: field offset ...".
      if (!ea[i].name.empty())
        inner.prefix += ea[i].name + (key == "attach" ? " " : ": ");
      Ctx next = ctx;
      next.kind = key == "fields" ? Ctx::EventField : Ctx::Other;
      element(key, a[i], b[it->second], inner, next);
    }
    for (size_t j = 0; j < eb.size(); ++j)
      if (!in_a.count(eb[j].id))
        add(where, eb[j].name + " added" + attach_detail(key, b[j]));
  }

  static std::string attach_detail(const std::string &key, const json &e) {
    if (key == "attach" && e.is_object() && e.contains("file_offset"))
      return " (file offset " + render(e["file_offset"]) + ")";
    return "";
  }

  void element(const std::string &key, const json &a, const json &b, const Where &where,
               const Ctx &ctx) {
    if (a == b)
      return;
    if (a.is_object() && b.is_object()) {
      object(a, b, where, ctx);
      return;
    }
    add(where, fmt::format("{} -> {}", render(a), render(b)));
  }
};

void add_diff_lines(FileDrift &drift, const std::string &diff) {
  std::istringstream in(diff);
  std::string line;
  while (std::getline(in, line))
    drift.lines.push_back(line);
}

constexpr size_t kMaxManifestLines = 200;

void add_manifest_lines(FileDrift &drift, std::vector<std::string> changes) {
  size_t total = changes.size();
  if (total > kMaxManifestLines)
    changes.resize(kMaxManifestLines);
  for (auto &line : changes)
    drift.lines.push_back("  " + line);
  if (total > kMaxManifestLines)
    drift.lines.push_back(fmt::format("  ... and {} more changes", total - kMaxManifestLines));
}

} // namespace

std::vector<DiffLine> diff_lines(const std::vector<std::string_view> &a,
                                 const std::vector<std::string_view> &b) {
  std::vector<DiffLine> out;
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix])
    ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;
  for (size_t i = 0; i < prefix; ++i)
    out.push_back({' ', i, i});
  myers(a, b, prefix, a.size() - suffix, prefix, b.size() - suffix, out);
  for (size_t i = suffix; i > 0; --i)
    out.push_back({' ', a.size() - i, b.size() - i});
  return out;
}

std::string unified_diff(std::string_view old_text, std::string_view new_text,
                         const std::string &old_label, const std::string &new_label, int context,
                         size_t max_lines) {
  if (old_text == new_text)
    return {};
  std::vector<std::string_view> a = split_lines(old_text), b = split_lines(new_text);
  std::vector<DiffLine> script = diff_lines(a, b);
  // Lines of each side consumed before each script entry, for the hunk headers.
  std::vector<size_t> old_before(script.size() + 1), new_before(script.size() + 1);
  for (size_t i = 0; i < script.size(); ++i) {
    old_before[i + 1] = old_before[i] + (script[i].op != '+');
    new_before[i + 1] = new_before[i] + (script[i].op != '-');
  }
  std::vector<std::string> out;
  out.push_back("--- " + old_label);
  out.push_back("+++ " + new_label);
  const size_t ctx = static_cast<size_t>(std::max(context, 0));
  size_t i = 0;
  while (i < script.size()) {
    while (i < script.size() && script[i].op == ' ')
      ++i;
    if (i == script.size())
      break;
    size_t begin = i >= ctx ? i - ctx : 0;
    // Extend the hunk while the next change is within 2*context kept lines of this one.
    size_t end = i;
    while (true) {
      while (end < script.size() && script[end].op != ' ')
        ++end;
      size_t next = end;
      while (next < script.size() && script[next].op == ' ')
        ++next;
      if (next < script.size() && next - end <= 2 * ctx) {
        end = next;
        continue;
      }
      end = std::min(script.size(), end + ctx);
      break;
    }
    size_t old_count = old_before[end] - old_before[begin];
    size_t new_count = new_before[end] - new_before[begin];
    auto range = [](size_t before, size_t count) {
      size_t start = count == 0 ? before : before + 1;
      return count == 1 ? std::to_string(start) : fmt::format("{},{}", start, count);
    };
    out.push_back(fmt::format("@@ -{} +{} @@", range(old_before[begin], old_count),
                              range(new_before[begin], new_count)));
    for (size_t k = begin; k < end; ++k) {
      const DiffLine &d = script[k];
      std::string_view line = d.op == '+' ? b[d.new_index] : a[d.old_index];
      bool newline = !line.empty() && line.back() == '\n';
      if (newline)
        line.remove_suffix(1);
      out.push_back(std::string(1, d.op) + std::string(line));
      if (!newline)
        out.push_back("\\ No newline at end of file");
    }
    i = end;
  }
  std::string text;
  for (size_t k = 0; k < out.size() && k < max_lines; ++k)
    text += out[k] + "\n";
  if (out.size() > max_lines)
    text += fmt::format("... {} more diff lines\n", out.size() - max_lines);
  return text;
}

std::vector<std::string> manifest_changes(const json &checked_in, const json &regenerated) {
  ManifestDiff diff;
  if (checked_in.is_object() && regenerated.is_object())
    diff.object(checked_in, regenerated, {}, {});
  else if (checked_in != regenerated)
    diff.lines.push_back("the manifest is not a JSON object");
  return diff.lines;
}

CheckResult check_output(const std::vector<GeneratedFile> &generated, const std::string &dir) {
  CheckResult result;
  result.dir = dir;
  const GeneratedFile *manifest = nullptr;
  std::optional<std::string> manifest_on_disk;
  for (const GeneratedFile &file : generated) {
    result.compared.push_back(file.name);
    if (file.name == "probes.json")
      manifest = &file;
    fs::path path = fs::path(dir) / file.name;
    // The checked-in tree is input from whoever wrote the pull request: a link is not followed (it
    // could name /proc/self/environ), only a regular file is read (a FIFO would hang, a device
    // never end), and at most twice what weave generates. Anything else is drift, said as such.
    std::string text, why;
    ReadStatus read = read_regular_file(path.string(), std::max<size_t>(1 << 20, 2 * file.content.size()),
                                        false, text, why);
    std::optional<std::string> on_disk;
    if (read == ReadStatus::Ok)
      on_disk = std::move(text);
    if (file.name == "probes.json")
      manifest_on_disk = on_disk;
    if (read == ReadStatus::Missing) {
      result.drift.push_back({file.name, true, {"  missing: weave generates it"}});
      continue;
    }
    if (!on_disk) {
      result.drift.push_back({file.name, false, {"  the checked-in " + file.name + " " + why +
                                                 ": not read; weave generates a regular file"}});
      continue;
    }
    if (*on_disk == file.content)
      continue;
    FileDrift drift{file.name, false, {}};
    std::string diff = unified_diff(*on_disk, file.content, path.string() + " (checked in)",
                                    file.name + " (regenerated)");
    if (file.name == "probes.json") {
      json old_json = json::parse(*on_disk, nullptr, false);
      json new_json = json::parse(file.content, nullptr, false);
      if (old_json.is_discarded()) {
        drift.lines.push_back("  the checked-in file is not valid JSON; line diff:");
        add_diff_lines(drift, diff);
      } else if (std::vector<std::string> changes = manifest_changes(old_json, new_json);
                 !changes.empty()) {
        add_manifest_lines(drift, std::move(changes));
      } else {
        drift.lines.push_back("  same content, different text (formatting or key order):");
        add_diff_lines(drift, diff);
      }
    } else {
      add_diff_lines(drift, diff);
    }
    result.drift.push_back(std::move(drift));
  }

  // A checked-in or left-over tracer must carry the manifest weave generates now.
  fs::path tracer = fs::path(dir) / "tracer";
  std::error_code ec;
  fs::file_status tracer_status = fs::symlink_status(tracer, ec);
  if (manifest && fs::is_symlink(tracer_status)) {
    result.compared.push_back("tracer");
    result.drift.push_back({"tracer", false, {"  the checked-in tracer is a symbolic link (not followed): not read"}});
  } else if (manifest && fs::is_regular_file(tracer_status)) {
    result.compared.push_back("tracer");
    std::string error;
    std::optional<Payload> payload = read_payload(tracer.string(), error);
    // The probes it carries are only half of it: the runtime they were appended to must be weave's
    // own, of this version, for the architecture the probes are for.
    json regenerated = json::parse(manifest->content, nullptr, false);
    std::string arch = regenerated.is_discarded() ? "" : regenerated["target"].value("arch", "");
    std::string problem = runtime_identity_problem(tracer.string(), arch == "arm64" ? "arm64" : "amd64");
    if (!problem.empty()) {
      result.drift.push_back({"tracer", false, {"  the tracer " + problem + "; rebuild it (weave build)"}});
    } else if (!payload) {
      result.drift.push_back(
          {"tracer",
           false,
           {"  " + (error.empty() ? "carries no probes (it is the bare runtime)" : error)}});
    } else if (payload->manifest != manifest->content && payload->manifest == manifest_on_disk) {
      // Consistent with the tree: not drift of its own, it goes stale with probes.json.
      result.notes.push_back("tracer: carries the checked-in probes.json, so `weave build` "
                             "rebuilds it along with the files above");
    } else if (payload->manifest != manifest->content) {
      FileDrift drift{"tracer",
                      false,
                      {"  its embedded manifest is not the regenerated probes.json; rebuild it "
                       "(weave build):"}};
      json embedded = json::parse(payload->manifest, nullptr, false);
      json now = json::parse(manifest->content, nullptr, false);
      std::vector<std::string> changes;
      if (!embedded.is_discarded())
        changes = manifest_changes(embedded, now);
      if (changes.empty())
        changes.push_back("(it differs in formatting only)");
      add_manifest_lines(drift, std::move(changes));
      result.drift.push_back(std::move(drift));
    }
  }
  return result;
}

std::optional<std::string> checked_in_target_path(const std::string &dir) {
  std::string text, why;
  if (read_regular_file((fs::path(dir) / "probes.json").string(), 64 << 20, false, text, why) != ReadStatus::Ok)
    return std::nullopt;
  json manifest = json::parse(text, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("target") ||
      !manifest["target"].is_object() || !manifest["target"].contains("path") ||
      !manifest["target"]["path"].is_string())
    return std::nullopt;
  return manifest["target"]["path"].get<std::string>();
}

std::string target_path_note(const std::string &recorded, const std::string &here) {
  return fmt::format("\nnote: the binary's path is not compared: the tree records {}, weave build "
                     "here would record {}; it is only where its tracer looks for the binary "
                     "by default (tracer --binary PATH or -- PATH names another)\n",
                     recorded, here);
}

std::string format_check_report(const CheckResult &result) {
  std::string text;
  if (result.clean())
    return fmt::format("weave check: {} is up to date ({} files compared)\n", result.dir,
                       result.compared.size());
  size_t missing = std::count_if(result.drift.begin(), result.drift.end(),
                                 [](const FileDrift &d) { return d.missing; });
  text += fmt::format("weave check: {} has drifted: {} of {} files differ{} (checked in -> "
                      "regenerated)\n",
                      result.dir, result.drift.size(), result.compared.size(),
                      missing ? fmt::format(", {} missing", missing) : "");
  for (const FileDrift &drift : result.drift) {
    text += "\n" + drift.name + (drift.missing ? ": missing\n" : ":\n");
    if (drift.missing)
      continue;
    for (const std::string &line : drift.lines)
      text += line + "\n";
  }
  for (const std::string &note : result.notes)
    text += "\n" + note + "\n";
  return text;
}

} // namespace weave

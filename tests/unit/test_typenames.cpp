// Type names as a binary spells them: the splitter every lookup of a declared name goes through
// (debuginfo/typename.h), and declared types resolved against the fixture's DWARF (plan/types.h),
// with the errors a spec gets for names that are not there.
#include "common/diag.h"
#include "debuginfo/debuginfo.h"
#include "debuginfo/typename.h"
#include "plan/types.h"

#include <doctest/doctest.h>

#include "test_support.h"

#include <string>

using namespace weave;
using namespace weave_test;

namespace {

GoTypeName split(const std::string &text) {
  std::string error;
  std::optional<GoTypeName> name = split_go_type_name(text, &error);
  INFO(text << ": " << error);
  REQUIRE(name);
  return *name;
}

std::string split_error(const std::string &text) {
  std::string error;
  CHECK_FALSE(split_go_type_name(text, &error));
  return error;
}

UserError declare_error(const std::string &expr, DebugInfo *debug, TypeTable &table) {
  TypeSpec spec;
  spec.expr = expr;
  spec.loc = SourceLoc{"spec.yaml", 3, 14};
  try {
    build_declared_type(spec, table, 8, debug ? dwarf_type_resolver(*debug) : nullptr);
  } catch (const UserError &e) {
    return e;
  }
  FAIL("no error for " << expr);
  return UserError("", "");
}

DebugInfo &fixture() {
  static std::unique_ptr<DebugInfo> debug = DebugInfo::open(kFixture, 8);
  return *debug;
}

} // namespace

TEST_CASE("a Go type name splits into operators, package path, name and type arguments") {
  GoTypeName client = split("*github.com/nats-io/nats-server/v2/server.client");
  CHECK(client.ops == std::vector<std::string>{"*"});
  CHECK(client.package == "github.com/nats-io/nats-server/v2/server");
  CHECK(client.name == "client");
  CHECK(client.args.empty());
  CHECK(client.base() == "github.com/nats-io/nats-server/v2/server.client");

  GoTypeName nested = split("map[string]*[]*[4]chan gopkg.in/yaml.v3.Node");
  CHECK(nested.ops == std::vector<std::string>{"map[string]", "*", "[]", "*", "[4]", "chan "});
  CHECK(nested.package == "gopkg.in/yaml.v3"); // dots in a path element, none in a type name
  CHECK(nested.name == "Node");

  // Type arguments are themselves names; spaces after commas are dropped, as the binary has none.
  GoTypeName pair = split("*main.Pair[string, map[int]*net/url.URL]");
  CHECK(pair.args == std::vector<std::string>{"string", "map[int]*net/url.URL"});
  CHECK(pair.base() == "main.Pair[string,map[int]*net/url.URL]");
  CHECK(pair.str() == "*main.Pair[string,map[int]*net/url.URL]");

  GoTypeName builtin = split("[]int64");
  CHECK(builtin.package.empty());
  CHECK(builtin.name == "int64");
  CHECK(split("unsafe.Pointer").package == "unsafe");
  CHECK(split("<-chan error").ops == std::vector<std::string>{"<-chan "});

  CHECK(split_error("main.Pair[int") == "the type arguments have no closing ]");
  CHECK(split_error("main.Pair[int]x") == "unexpected \"x\" after the type arguments");
  CHECK(split_error("func(int) error") == "a func, struct or interface literal has no name to look up");
  CHECK(split_error("github.com/org/pkg") == "a package path needs .Name after it");
  CHECK(split_error("*") == "expected a type name");
  CHECK(split_error("[x]int") == "expected [N] with a length N");
  CHECK(split_error(std::string(300, '[') ) != "");
}

TEST_CASE("the linker's spelling of a package path escapes dots in its last element") {
  CHECK(escape_package_path("gopkg.in/yaml.v3") == "gopkg.in/yaml%2ev3");
  CHECK(escape_package_path("go.opentelemetry.io/otel/semconv/v1.37.0") == "go.opentelemetry.io/otel/semconv/v1%2e37%2e0");
  CHECK(escape_package_path("net/url") == "net/url");
}

TEST_CASE("without DWARF a named type is refused by its whole name, not cut at the first /") {
  TypeTable table;
  UserError e = declare_error("*github.com/nats-io/nats-server/v2/server.client", nullptr, table);
  CHECK(e.id == "unknown-type");
  CHECK(std::string(e.what()).find("github.com/nats-io/nats-server/v2/server.client is not a builtin type") !=
        std::string::npos);
  CHECK(e.loc.line == 3);
  UserError bad = declare_error("*main.Pair[int", &fixture(), fixture().types());
  CHECK(bad.id == "unknown-type");
  CHECK(std::string(bad.what()).find("unbalanced [ in the type arguments") != std::string::npos);
}

TEST_CASE("with DWARF a declared name is the binary's type: full package paths, behind operators") {
  DebugInfo &debug = fixture();
  TypeSpec spec;
  spec.expr = "*main.Request";
  TypeId request = build_declared_type(spec, debug.types(), 8, dwarf_type_resolver(debug));
  const GoType &ptr = debug.types().at(request);
  CHECK(ptr.kind == TypeKind::Pointer);
  CHECK(ptr.name == "*main.Request");
  REQUIRE(ptr.elem != kNoType);
  CHECK(debug.types().at(ptr.elem).kind == TypeKind::Struct);
  CHECK(debug.types().at(ptr.elem).fields.size() >= 3);
  spec.expr = "map[string][]*main.Header";
  const GoType &m = debug.types().at(build_declared_type(spec, debug.types(), 8, dwarf_type_resolver(debug)));
  CHECK(m.kind == TypeKind::Map);
  CHECK(m.name == "map[string][]*main.Header");

  // A name DWARF does not have: the package's last element alone is the usual slip.
  UserError missing = declare_error("*Request", &debug, debug.types());
  CHECK(missing.id == "unknown-type");
  CHECK(std::string(missing.what()).find("the binary's DWARF has no type Request") != std::string::npos);
  UserError slip = declare_error("*json.Encoder", &debug, debug.types());
  CHECK(slip.id == "unknown-type");
  CHECK(std::string(slip.what()).find("did you mean encoding/json.Encoder?") != std::string::npos);
  spec.expr = "*encoding/json.Encoder";
  CHECK(debug.types().at(build_declared_type(spec, debug.types(), 8, dwarf_type_resolver(debug))).name == "*encoding/json.Encoder");
}

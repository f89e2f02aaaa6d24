// Capture expressions parsed without a binary: the type assertion step .(T), its type name spelled
// as the binary spells it (package paths, '*'s, a generic instance's brackets), and the located
// errors of a malformed one.
#include "plan/expr.h"

#include <doctest/doctest.h>

using namespace weave;

namespace {

const SourceLoc kLoc{"spec.yaml", 5, 10};

std::string error_of(const std::string &text) {
  try {
    parse_capture_expr(text, kLoc);
  } catch (const UserError &e) {
    return e.id + " " + std::to_string(e.loc.column) + " " + e.what();
  }
  return "";
}

} // namespace

TEST_CASE("a type assertion is a step of its own, between fields") {
  CaptureExpr e = parse_capture_expr("err.(*io/fs.PathError).Path", kLoc);
  CHECK(e.root == "err");
  REQUIRE(e.steps.size() == 2);
  CHECK(e.steps[0].kind == ExprStep::Kind::Assert);
  CHECK(e.steps[0].name == "*io/fs.PathError");
  CHECK(e.steps[0].column == 5);
  CHECK(e.steps[1].kind == ExprStep::Kind::Field);
  CHECK(e.steps[1].name == "Path");

  CaptureExpr g = parse_capture_expr("v.(main.Box[main.Point,int]).X", kLoc);
  REQUIRE(g.steps.size() == 2);
  CHECK(g.steps[0].name == "main.Box[main.Point,int]");

  CaptureExpr bare = parse_capture_expr("w.(*net/http.response)", kLoc);
  REQUIRE(bare.steps.size() == 1);
  CHECK(bare.steps[0].name == "*net/http.response");

  CaptureExpr deref = parse_capture_expr("*x.(*main.T).P", kLoc);
  REQUIRE(deref.steps.size() == 3);
  CHECK(deref.steps[2].kind == ExprStep::Kind::Deref);

  CaptureExpr len = parse_capture_expr("len(x.(*main.T).Items)", kLoc);
  CHECK(len.builtin == "len");
  REQUIRE(len.steps.size() == 2);
  CHECK(len.steps[0].name == "*main.T");
}

TEST_CASE("a malformed type assertion is refused at its column") {
  CHECK(error_of("err.(*io/fs.PathError") == "bad-expression 31 expected ')' to close the type assertion in capture "
                                             "\"err.(*io/fs.PathError\"");
  CHECK(error_of("err.().Path") == "bad-expression 15 expected a type name in .(T) in capture \"err.().Path\"");
  CHECK(error_of("err.(a b)").rfind("bad-expression 16 unexpected ' ' in a type assertion", 0) == 0);
  CHECK(error_of("err.(x(y))").rfind("bad-expression 16 unexpected '(' in a type assertion", 0) == 0);
  CHECK(error_of("err.(main.T]").rfind("bad-expression", 0) == 0);
}

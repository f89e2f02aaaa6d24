// Hand-written recursive descent: the grammar is a dozen lines (predicate.h) and errors must point
// at a column inside a YAML string, which a generated parser would not make simpler.
#include "plan/predicate.h"

#include "plan/expr.h"
#include "plan/plan.h"

#include <algorithm>
#include <fmt/format.h>

#include <cctype>
#include <map>

namespace weave {

namespace {

constexpr size_t kMaxDepth = 64; // nesting of parentheses and '!': bounded like every recursion over input

class Parser {
public:
  Parser(const std::string &text, const SourceLoc &loc, const std::string &key) : text_(text), loc_(loc), key_(key) {}

  PredicateNode parse() {
    PredicateNode node = parse_or(0);
    skip_space();
    if (pos_ < text_.size())
      fail(pos_, "unexpected '" + std::string(1, text_[pos_]) + "'");
    return node;
  }

private:
  [[noreturn]] void fail(size_t at, const std::string &what) {
    throw UserError("bad-predicate", what + " in " + key_ + ": \"" + text_ + "\"", advance(loc_, at),
                    "a condition compares values with literals, nil or each other (== != < <= > >=), "
                    "combines them with && || ! and parentheses, and tests prefixes with "
                    "startsWith(s, \"/api\"), e.g. req.Header.Port == 8081 && len(req.Path) > 3");
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool eat(const std::string &token) {
    skip_space();
    if (text_.compare(pos_, token.size(), token) != 0)
      return false;
    pos_ += token.size();
    return true;
  }
  void expect(const std::string &token) {
    if (!eat(token))
      fail(pos_, "expected '" + token + "'");
  }

  // or := and ('||' and)*, and := unary ('&&' unary)*: one level of a left-to-right chain.
  PredicateNode parse_chain(size_t depth, const std::string &op, PredicateNode::Kind kind,
                            PredicateNode (Parser::*operand)(size_t)) {
    PredicateNode first = (this->*operand)(depth);
    if (!peek_is(op))
      return first;
    PredicateNode node;
    node.kind = kind;
    node.children.push_back(std::move(first));
    while (eat(op))
      node.children.push_back((this->*operand)(depth));
    return node;
  }
  PredicateNode parse_or(size_t depth) {
    return parse_chain(depth, "||", PredicateNode::Kind::Or, &Parser::parse_and);
  }
  PredicateNode parse_and(size_t depth) {
    return parse_chain(depth, "&&", PredicateNode::Kind::And, &Parser::parse_unary);
  }
  bool peek_is(const std::string &token) {
    skip_space();
    return text_.compare(pos_, token.size(), token) == 0;
  }
  PredicateNode parse_unary(size_t depth) {
    if (depth > kMaxDepth)
      fail(pos_, "nested more than " + std::to_string(kMaxDepth) + " deep");
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '!' && text_.compare(pos_, 2, "!=") != 0) {
      ++pos_;
      PredicateNode node;
      node.kind = PredicateNode::Kind::Not;
      node.children.push_back(parse_unary(depth + 1));
      return node;
    }
    if (eat("(")) {
      PredicateNode inner = parse_or(depth + 1);
      expect(")");
      return inner;
    }
    skip_space();
    if (text_.compare(pos_, 11, "startsWith(") == 0) {
      pos_ += 11;
      PredicateNode node;
      node.kind = PredicateNode::Kind::StartsWith;
      node.lhs = parse_operand();
      if (node.lhs.kind != PredicateOperand::Kind::Value)
        fail(node.lhs.column, "startsWith takes a string value first");
      expect(",");
      node.rhs = parse_operand();
      if (node.rhs.kind != PredicateOperand::Kind::String)
        fail(node.rhs.column, "startsWith takes a string literal second");
      expect(")");
      return node;
    }
    PredicateNode node;
    node.lhs = parse_operand();
    for (const char *op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (eat(op)) {
        node.kind = PredicateNode::Kind::Compare;
        node.op = op;
        node.rhs = parse_operand();
        return node;
      }
    }
    node.kind = PredicateNode::Kind::Truth;
    return node;
  }

  PredicateOperand parse_operand() {
    skip_space();
    PredicateOperand operand;
    operand.column = pos_;
    if (pos_ >= text_.size())
      fail(pos_, "expected a value or a literal");
    char c = text_[pos_];
    if (c == '"')
      return parse_string(operand);
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
      operand.kind = PredicateOperand::Kind::Integer;
      if (c == '-') {
        operand.negative = true;
        ++pos_;
      }
      size_t start = pos_;
      int base = 10;
      if (text_.compare(pos_, 2, "0x") == 0 || text_.compare(pos_, 2, "0X") == 0) {
        base = 16;
        pos_ += 2;
        start = pos_;
      }
      unsigned __int128 value = 0;
      while (pos_ < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[pos_]))) {
        char d = static_cast<char>(std::tolower(static_cast<unsigned char>(text_[pos_])));
        int digit = std::isdigit(static_cast<unsigned char>(d)) ? d - '0' : d - 'a' + 10;
        if (digit >= base)
          break;
        value = value * base + static_cast<unsigned>(digit);
        if (value > UINT64_MAX)
          fail(operand.column, "integer literal out of range of 64 bits");
        ++pos_;
      }
      if (pos_ == start)
        fail(start, "expected digits");
      if (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        fail(pos_, "unexpected '" + std::string(1, text_[pos_]) + "' in a number");
      operand.magnitude = static_cast<uint64_t>(value);
      return operand;
    }
    // A value: the longest run of characters a capture expression is made of, parentheses
    // balanced (len(x)), checked by the capture parser.
    size_t start = pos_;
    int parens = 0;
    while (pos_ < text_.size()) {
      char ch = text_[pos_];
      if (ch == '(')
        ++parens;
      else if (ch == ')' && parens == 0)
        break;
      else if (ch == ')')
        --parens;
      else if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '[' ||
                 ch == ']' || ch == '*' || ch == '~' || (parens > 0 && ch == '/'))) // .(*io/fs.PathError)
        break;
      ++pos_;
    }
    std::string word = text_.substr(start, pos_ - start);
    if (word.empty())
      fail(start, "expected a value or a literal");
    if (word == "true" || word == "false") {
      operand.kind = PredicateOperand::Kind::Bool;
      operand.magnitude = word == "true";
      return operand;
    }
    if (word == "nil") {
      operand.kind = PredicateOperand::Kind::Nil;
      return operand;
    }
    parse_capture_expr(word, advance(loc_, start)); // located errors for a malformed value
    operand.kind = PredicateOperand::Kind::Value;
    operand.text = word;
    return operand;
  }

  PredicateOperand parse_string(PredicateOperand operand) {
    operand.kind = PredicateOperand::Kind::String;
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c != '\\') {
        operand.text += c;
        continue;
      }
      if (pos_ >= text_.size())
        break;
      char e = text_[pos_++];
      switch (e) {
      case 'n': operand.text += '\n'; break;
      case 't': operand.text += '\t'; break;
      case '\\': operand.text += '\\'; break;
      case '"': operand.text += '"'; break;
      case 'x': {
        if (pos_ + 2 > text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[pos_])) ||
            !std::isxdigit(static_cast<unsigned char>(text_[pos_ + 1])))
          fail(pos_ - 2, "\\x takes two hex digits");
        operand.text += static_cast<char>(std::stoi(text_.substr(pos_, 2), nullptr, 16));
        pos_ += 2;
        break;
      }
      default:
        fail(pos_ - 2, std::string("unknown escape \\") + e + " (\\n \\t \\\\ \\\" \\xNN)");
      }
    }
    if (pos_ >= text_.size())
      fail(operand.column, "unterminated string literal");
    ++pos_;
    return operand;
  }

  const std::string &text_;
  SourceLoc loc_;
  std::string key_;
  size_t pos_ = 0;
};

void collect(const PredicateNode &node, std::vector<PredicateOperand> &out) {
  for (const PredicateNode &child : node.children)
    collect(child, out);
  const bool with_nil = node.kind == PredicateNode::Kind::Compare &&
                        (node.lhs.kind == PredicateOperand::Kind::Nil || node.rhs.kind == PredicateOperand::Kind::Nil);
  for (const PredicateOperand *operand : {&node.lhs, &node.rhs}) {
    if (operand->kind != PredicateOperand::Kind::Value || operand->text.empty())
      continue;
    bool seen = false;
    for (PredicateOperand &o : out)
      if (o.text == operand->text) {
        seen = true;
        o.nil_compared = o.nil_compared || with_nil;
      }
    if (!seen) {
      out.push_back(*operand);
      out.back().nil_compared = with_nil;
    }
  }
}

} // namespace

PredicateNode parse_predicate(const std::string &text, const SourceLoc &loc, const std::string &key) {
  return Parser(text, loc, key).parse();
}

std::vector<PredicateOperand> predicate_values(const PredicateNode &node) {
  std::vector<PredicateOperand> out;
  collect(node, out);
  return out;
}

namespace {

struct Resolver {
  const std::vector<CapturePlan> &captures;
  const std::string &text;
  SourceLoc loc;
  std::string key;
  const std::vector<CapturePlan> *entry_captures = nullptr;
  uint64_t faults = 0, entry_faults = 0;

  [[noreturn]] void fail(size_t at, const std::string &what) {
    throw UserError("bad-predicate", what + " in " + key + ": \"" + text + "\"", advance(loc, at),
                    "conditions compare integers, bools and strings (strings with literals, by == != "
                    "and startsWith), and pointers, funcs, interfaces, maps, slices and chans with nil; "
                    "what BPF cannot "
                    "evaluate exactly is refused rather than approximated");
  }

  // The field a comparison with nil reads: a pointer or func value itself (0 when nil: a func's
  // code pointer is loaded only through a non-nil funcval), an interface's type word (0 exactly
  // when the interface is nil, whatever its data word holds), or the hidden header word of a map,
  // chan or slice (CaptureSpec::nil_word).
  const EventField &nil_field(PredicateOperand &operand) {
    const std::vector<CapturePlan> *lists[] = {&captures, entry_captures};
    for (const std::vector<CapturePlan> *list : lists) {
      if (!list)
        continue;
      for (size_t c = 0; c < list->size(); ++c) {
        const CapturePlan &capture = (*list)[c];
        if (capture.expr != operand.text)
          continue;
        int chosen = -1;
        // The capture itself is an interface ("" among its interfaces; contents: true adds those
        // inside its candidate types, "#0.err").
        if (std::find(capture.interfaces.begin(), capture.interfaces.end(), std::string()) !=
            capture.interfaces.end()) {
          for (size_t f = 0; f < capture.fields.size(); ++f)
            if (capture.fields[f].name == "type")
              chosen = static_cast<int>(f);
        } else if (size_t first = capture.assertion ? 1 : 0; // x.(*T): after the hidden type word
                   capture.fields.size() == first + 1 &&
                   (capture.fields[first].kind == "pointer" || capture.fields[first].kind == "func")) {
          chosen = static_cast<int>(first);
        } else {
          for (size_t f = 0; f < capture.fields.size(); ++f)
            if (capture.fields[f].name == "#nil") // a map's, chan's or slice's header word
              chosen = static_cast<int>(f);
        }
        if (chosen < 0)
          fail(operand.column, operand.text + " is a " + capture.go_type +
                                   ": nil compares pointers, funcs, interfaces, maps, slices and chans");
        operand.capture = static_cast<int>(c);
        operand.field = chosen;
        operand.at_entry = list == entry_captures;
        (operand.at_entry ? entry_faults : faults) |= 1ULL << capture.fault_bit;
        return capture.fields[static_cast<size_t>(chosen)];
      }
    }
    fail(operand.column, operand.text + " is not captured");
  }

  // The kind of a value operand: "int", "uint", "bool", "string" (pointers compare as uint).
  const EventField &field(PredicateOperand &operand) {
    const EventField *found = find(operand, captures);
    if (!found && entry_captures) {
      found = find(operand, *entry_captures);
      if (found)
        operand.at_entry = true;
    }
    if (!found)
      fail(operand.column, operand.text + " is not captured"); // predicate values are added as captures
    return *found;
  }
  const EventField *find(PredicateOperand &operand, const std::vector<CapturePlan> &list) {
    for (size_t c = 0; c < list.size(); ++c) {
      if (list[c].expr != operand.text)
        continue;
      const CapturePlan &capture = list[c];
      int visible = -1, count = 0;
      for (size_t f = 0; f < capture.fields.size(); ++f)
        if (!capture.fields[f].hidden) {
          visible = static_cast<int>(f);
          ++count;
        }
      if (count != 1 || !capture.interfaces.empty() || !capture.lists.empty())
        fail(operand.column, operand.text + " is a " + capture.go_type + ", not one value: compare one of its "
                             "fields, or its len()");
      const EventField &f = capture.fields[static_cast<size_t>(visible)];
      if (f.kind == "float")
        fail(operand.column, operand.text + " is a " + f.go_type + ": BPF has no floating point");
      if (f.kind != "int" && f.kind != "uint" && f.kind != "bool" && f.kind != "string" && f.kind != "pointer")
        fail(operand.column, operand.text + " (" + f.go_type + ") cannot be compared in BPF");
      operand.capture = static_cast<int>(c);
      operand.field = visible;
      (&list == entry_captures ? entry_faults : faults) |= 1ULL << capture.fault_bit;
      return &f;
    }
    return nullptr;
  }
  static std::string kind_of(const EventField &f) { return f.kind == "pointer" ? "uint" : f.kind; }

  void check_integer(const PredicateOperand &literal, const EventField &f) {
    unsigned bits = f.size * 8;
    if (kind_of(f) == "uint") {
      if (literal.negative && literal.magnitude != 0)
        fail(literal.column, fmt::format("{} is a {}: a negative number is never equal to it", "the value", f.go_type));
      if (bits < 64 && literal.magnitude >= (1ULL << bits))
        fail(literal.column, fmt::format("{} is out of the range of {}", literal.magnitude, f.go_type));
    } else {
      uint64_t limit = bits >= 64 ? (1ULL << 63) : (1ULL << (bits - 1)); // |min|; max is limit - 1
      if (literal.magnitude > limit || (!literal.negative && literal.magnitude == limit))
        fail(literal.column, fmt::format("{}{} is out of the range of {}", literal.negative ? "-" : "",
                                         literal.magnitude, f.go_type));
    }
  }

  void resolve(PredicateNode &node) {
    using K = PredicateOperand::Kind;
    for (PredicateNode &child : node.children)
      resolve(child);
    switch (node.kind) {
    case PredicateNode::Kind::Or:
    case PredicateNode::Kind::And:
    case PredicateNode::Kind::Not:
      return;
    case PredicateNode::Kind::Truth: {
      if (node.lhs.kind == K::Bool)
        return;
      if (node.lhs.kind != K::Value || kind_of(field(node.lhs)) != "bool")
        fail(node.lhs.column, "a condition on its own must be a bool value; compare other values with == != < > ...");
      return;
    }
    case PredicateNode::Kind::StartsWith: {
      const EventField &f = field(node.lhs);
      if (f.kind != "string")
        fail(node.lhs.column, node.lhs.text + " is a " + f.go_type + ", and startsWith takes a string");
      if (node.rhs.text.size() > f.max_len)
        fail(node.rhs.column, fmt::format("the prefix is {} bytes, more than the {} copied of each string "
                                          "(options: string_max)", node.rhs.text.size(), f.max_len));
      return;
    }
    case PredicateNode::Kind::Compare:
      break;
    }
    if (node.lhs.kind == K::Nil || node.rhs.kind == K::Nil) {
      if (node.lhs.kind == K::Nil)
        std::swap(node.lhs, node.rhs);
      if (node.lhs.kind != K::Value)
        fail(node.lhs.column, "nil compares with a value: a pointer, func, interface, map, slice or chan");
      if (node.op != "==" && node.op != "!=")
        fail(node.lhs.column, "only == and != compare with nil");
      nil_field(node.lhs);
      return;
    }
    if (node.lhs.kind != K::Value && node.rhs.kind == K::Value) { // literal first: mirror it
      std::swap(node.lhs, node.rhs);
      static const std::map<std::string, std::string> mirror = {{"==", "=="}, {"!=", "!="}, {"<", ">"},
                                                                {"<=", ">="}, {">", "<"},   {">=", "<="}};
      node.op = mirror.at(node.op);
    }
    if (node.lhs.kind != K::Value)
      fail(node.lhs.column, "a comparison of two literals is a constant: compare a value");
    const EventField &f = field(node.lhs);
    std::string kind = kind_of(f);
    bool equality = node.op == "==" || node.op == "!=";
    if ((kind == "string" || kind == "bool") && !equality)
      fail(node.lhs.column, node.lhs.text + " is a " + f.go_type + ": only == and != compare it");
    switch (node.rhs.kind) {
    case K::Value: {
      const EventField &g = field(node.rhs);
      if (kind == "string")
        fail(node.rhs.column, "strings are compared with literals only (two copied strings may be cut short)");
      if (kind != kind_of(g))
        fail(node.rhs.column, fmt::format("{} is a {} and {} a {}: compare values of one kind and signedness",
                                          node.lhs.text, f.go_type, node.rhs.text, g.go_type));
      return;
    }
    case K::Integer:
      if (kind != "int" && kind != "uint")
        fail(node.rhs.column, node.lhs.text + " is a " + f.go_type + ", not an integer");
      check_integer(node.rhs, f);
      return;
    case K::String:
      if (kind != "string")
        fail(node.rhs.column, node.lhs.text + " is a " + f.go_type + ", not a string");
      if (node.rhs.text.size() > f.max_len)
        fail(node.rhs.column, fmt::format("the literal is {} bytes, more than the {} copied of each string "
                                          "(options: string_max)", node.rhs.text.size(), f.max_len));
      return;
    case K::Bool:
      if (kind != "bool")
        fail(node.rhs.column, node.lhs.text + " is a " + f.go_type + ", not a bool");
      return;
    case K::Nil:
      return; // handled above
    }
  }
};

std::string operand_key(const PredicateOperand &o) {
  switch (o.kind) {
  case PredicateOperand::Kind::Value:
    return fmt::format("{}c{}.{}", o.at_entry ? "entry." : "", o.capture, o.field);
  case PredicateOperand::Kind::Nil:
    return "nil";
  case PredicateOperand::Kind::Integer:
    return fmt::format("{}{}", o.negative ? "-" : "", o.magnitude);
  case PredicateOperand::Kind::Bool:
    return o.magnitude ? "true" : "false";
  case PredicateOperand::Kind::String: {
    std::string hex;
    for (unsigned char c : o.text)
      hex += fmt::format("{:02x}", c);
    return "\"" + hex + "\"";
  }
  }
  return "";
}

} // namespace

uint64_t resolve_predicate(PredicateNode &node, const std::vector<CapturePlan> &captures, const std::string &text,
                           const SourceLoc &loc, const std::string &key,
                           const std::vector<CapturePlan> *entry_captures, uint64_t *entry_faults) {
  Resolver resolver{captures, text, loc, key, entry_captures};
  resolver.resolve(node);
  if (entry_faults)
    *entry_faults = resolver.entry_faults;
  return resolver.faults;
}

std::string predicate_key(const PredicateNode &node) {
  switch (node.kind) {
  case PredicateNode::Kind::Or:
  case PredicateNode::Kind::And: {
    std::string out = node.kind == PredicateNode::Kind::Or ? "or(" : "and(";
    for (const PredicateNode &child : node.children)
      out += predicate_key(child) + ",";
    return out + ")";
  }
  case PredicateNode::Kind::Not:
    return "not(" + predicate_key(node.children.front()) + ")";
  case PredicateNode::Kind::StartsWith:
    return "prefix(" + operand_key(node.lhs) + "," + operand_key(node.rhs) + ")";
  case PredicateNode::Kind::Truth:
    return "is(" + operand_key(node.lhs) + ")";
  case PredicateNode::Kind::Compare:
    return "(" + operand_key(node.lhs) + node.op + operand_key(node.rhs) + ")";
  }
  return "";
}

} // namespace weave

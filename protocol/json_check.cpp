#include "protocol/json_check.hpp"

#include "protocol/json_text.hpp"
#include "protocol/request.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace hb::protocol {

namespace {

// The closing quote of the string literal whose contents start at `from`,
// or npos. A quote is escaped when an odd number of backslashes precede it
// inside the string; each run of backslashes is counted once, by the quote
// after it, so this stays linear. memchr does the scanning: an agent's
// result is mostly a few long strings.
size_t string_end(std::string_view text, size_t from) {
  for (size_t at = from;; ++at) {
    at = text.find('"', at);
    if (at == std::string_view::npos)
      return at;
    size_t backslashes = 0;
    while (at - backslashes > from && text[at - backslashes - 1] == '\\')
      ++backslashes;
    if (backslashes % 2 == 0)
      return at;
  }
}

constexpr uint64_t every_byte(uint8_t b) { return 0x0101010101010101ull * b; }

// Whether none of the 8 bytes at `p` is a control character or a backslash:
// the bytes a string's contents may hold as they are.
bool plain_word(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  uint64_t control = (w - every_byte(0x20)) & ~w & every_byte(0x80); // some byte < 0x20
  uint64_t x = w ^ every_byte('\\');
  uint64_t backslash = (x - every_byte(0x01)) & ~x & every_byte(0x80); // some byte == '\\'
  return (control | backslash) == 0;
}

} // namespace

bool nests_deeper_than(std::string_view text, size_t limit) {
  size_t depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    switch (text[i]) {
      case '"':
        i = string_end(text, i + 1);
        if (i == std::string_view::npos)
          return false;
        break;
      case '[':
      case '{':
        if (++depth > limit)
          return true;
        break;
      case ']':
      case '}':
        if (depth > 0)
          --depth;
        break;
      default: break;
    }
  }
  return false;
}

namespace {

// A string literal's contents, between its quotes, as nlohmann's lexer
// takes them: valid UTF-8, no control character, known escapes, and a
// \u escape of a UTF-16 surrogate only as the first of a pair.
bool valid_string_contents(std::string_view s) {
  if (!is_valid_utf8(s))
    return false;
  for (size_t i = 0; i < s.size();) {
    if (i + 8 <= s.size() && plain_word(s.data() + i)) {
      i += 8;
      continue;
    }
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20)
      return false;
    if (c != '\\') {
      ++i;
      continue;
    }
    if (i + 1 >= s.size())
      return false;
    switch (s[i + 1]) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        i += 2;
        continue;
      case 'u':
        break;
      default:
        return false;
    }
    int unit = escape_unit(s, i);
    if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF))
      return false;
    i += 6;
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      int low = escape_unit(s, i);
      if (low < 0xDC00 || low > 0xDFFF)
        return false;
      i += 6;
    }
  }
  return true;
}

} // namespace

bool accepts_json(std::string_view text, size_t long_string) {
  std::string rest; // the text with each long string checked and left out (as "")
  size_t copied = 0;
  for (size_t i = text.find('"'); i != std::string_view::npos; i = text.find('"', i + 1)) {
    size_t end = string_end(text, i + 1);
    if (end == std::string_view::npos)
      break; // unterminated: accept() says so
    if (end - i - 1 > long_string) {
      if (!valid_string_contents(text.substr(i + 1, end - i - 1)))
        return false;
      rest.append(text, copied, i + 1 - copied); // up to the opening quote; the closing one comes next
      copied = end;
    }
    i = end;
  }
  if (copied == 0)
    return json::accept(text.begin(), text.end());
  rest.append(text, copied);
  return json::accept(rest);
}

namespace {

// The text made acceptable to strict parsers, or nothing when it is not one JSON value.
bool fit_to_splice(std::string& text, bool must_be_object) {
  if (nests_deeper_than(text, max_agent_json_depth))
    return false;
  // A copy only for text with \u escapes: a long run's result has none to
  // fix, and copying it is as much memory again.
  bool escapes = text.find("\\u") != std::string::npos || text.find("\\U") != std::string::npos;
  std::string fixed = escapes ? replace_lone_surrogate_escapes(text) : std::string();
  const std::string& checked = escapes ? fixed : text;
  // Without building anything (and without recursion).
  if (!accepts_json(checked))
    return false;
  if (must_be_object) {
    size_t first = checked.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || checked[first] != '{')
      return false;
  }
  if (escapes)
    text = std::move(fixed);
  return true;
}

std::string as_string_literal(std::string_view text) {
  std::string out;
  append_quoted(out, to_valid_utf8(text));
  return out;
}

} // namespace

std::string checked_json_value(std::string text) {
  if (text.empty() || fit_to_splice(text, false))
    return text;
  return as_string_literal(text);
}

std::string checked_event_json(std::string text) {
  if (fit_to_splice(text, true))
    return text;
  return object_writer{}.str("event", "bridge.invalid_event").raw("text", as_string_literal(text)).finish();
}

double clamp_timeout_s(double seconds) {
  if (!(seconds > 0)) // NaN too
    return 0;
  return std::min(seconds, max_timeout_s);
}

} // namespace hb::protocol

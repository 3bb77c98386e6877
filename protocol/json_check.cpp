#include "protocol/json_check.hpp"

#include "protocol/json_text.hpp"
#include "protocol/request.hpp"

#include <algorithm>
#include <cmath>

namespace hb::protocol {

bool nests_deeper_than(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
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
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"')
      continue;
    size_t end = i + 1;
    while (end < text.size() && text[end] != '"')
      end += text[end] == '\\' ? 2 : 1;
    if (end >= text.size())
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

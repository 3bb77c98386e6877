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

// The text made acceptable to strict parsers, or nothing when it is not one JSON value.
bool fit_to_splice(std::string& text, bool must_be_object) {
  if (nests_deeper_than(text, max_agent_json_depth))
    return false;
  // A copy only for text with \u escapes: a long run's result has none to
  // fix, and copying it is as much memory again.
  bool escapes = text.find("\\u") != std::string::npos || text.find("\\U") != std::string::npos;
  std::string fixed = escapes ? replace_lone_surrogate_escapes(text) : std::string();
  const std::string& checked = escapes ? fixed : text;
  // accept() runs the parser without building anything (and without recursion).
  if (!json::accept(checked))
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

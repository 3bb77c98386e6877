#include "protocol/request.hpp"

#include "protocol/json_check.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace hb::protocol {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

// Where the first ill-formed UTF-8 byte is, with Python's reason for it.
bool find_bad_utf8(std::string_view s, size_t& pos, const char*& reason) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (len == 0) {
      pos = i;
      reason = "invalid start byte";
      return true;
    }
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    for (size_t k = 1; k < len; ++k) {
      if (i + k >= s.size()) {
        pos = i;
        reason = "unexpected end of data";
        return true;
      }
      auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
        pos = i;
        reason = "invalid continuation byte";
        return true;
      }
    }
    i += len;
  }
  return false;
}

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::array: return "list";
    case json::value_t::object: return "dict";
    case json::value_t::string: return "str";
    case json::value_t::boolean: return "bool";
    case json::value_t::null: return "NoneType";
    case json::value_t::number_float: return "float";
    default: return "int";
  }
}

int64_t clamp_to_int64(double d) {
  if (d >= 9.2e18)
    return std::numeric_limits<int64_t>::max();
  if (d <= -9.2e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d); // truncates toward zero, like int(3.7)
}

// int("...") accepts surrounding whitespace, a sign and '_' between digits.
bool parse_python_int(std::string_view text, int64_t& out) {
  std::string s = py_strip(text);
  if (s.empty())
    return false;
  size_t i = 0;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    i = 1;
  }
  if (i >= s.size())
    return false;
  std::string digits;
  bool last_underscore = true; // no leading underscore
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      if (last_underscore)
        return false;
      last_underscore = true;
      continue;
    }
    if (c < '0' || c > '9')
      return false;
    digits += c;
    last_underscore = false;
  }
  if (last_underscore)
    return false;
  errno = 0;
  unsigned long long v = std::strtoull(digits.c_str(), nullptr, 10);
  if (errno == ERANGE || v > static_cast<unsigned long long>(std::numeric_limits<int64_t>::max()))
    out = negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  else
    out = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// nlohmann prefixes "[json.exception.parse_error.101] "; the rest is the useful part.
std::string without_prefix(const std::string& what) {
  auto cut = what.find("] ");
  return cut == std::string::npos ? what : what.substr(cut + 2);
}

} // namespace

int escape_unit(std::string_view text, size_t i) {
  if (i + 6 > text.size() || text[i] != '\\' || text[i + 1] != 'u')
    return -1;
  int v = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    int h = hex_value(text[k]);
    if (h < 0)
      return -1;
    v = v * 16 + h;
  }
  return v;
}

wire_error key_error(std::string_view msg) {
  return {"KeyError", py_repr_string(msg)};
}

std::string error_line(std::string_view type, std::string_view message) {
  return object_writer{}
    .boolean("ok", false)
    .str("error", to_valid_utf8(message))
    .str("error_type", type)
    .finish();
}

std::string replace_lone_surrogate_escapes(std::string_view text) {
  if (text.find("\\u") == std::string_view::npos && text.find("\\U") == std::string_view::npos)
    return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '\\' || i + 1 >= text.size()) {
      out += text[i++];
      continue;
    }
    int unit = escape_unit(text, i);
    if (unit < 0) { // some other escape: copy both characters verbatim
      out += text[i];
      out += text[i + 1];
      i += 2;
      continue;
    }
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      int next = escape_unit(text, i + 6);
      if (next >= 0xDC00 && next <= 0xDFFF) {
        out.append(text.substr(i, 12));
        i += 12;
      } else {
        out += "\\ufffd";
        i += 6;
      }
    } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
      out += "\\ufffd";
      i += 6;
    } else {
      out.append(text.substr(i, 6));
      i += 6;
    }
  }
  return out;
}

json decode_request(std::string_view line) {
  std::string_view trimmed = line;
  while (!trimmed.empty() && (trimmed.back() == '\r' || trimmed.back() == ' ' || trimmed.back() == '\t'))
    trimmed.remove_suffix(1);
  while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t' || trimmed.front() == '\r'))
    trimmed.remove_prefix(1);
  if (trimmed.empty())
    throw runtime_error("empty request");
  size_t pos = 0;
  const char* reason = nullptr;
  if (find_bad_utf8(trimmed, pos, reason)) {
    char msg[160];
    std::snprintf(msg, sizeof msg,
                  "'utf-8' codec can't decode byte 0x%02x in position %zu: %s",
                  static_cast<unsigned char>(trimmed[pos]), pos, reason);
    throw wire_error("UnicodeDecodeError", msg);
  }
  // Before parsing: a line of 100,000 brackets is small, but every
  // recursive walk of what it parses to would run off the stack.
  if (nests_deeper_than(trimmed, max_request_depth))
    throw value_error("request nests arrays and objects deeper than " + std::to_string(max_request_depth) +
                      " levels");
  std::string text = replace_lone_surrogate_escapes(trimmed);
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::parse_error& e) {
    throw wire_error("JSONDecodeError", "request is not valid JSON (byte " + std::to_string(e.byte) +
                                          "): " + without_prefix(e.what()));
  } catch (const json::exception& e) { // e.g. a number too large for a double
    throw wire_error("JSONDecodeError", "request is not valid JSON: " + without_prefix(e.what()));
  }
  if (!parsed.is_object())
    throw value_error(std::string("request must be a JSON object, got ") + type_name(parsed));
  return parsed;
}

const json& field(const json& req, std::string_view key) {
  static const json null_value;
  auto it = req.find(std::string(key));
  return it == req.end() ? null_value : *it;
}

bool has_field(const json& req, std::string_view key) {
  return req.find(std::string(key)) != req.end();
}

std::string field_str(const json& req, std::string_view key) {
  const json& v = field(req, key);
  return py_truthy(v) ? py_str(v) : std::string();
}

int64_t field_int(const json& req, std::string_view key) {
  const json& v = field(req, key);
  if (!py_truthy(v))
    return 0;
  switch (v.type()) {
    case json::value_t::boolean: return 1;
    case json::value_t::number_integer: return v.get<int64_t>();
    case json::value_t::number_unsigned: {
      auto u = v.get<uint64_t>();
      return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(u);
    }
    case json::value_t::number_float: return clamp_to_int64(v.get<double>());
    case json::value_t::string: {
      int64_t out = 0;
      if (!parse_python_int(v.get_ref<const std::string&>(), out))
        throw value_error("invalid literal for int() with base 10: " +
                          py_repr_string(v.get_ref<const std::string&>()));
      return out;
    }
    default:
      throw type_error(std::string("int() argument must be a string, a bytes-like object or a real number, not '") +
                       type_name(v) + "'");
  }
}

double field_float(const json& req, std::string_view key) {
  const json& v = field(req, key);
  if (!py_truthy(v))
    return 0.0;
  switch (v.type()) {
    case json::value_t::boolean: return 1.0;
    case json::value_t::number_integer: return static_cast<double>(v.get<int64_t>());
    case json::value_t::number_unsigned: return static_cast<double>(v.get<uint64_t>());
    case json::value_t::number_float: return v.get<double>();
    case json::value_t::string: {
      std::string s = py_strip(v.get_ref<const std::string&>());
      char* end = nullptr;
      double d = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size())
        throw value_error("could not convert string to float: " +
                          py_repr_string(v.get_ref<const std::string&>()));
      return d;
    }
    default:
      throw type_error(std::string("float() argument must be a string or a real number, not '") +
                       type_name(v) + "'");
  }
}

bool field_truthy(const json& req, std::string_view key) {
  return py_truthy(field(req, key));
}

} // namespace hb::protocol

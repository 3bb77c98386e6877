// Python's view of decoded JSON values: truthiness, repr() and str(), and
// the str.strip()/lower() the seed applies to fields. Clients see these
// through the seed's coercions (str(x or ""), error texts quoting values).
#include "protocol/json_text.hpp"

#include "protocol/wire_error.hpp"

#include <cmath>

namespace hb::protocol {

namespace {
const char* hex_digits = "0123456789abcdef";
} // namespace

bool py_truthy(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return false;
    case json::value_t::boolean: return v.get<bool>();
    case json::value_t::number_integer: return v.get<int64_t>() != 0;
    case json::value_t::number_unsigned: return v.get<uint64_t>() != 0;
    case json::value_t::number_float: return v.get<double>() != 0.0;
    case json::value_t::string: return !v.get_ref<const std::string&>().empty();
    case json::value_t::array:
    case json::value_t::object: return !v.empty();
    default: return false;
  }
}

std::string py_repr_string(std::string_view s) {
  // Python prefers single quotes and switches to double quotes only when the
  // text holds a single quote and no double quote.
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += hex_digits[(c >> 4) & 0xF];
      out += hex_digits[c & 0xF];
    } else {
      out += ch;
    }
  }
  out += quote;
  return out;
}

namespace {

// Python's own limit, near enough: repr() of a deeper value raises
// RecursionError there, and here it cannot reach the end of the stack.
constexpr int max_repr_depth = 900;

std::string py_repr_at(const json& v, int depth);

} // namespace

std::string py_repr(const json& v) {
  return py_repr_at(v, 0);
}

namespace {

std::string py_repr_at(const json& v, int depth) {
  if (depth > max_repr_depth)
    throw wire_error("RecursionError", "maximum recursion depth exceeded while getting the repr of an object");
  switch (v.type()) {
    case json::value_t::null: return "None";
    case json::value_t::boolean: return v.get<bool>() ? "True" : "False";
    case json::value_t::string: return py_repr_string(v.get_ref<const std::string&>());
    case json::value_t::array: {
      std::string out = "[";
      bool first = true;
      for (const auto& item : v) {
        if (!first)
          out += ", ";
        first = false;
        out += py_repr_at(item, depth + 1);
      }
      return out + "]";
    }
    case json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first)
          out += ", ";
        first = false;
        out += py_repr_string(it.key()) + ": " + py_repr_at(it.value(), depth + 1);
      }
      return out + "}";
    }
    case json::value_t::number_float: {
      double d = v.get<double>();
      if (std::isnan(d))
        return "nan";
      if (std::isinf(d))
        return d > 0 ? "inf" : "-inf";
      std::string out;
      append_double(out, d);
      return out;
    }
    default: return dumps(v);
  }
}

} // namespace

std::string py_str(const json& v) {
  if (v.is_string())
    return v.get<std::string>();
  return py_repr(v);
}

std::string py_strip(std::string_view text) {
  auto is_space = [](unsigned char c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  };
  size_t b = 0, e = text.size();
  while (b < e && is_space(static_cast<unsigned char>(text[b])))
    ++b;
  while (e > b && is_space(static_cast<unsigned char>(text[e - 1])))
    --e;
  return std::string(text.substr(b, e - b));
}

std::string py_lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}

} // namespace hb::protocol

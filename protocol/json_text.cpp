#include "protocol/json_text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace hb::protocol {

namespace {

// Length of the well-formed UTF-8 sequence at s[i], or 0 when ill-formed.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80)
    return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F; // UTF-16 surrogates are not characters
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size())
    return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi)
    return 0;
  for (size_t k = 2; k < len; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF)
      return 0;
  return len;
}

const char* hex = "0123456789abcdef";

void append_u_escape(std::string& out, unsigned code) {
  out += "\\u00";
  out += hex[(code >> 4) & 0xF];
  out += hex[code & 0xF];
}

} // namespace

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t n = utf8_sequence_length(bytes, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    uint64_t word;
    if (i + 8 <= bytes.size() && (std::memcpy(&word, bytes.data() + i, 8), (word & 0x8080808080808080ull) == 0)) {
      i += 8; // eight ASCII bytes
      continue;
    }
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = utf8_sequence_length(bytes, i);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

void append_quoted(std::string& out, std::string_view s) {
  out += '"';
  size_t plain_from = 0; // what needs no escape is appended a run at a time
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    out.append(s.data() + plain_from, i - plain_from);
    plain_from = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default: append_u_escape(out, c);
    }
  }
  out.append(s.data() + plain_from, s.size() - plain_from);
  out += '"';
}

void append_double(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  // Shortest round-trip digits, then laid out the way Python's float repr
  // does: positional for exponents -4..15, scientific otherwise. On the
  // stack: timestamps go into most answers.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  const char* p = buf;
  if (*p == '-') {
    out += '-';
    ++p;
  }
  const char* e = std::find(p, static_cast<const char*>(res.ptr), 'e');
  char digits[32];
  size_t n = 0;
  for (const char* q = p; q < e; ++q)
    if (*q != '.')
      digits[n++] = *q;
  while (n > 1 && digits[n - 1] == '0')
    --n;
  int exponent = 0;
  std::from_chars(e + 1 + (e[1] == '+' ? 1 : 0), res.ptr, exponent);
  int decpt = exponent + 1; // digits are 0.d1d2... x 10^decpt
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out.append(digits, n);
    } else if (static_cast<size_t>(decpt) >= n) {
      out.append(digits, n);
      out.append(static_cast<size_t>(decpt) - n, '0');
      out += ".0";
    } else {
      out.append(digits, static_cast<size_t>(decpt));
      out += '.';
      out.append(digits + decpt, n - static_cast<size_t>(decpt));
    }
    return;
  }
  out += digits[0];
  if (n > 1) {
    out += '.';
    out.append(digits + 1, n - 1);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  out += exp_buf;
}

namespace {

void dump_scalar(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case json::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      break;
    case json::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      break;
    case json::value_t::number_float:
      append_double(out, v.get<double>());
      break;
    case json::value_t::string:
      append_quoted(out, v.get_ref<const std::string&>());
      break;
    default: // null, discarded, binary
      out += "null";
      break;
  }
}

} // namespace

// With a stack of its own rather than recursion: however deep a value nests,
// writing it cannot overflow the thread's stack.
void dump_to(std::string& out, const json& root) {
  struct level {
    const json* container;
    json::const_iterator next;
  };
  std::vector<level> open;
  const json* value = &root;
  for (;;) {
    if (value) {
      if (value->is_array() || value->is_object()) {
        out += value->is_array() ? '[' : '{';
        open.push_back({value, value->cbegin()});
      } else {
        dump_scalar(out, *value);
      }
      value = nullptr;
    }
    if (open.empty())
      return;
    level& top = open.back();
    if (top.next == top.container->cend()) {
      out += top.container->is_array() ? ']' : '}';
      open.pop_back();
      continue;
    }
    if (top.next != top.container->cbegin())
      out += ", ";
    if (top.container->is_object()) {
      append_quoted(out, top.next.key());
      out += ": ";
    }
    value = &*top.next;
    ++top.next;
  }
}

std::string dumps(const json& value) {
  std::string out;
  dump_to(out, value);
  return out;
}

object_writer::object_writer() : out_("{") {}

object_writer& object_writer::reserve(size_t bytes) {
  out_.reserve(bytes);
  return *this;
}

void object_writer::key(std::string_view k) {
  if (!first_)
    out_ += ", ";
  first_ = false;
  append_quoted(out_, k);
  out_ += ": ";
}

object_writer& object_writer::raw(std::string_view k, std::string_view text) {
  key(k);
  out_ += text;
  return *this;
}

object_writer& object_writer::str(std::string_view k, std::string_view v) {
  key(k);
  append_quoted(out_, v);
  return *this;
}

object_writer& object_writer::integer(std::string_view k, int64_t v) {
  key(k);
  char digits[24];
  out_.append(digits, static_cast<size_t>(std::to_chars(digits, digits + sizeof digits, v).ptr - digits));
  return *this;
}

object_writer& object_writer::number(std::string_view k, double v) {
  key(k);
  append_double(out_, v);
  return *this;
}

object_writer& object_writer::boolean(std::string_view k, bool v) {
  key(k);
  out_ += v ? "true" : "false";
  return *this;
}

object_writer& object_writer::null(std::string_view k) {
  key(k);
  out_ += "null";
  return *this;
}

object_writer& object_writer::value(std::string_view k, const json& v) {
  key(k);
  dump_to(out_, v);
  return *this;
}

object_writer& object_writer::members(std::string_view object_text) {
  size_t open = object_text.find('{'), close = object_text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open)
    return *this;
  std::string_view inner = object_text.substr(open + 1, close - open - 1);
  if (inner.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return *this;
  if (!first_)
    out_ += ", ";
  first_ = false;
  out_ += inner;
  return *this;
}

std::string object_writer::finish() {
  out_ += '}';
  return std::move(out_);
}

} // namespace hb::protocol

// JSON text exactly as Python's json.dumps(obj, ensure_ascii=False) writes it,
// because Hermes Studio and other clients were written against the seed bridge's
// bytes. Also Python's repr()/str()/truthiness of decoded JSON values, which the
// seed's field coercions (str(x or ""), int(x or 0)) expose on the wire.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace hb::protocol {

// Insertion-ordered, like a Python dict.
using json = nlohmann::ordered_json;

// Python's json.dumps default separators (", " and ": "), non-ASCII kept raw,
// NaN and infinities written as null (never as the NaN literal Node rejects).
std::string dumps(const json& value);
void dump_to(std::string& out, const json& value);

// A JSON string literal, quoted and escaped as json.dumps does.
void append_quoted(std::string& out, std::string_view utf8);
// A float as Python's repr() prints it (shortest round-trip digits).
void append_double(std::string& out, double value);

// Python semantics of a decoded JSON value.
bool py_truthy(const json& value);
std::string py_repr(const json& value);
std::string py_str(const json& value);
std::string py_repr_string(std::string_view utf8);

// Valid UTF-8 in, valid UTF-8 out: any ill-formed sequence becomes U+FFFD.
std::string to_valid_utf8(std::string_view bytes);
bool is_valid_utf8(std::string_view bytes);

// Python's str.strip() for the whitespace clients actually send.
std::string py_strip(std::string_view text);
std::string py_lower(std::string_view text);

// Builds a response object field by field so stored JSON text (events,
// results) can be spliced in without re-parsing it.
class object_writer {
public:
  object_writer();
  // Room for `bytes` of output at once: a multi-megabyte answer is then
  // written into one allocation instead of a chain of doublings.
  object_writer& reserve(size_t bytes);
  object_writer& raw(std::string_view key, std::string_view json_text);
  object_writer& str(std::string_view key, std::string_view value);
  object_writer& integer(std::string_view key, int64_t value);
  object_writer& number(std::string_view key, double value);
  object_writer& boolean(std::string_view key, bool value);
  object_writer& null(std::string_view key);
  object_writer& value(std::string_view key, const json& value);
  // The members of an object already encoded (a stored config, a request
  // passed on as it came), spliced in as they are: the one place object
  // text is joined without parsing it. Their keys must not repeat ours.
  object_writer& members(std::string_view object_text);
  std::string finish(); // leaves the writer empty

private:
  void key(std::string_view key);
  std::string out_;
  bool first_ = true;
};

} // namespace hb::protocol

// Turning one request line into a JSON object, and reading its fields with
// the coercions the seed applies (str(x or ""), int(x or 0), truthiness), so
// that odd inputs get the same answers, or clearer ones where the seed's were
// accidents (non-object JSON, lone surrogates).
#pragma once

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace hb::protocol {

// Throws wire_error: RuntimeError "empty request", UnicodeDecodeError,
// JSONDecodeError, ValueError for JSON that is not an object or that nests
// deeper than max_request_depth (json_check.hpp).
json decode_request(std::string_view line);

// Escaped lone UTF-16 surrogates (\ud800 without its partner) become \ufffd,
// so text Python would accept parses here too.
std::string replace_lone_surrogate_escapes(std::string_view text);
// The code unit of the \uXXXX escape starting at text[i] (the backslash), or -1.
int escape_unit(std::string_view text, size_t i);

// req.get(key) as Python sees it; null when absent.
const json& field(const json& req, std::string_view key);
bool has_field(const json& req, std::string_view key);
// str(req.get(key) or "")
std::string field_str(const json& req, std::string_view key);
// int(req.get(key) or 0); ValueError / TypeError as Python raises them.
int64_t field_int(const json& req, std::string_view key);
// float(req.get(key, 0) or 0)
double field_float(const json& req, std::string_view key);
bool field_truthy(const json& req, std::string_view key);

} // namespace hb::protocol

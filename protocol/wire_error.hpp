// The error half of the wire contract: {"ok": false, "error": ..., "error_type": ...}
// with the Python exception class names the seed bridge reports.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace hb::protocol {

struct wire_error : std::runtime_error {
  wire_error(std::string type, std::string message)
    : std::runtime_error(message), type(std::move(type)) {}
  std::string type;
};

inline wire_error value_error(std::string msg) { return {"ValueError", std::move(msg)}; }
inline wire_error runtime_error(std::string msg) { return {"RuntimeError", std::move(msg)}; }
inline wire_error type_error(std::string msg) { return {"TypeError", std::move(msg)}; }
// str(KeyError(msg)) is the repr of msg, quotes included.
wire_error key_error(std::string_view msg);

std::string error_line(std::string_view type, std::string_view message);
inline std::string error_line(const wire_error& e) { return error_line(e.type, e.what()); }

} // namespace hb::protocol

// SHA-256 (FIPS 180-4), for names that must not collide: a native
// session's directory is named after its session id's digest, and two ids
// sharing a directory would share (and kill) one TUI.
#pragma once

#include <string>
#include <string_view>

namespace hb::protocol {

// 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

} // namespace hb::protocol

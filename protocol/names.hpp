// Names a client chooses that the daemon turns into paths. A profile names a
// directory under the hermes home (<home>/profiles/<name>); anything but a
// plain name could reach outside it, so it is refused before it is used.
#pragma once

#include <string_view>

namespace hb::protocol {

// Throws wire_error ValueError unless `profile` is empty (the default
// profile) or a plain name: 1 to 64 of A-Z a-z 0-9 _ . -, starting with a
// letter, a digit or _ (so never "." or "..", a hidden name or an option).
void check_profile_name(std::string_view profile);

} // namespace hb::protocol

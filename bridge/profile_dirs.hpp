// Which profiles exist. The default profile (empty or "default") always
// does; any other is a directory of its own right under <base>/profiles,
// <base> being the hermes home, or the home's base when the home is itself a
// profile's (<base>/profiles/<name>): how bridge_profiles.py reads them and
// how Hermes Studio lists them. Without the directory a profile would run on
// the default profile's config (the seed falls back to it), and every name
// a client makes up would get an agent worker of its own.
#pragma once

#include <string>

namespace hb::bridge {

// Throws protocol::wire_error: ValueError for a name that is not plain
// (protocol::check_profile_name) or a directory that resolves outside
// <base>/profiles (a symlink out of it), KeyError for a profile with no
// directory. Touches nothing; only looks.
void check_profile_exists(const std::string& hermes_home, const std::string& profile);

} // namespace hb::bridge

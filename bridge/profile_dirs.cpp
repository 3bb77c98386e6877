#include "bridge/profile_dirs.hpp"

#include "protocol/names.hpp"
#include "protocol/wire_error.hpp"

#include <filesystem>
#include <system_error>

namespace hb::bridge {

namespace fs = std::filesystem;

namespace {

// Symlinks resolved as far as the path exists, as Python's Path.resolve().
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  fs::path out = fs::weakly_canonical(path, ec);
  return ec ? path.lexically_normal() : out;
}

fs::path profiles_base(const std::string& hermes_home) {
  fs::path home = resolved(hermes_home);
  if (home.has_parent_path() && home.parent_path().filename() == "profiles")
    return home.parent_path().parent_path();
  return home;
}

} // namespace

void check_profile_exists(const std::string& hermes_home, const std::string& profile) {
  protocol::check_profile_name(profile);
  if (profile.empty() || profile == "default")
    return;
  fs::path profiles = resolved(profiles_base(hermes_home) / "profiles");
  fs::path dir = resolved(profiles / profile);
  if (dir.parent_path() != profiles)
    throw protocol::value_error("profile '" + profile + "' resolves outside " + profiles.string() + ": " +
                                dir.string());
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw protocol::key_error("unknown profile: " + profile + " (no directory " + (profiles / profile).string() +
                              ")");
}

} // namespace hb::bridge

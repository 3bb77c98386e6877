#include "protocol/names.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

namespace hb::protocol {

namespace {

constexpr size_t max_profile_chars = 64;

bool plain_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

} // namespace

void check_profile_name(std::string_view profile) {
  if (profile.empty())
    return;
  bool plain = profile.size() <= max_profile_chars && profile.front() != '.' && profile.front() != '-';
  for (char c : profile)
    plain = plain && plain_char(c);
  if (!plain)
    throw value_error("profile must be a plain name (up to 64 letters, digits, '_', '.' or '-', not "
                      "starting with '.' or '-'), not " + dumps(json(std::string(profile))));
}

} // namespace hb::protocol

#include "bridge/profile_dirs.hpp"
#include "protocol/wire_error.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

using hb::bridge::check_profile_exists;

namespace fs = std::filesystem;

namespace {

// The error check_profile_exists throws, as "<type>: <message>", or "" when it passes.
std::string refusal(const std::string& home, const std::string& profile) {
  try {
    check_profile_exists(home, profile);
    return "";
  } catch (const hb::protocol::wire_error& e) {
    return e.type + ": " + e.what();
  }
}

} // namespace

TEST_CASE("the default profile always exists, another needs its directory", "[profiles]") {
  hb::test::temp_dir tmp;
  std::string home = tmp.file("home");
  CHECK(refusal(home, "") == ""); // not even the home need exist
  CHECK(refusal(home, "default") == "");
  fs::create_directories(home + "/profiles/work");
  CHECK(refusal(home, "work") == "");
  std::string ghost = refusal(home, "ghost");
  CHECK(ghost.rfind("KeyError: 'unknown profile: ghost (no directory ", 0) == 0);
  CHECK(ghost.find("/profiles/ghost)'") != std::string::npos);
  std::ofstream(home + "/profiles/file") << "not a directory";
  CHECK(refusal(home, "file").rfind("KeyError: 'unknown profile: file", 0) == 0);
  CHECK(!fs::exists(home + "/profiles/ghost")); // only looked
}

TEST_CASE("a profile that is a path or leads out of the profiles is a ValueError", "[profiles]") {
  hb::test::temp_dir tmp;
  std::string home = tmp.file("home");
  fs::create_directories(home + "/profiles/work");
  fs::create_directories(tmp.file("outside"));
  for (const char* name : {"/tmp/x", "../..", "a/b", "..", "../outside"})
    CHECK(refusal(home, name).rfind("ValueError: profile must be a plain name", 0) == 0);
  fs::create_directory_symlink(tmp.file("outside"), home + "/profiles/link");
  CHECK(refusal(home, "link").rfind("ValueError: profile 'link' resolves outside ", 0) == 0);
  fs::create_directory_symlink(tmp.file("nowhere"), home + "/profiles/dangling");
  CHECK(refusal(home, "dangling") != "");
  // A link from one profile to another stays inside: an alias.
  fs::create_directory_symlink(home + "/profiles/work", home + "/profiles/alias");
  CHECK(refusal(home, "alias") == "");
}

TEST_CASE("a home that is itself a profile's finds its siblings, as the Python side does", "[profiles]") {
  hb::test::temp_dir tmp;
  std::string base = tmp.file("base");
  fs::create_directories(base + "/profiles/work");
  fs::create_directories(base + "/profiles/other");
  CHECK(refusal(base + "/profiles/work", "other") == "");
  CHECK(refusal(base + "/profiles/work", "ghost").find("/base/profiles/ghost") != std::string::npos);
  // The home is found through a symlink to it, too.
  fs::create_directory_symlink(base, tmp.file("via-link"));
  CHECK(refusal(tmp.file("via-link"), "other") == "");
}

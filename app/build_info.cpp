#include "app/build_info.hpp"

#include "protocol/json_text.hpp"

#include <caf/config.hpp>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

namespace hb::app {

namespace {

// CAF_VERSION is major * 10000 + minor * 100 + patch (1706 is 0.17.6).
std::string caf_version() {
  return std::to_string(CAF_VERSION / 10000) + "." + std::to_string(CAF_VERSION / 100 % 100) + "." +
         std::to_string(CAF_VERSION % 100);
}

} // namespace

build_info this_build() {
  build_info b;
  b.version = HB_VERSION;
  b.commit = HB_GIT_COMMIT;
  b.caf = caf_version();
  b.sqlite = sqlite3_libversion();
  b.nlohmann_json = std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." + std::to_string(NLOHMANN_JSON_VERSION_MINOR) +
                    "." + std::to_string(NLOHMANN_JSON_VERSION_PATCH);
  b.python = HB_BUILT_PYTHON;
  return b;
}

std::string build_info_json() {
  auto b = this_build();
  return protocol::object_writer{}
    .str("version", b.version)
    .str("commit", b.commit)
    .str("caf", b.caf)
    .str("sqlite", b.sqlite)
    .str("nlohmann_json", b.nlohmann_json)
    .str("python", b.python)
    .finish();
}

std::string build_info_text() {
  auto b = this_build();
  return "hermes-bridge " + b.version + " (commit " + b.commit + ")\n" + "CAF " + b.caf + ", SQLite " + b.sqlite +
         ", nlohmann_json " + b.nlohmann_json + ", built against Python " + b.python + "\n";
}

} // namespace hb::app

// What this binary is: its version, the commit it was built from and the
// libraries in it, for `--version`, `doctor` and the `version` object of
// `ping` and `health` (a bug report then names the build exactly).
#pragma once

#include <string>

namespace hb::app {

struct build_info {
  std::string version;       // the project's (CMakeLists.txt)
  std::string commit;        // `git describe --always --dirty` at configure time, or "unknown"
  std::string caf;
  std::string sqlite;        // the library loaded at run time
  std::string nlohmann_json;
  std::string python;        // the Python the embedded host was built against
};

build_info this_build();

// {"version": ..., "commit": ..., "caf": ..., ...}
std::string build_info_json();

// The lines `hermes-bridge --version` prints.
std::string build_info_text();

} // namespace hb::app

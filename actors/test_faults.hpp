// Faults a test can ask for through HERMES_BRIDGE_TEST_FAULTS (names,
// comma-separated), to check that the daemon shows them instead of hiding
// them. Unset in normal use, and then nothing here changes anything.
//   actions            the `test_fault` action: {"fault": "kill_writer" | "kill_broker"}
//   reader_open_fails  each log reader's first open of the log fails
//   checkpointer_open_fails  the log checkpointer's first two opens of the log fail
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

namespace hb::actors {

inline bool test_fault_enabled(std::string_view name) {
  static const std::string faults = [] {
    const char* env = std::getenv("HERMES_BRIDGE_TEST_FAULTS");
    return "," + std::string(env ? env : "") + ",";
  }();
  return faults.find("," + std::string(name) + ",") != std::string::npos;
}

} // namespace hb::actors

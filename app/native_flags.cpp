#include "app/native_flags.hpp"

#include "app/tool_support.hpp"

#include <chrono>
#include <cstdlib>

namespace hb::app {

void add_native_flags(CLI::App& serve, native_flags& flags) {
  serve.add_option("--hermes-bin", flags.hermes_bin,
                   "the hermes TUI that native sessions run: a command line, split as a shell would (no "
                   "shell runs it)")
    ->envname("HERMES_BIN")
    ->capture_default_str();
  serve.add_option("--native-dir", flags.dir, "owner-only directory for native sessions' tmux sockets")
    ->envname("HERMES_BRIDGE_NATIVE_DIR")
    ->capture_default_str();
  serve.add_option("--native-confirm-s", flags.confirm_s,
                   "seconds to wait for Hermes to store a pasted message before pasting it once more")
    ->envname("HERMES_BRIDGE_NATIVE_CONFIRM_S")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--native-approval-timeout-s", flags.approval_timeout_s,
                   "seconds a native session's Dangerous Command prompt waits for a client before "
                   "it is denied")
    ->envname("HERMES_BRIDGE_NATIVE_APPROVAL_TIMEOUT")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--max-native", flags.max_native,
                   "native sessions whose hermes TUI runs at once; a chat that would start one more is "
                   "refused with an error")
    ->envname("HERMES_BRIDGE_MAX_NATIVE")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
}

std::shared_ptr<const hb::bridge::native_options> native_options_from(const native_flags& flags,
                                                                     const std::string& hermes_home) {
  auto options = std::make_shared<hb::bridge::native_options>();
  options->hermes_bin = flags.hermes_bin;
  options->runtime_dir = absolute_path(flags.dir);
  options->hermes_home = hermes_home;
  const char* state_db = std::getenv("HERMES_STATE_DB");
  options->state_db = state_db && *state_db ? absolute_path(state_db) : hermes_home + "/state.db";
  options->confirm_timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.confirm_s * 1000));
  options->approval_timeout_s = flags.approval_timeout_s;
  options->max_native = flags.max_native;
  return options;
}

} // namespace hb::app

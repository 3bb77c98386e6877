#include "app/commands.hpp"

#include "app/tool_commands.hpp"

namespace hb::app {

void add_commands(CLI::App& app, std::function<int()>& chosen) {
  // Registered here as they are written; see app/commands.hpp.
  add_runs_command(app, chosen);
  add_sessions_command(app, chosen);
  add_replay_command(app, chosen);
  add_export_command(app, chosen);
  add_import_command(app, chosen);
  add_client_commands(app, chosen);
  add_timeline_command(app, chosen);
  add_verify_command(app, chosen);
}

} // namespace hb::app

// The log tools, each registered by its own file (app/cmd_*.cpp) and all of
// them by add_commands (app/commands.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace hb::app {

void add_runs_command(CLI::App& app, std::function<int()>& chosen);
void add_sessions_command(CLI::App& app, std::function<int()>& chosen);
void add_replay_command(CLI::App& app, std::function<int()>& chosen);
void add_export_command(CLI::App& app, std::function<int()>& chosen);
void add_import_command(CLI::App& app, std::function<int()>& chosen);
void add_client_commands(CLI::App& app, std::function<int()>& chosen); // chat, call
void add_timeline_command(CLI::App& app, std::function<int()>& chosen);
void add_verify_command(CLI::App& app, std::function<int()>& chosen);
void add_doctor_command(CLI::App& app, std::function<int()>& chosen);
void add_stop_command(CLI::App& app, std::function<int()>& chosen);

} // namespace hb::app

#include "app/commands.hpp"

#include "app/build_info.hpp"
#include "app/tool_commands.hpp"

#include <iostream>

namespace hb::app {

namespace {

void add_version_command(CLI::App& app, std::function<int()>& chosen) {
  auto* sub = app.add_subcommand("version", "Print the version, the commit built from and the libraries in it "
                                            "(also: --version).");
  sub->callback([&chosen] {
    chosen = [] {
      std::cout << build_info_text() << std::flush;
      return 0;
    };
  });
}

} // namespace

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
  add_doctor_command(app, chosen);
  add_stop_command(app, chosen);
  add_version_command(app, chosen);
}

// Hermes Studio starts its bridge as `<python> hermes_bridge.py --endpoint ...`;
// pointed at this binary, the script path arrives as the first argument.
std::vector<std::string> command_line_args(int argc, char** argv, const CLI::App& app) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front().size() > 3 &&
      args.front().compare(args.front().size() - 3, 3, ".py") == 0)
    args.erase(args.begin());
  if (!args.empty() && args.front() == "--version")
    args.front() = "version";
  bool has_command = false;
  if (!args.empty()) {
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      has_command = has_command || sub->get_name() == args.front();
  }
  bool wants_help = !args.empty() && (args.front() == "-h" || args.front() == "--help");
  if (!has_command && !wants_help)
    args.insert(args.begin(), "serve"); // serve is the default command
  return args;
}

} // namespace hb::app

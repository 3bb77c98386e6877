// hermes-bridge: the command line. Parses it and runs the subcommand chosen:
// `serve` (app/serve_flags.cpp, app/serve.cpp) or one of the tools
// (app/commands.cpp).
#include "app/commands.hpp"
#include "app/serve.hpp"
#include "app/serve_flags.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  CLI::App app{"hermes-bridge: hosts hermes-agent sessions for socket clients such as Hermes Studio.\n"
               "A drop-in for hermes_bridge.py: same protocol, concurrent runs, every run kept in an\n"
               "SQLite event log."};
  app.require_subcommand(1);
  // The subcommand chosen on the command line sets what runs.
  std::function<int()> chosen;
  hb::app::serve_flags flags;
  hb::app::add_serve_command(app, flags)->callback([&] {
    chosen = [&] { return hb::app::run_serve_command(flags); };
  });
  hb::app::add_commands(app, chosen);

  std::vector<std::string> args = hb::app::command_line_args(argc, argv, app);
  std::vector<const char*> cargs{argv[0]};
  for (const auto& a : args)
    cargs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargs.size()), const_cast<char**>(cargs.data()));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return chosen ? chosen() : 2;
}

// The subcommands besides `serve` (tools that read the event log, the
// terminal client, doctor, version, ...). Each adds itself to `app` and, when
// chosen on the command line, sets `chosen` to what runs it (returning the
// exit code).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace hb::app {

void add_commands(CLI::App& app, std::function<int()>& chosen);

// The arguments CLI11 parses: Hermes Studio's leading *.py dropped, `serve`
// put first when no command is named, `--version` read as `version`.
std::vector<std::string> command_line_args(int argc, char** argv, const CLI::App& app);

} // namespace hb::app

// The subcommands besides `serve` (tools that read the event log, the
// terminal client, ...). Each adds itself to `app` and, when chosen on the
// command line, sets `chosen` to what runs it (returning the exit code).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace hb::app {

void add_commands(CLI::App& app, std::function<int()>& chosen);

} // namespace hb::app

// What the log tools (runs, sessions, replay, export, import) share on the
// command line: stable exit codes, errors that carry them, where the event
// log is, and usage checks that answer with exit code 2 instead of CLI11's
// own codes.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <string>

namespace hb::app {

// Stable: scripts depend on them (documented in every tool's --help footer).
enum exit_code : int {
  exit_ok = 0,
  exit_failure = 1, // anything else (an SQLite error, a file that cannot be written)
  exit_usage = 2,   // bad usage, or no event log where it was looked for
  exit_unknown = 3, // unknown run or session, or a run whose output was pruned
  exit_refused = 4, // import refused (a run already in the log)
  exit_damaged = 5, // damaged input file (an export file, or a file that is not an event log)
  exit_unreachable = 6, // no daemon answers at the endpoint (chat, call)
  exit_interrupted = 130, // the terminal client was stopped with Ctrl-C
};

extern const char* const exit_codes_footer;

struct tool_error : std::runtime_error {
  tool_error(int code, const std::string& what) : std::runtime_error(what), code(code) {}
  int code;
};

// --db (HERMES_BRIDGE_DB) and --hermes-home (HERMES_HOME), as `serve` has them.
struct log_location {
  std::string db;
  std::string hermes_home = "~/.hermes";
};
void add_log_options(CLI::App* sub, log_location& where);
// The file the daemon would use: --db, else <hermes-home>/hermes-bridge/events.db.
std::string log_path(const log_location& where);
std::string expand_user(const std::string& path);
// `path` with ~ expanded, made absolute against the current directory and
// normal (as given, ~ expanded, when the current directory is unknown).
std::string absolute_path(const std::string& path);

// A value option whose value is checked by the tool (so a bad value exits 2).
CLI::Option* add_value(CLI::App* sub, const std::string& name, std::string& value,
                       const std::string& description);
// Throws tool_error(exit_usage) for leftover arguments or an option given
// without its value.
void check_usage(const CLI::App* sub);

// Runs a tool: prints "hermes-bridge <name>: <message>" for errors and returns
// their exit code.
int run_tool(const std::string& name, const std::function<int()>& body);
// When `sub` is the command chosen, `chosen` becomes: check its usage, then
// run `body` as tool `name`.
void on_chosen(CLI::App* sub, std::function<int()>& chosen, const std::string& name,
               std::function<int()> body);

// Numbers given on the command line.
int64_t parse_count(const std::string& text, const std::string& option);
double parse_positive(const std::string& text, const std::string& option);

} // namespace hb::app

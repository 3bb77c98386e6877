// The daemon's log: one line per event on stderr, logfmt-style, with stable
// event names so that a person can read it and a program can grep it:
//   hermes-bridge level=info event=log.recovered ms=80 runs_interrupted=0 msg="..."
// The agent's own prints go to stderr too, without this prefix.
// With the json format (for log shippers) each line is one JSON object with
// the same fields: {"level": "info", "event": "log.recovered", "ms": "80", ..., "msg": "..."}.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hb::actors {

enum class log_level { debug = 0, info = 1, warn = 2, error = 3 };

void set_log_level(log_level level);
std::optional<log_level> parse_log_level(std::string_view text);

enum class log_format { logfmt, json };
// Set once at start, before any other thread logs.
void set_log_format(log_format format);
std::optional<log_format> parse_log_format(std::string_view text);

using log_field = std::pair<std::string_view, std::string>;

// Thread-safe: each line is written with a single write(2).
void log_event(log_level level, std::string_view event, std::string_view message,
               std::initializer_list<log_field> fields = {});
// The same, for fields put together at run time (bridge/worker's events).
void log_event(log_level level, std::string_view event, std::string_view message,
               const std::vector<std::pair<std::string, std::string>>& fields);

} // namespace hb::actors

#include "actors/daemon_log.hpp"

#include <unistd.h>

#include <atomic>

namespace hb::actors {

namespace {

std::atomic<int> threshold{static_cast<int>(log_level::info)};

const char* name_of(log_level level) {
  switch (level) {
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warn: return "warn";
    default: return "error";
  }
}

void append_value(std::string& out, std::string_view value) {
  bool plain = !value.empty() && value.find_first_of(" \"=\n\t\\") == std::string_view::npos;
  if (plain) {
    out += value;
    return;
  }
  out += '"';
  for (char c : value) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  out += '"';
}

} // namespace

void set_log_level(log_level level) { threshold = static_cast<int>(level); }

std::optional<log_level> parse_log_level(std::string_view text) {
  for (auto level : {log_level::debug, log_level::info, log_level::warn, log_level::error})
    if (text == name_of(level))
      return level;
  return std::nullopt;
}

void log_event(log_level level, std::string_view event, std::string_view message,
               std::initializer_list<log_field> fields) {
  if (static_cast<int>(level) < threshold)
    return;
  std::string line = "hermes-bridge level=";
  line += name_of(level);
  line += " event=";
  line += event;
  for (const auto& [key, value] : fields) {
    line += ' ';
    line += key;
    line += '=';
    append_value(line, value);
  }
  if (!message.empty()) {
    line += " msg=";
    append_value(line, message);
  }
  line += '\n';
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

} // namespace hb::actors

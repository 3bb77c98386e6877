#include "actors/daemon_log.hpp"

#include "protocol/json_text.hpp"

#include <unistd.h>

#include <atomic>

namespace hb::actors {

namespace {

std::atomic<int> threshold{static_cast<int>(log_level::info)};
std::atomic<log_format> format{log_format::logfmt};

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

template <class Fields>
std::string logfmt_line(log_level level, std::string_view event, std::string_view message, const Fields& fields) {
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
  return line;
}

// Values stay strings, as in logfmt: a shipper sees the same fields either
// way. A message may carry any bytes (an OS error, a path): made valid UTF-8
// so that every line parses.
template <class Fields>
std::string json_line(log_level level, std::string_view event, std::string_view message, const Fields& fields) {
  protocol::object_writer w;
  w.str("level", name_of(level)).str("event", event);
  for (const auto& [key, value] : fields)
    w.str(key, protocol::to_valid_utf8(value));
  if (!message.empty())
    w.str("msg", protocol::to_valid_utf8(message));
  return w.finish();
}

template <class Fields>
void write_event(log_level level, std::string_view event, std::string_view message, const Fields& fields) {
  if (static_cast<int>(level) < threshold)
    return;
  std::string line = format == log_format::json ? json_line(level, event, message, fields)
                                                : logfmt_line(level, event, message, fields);
  line += '\n';
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

} // namespace

void set_log_format(log_format f) { format = f; }

std::optional<log_format> parse_log_format(std::string_view text) {
  if (text == "logfmt")
    return log_format::logfmt;
  if (text == "json")
    return log_format::json;
  return std::nullopt;
}

void set_log_level(log_level level) { threshold = static_cast<int>(level); }

std::optional<log_level> parse_log_level(std::string_view text) {
  for (auto level : {log_level::debug, log_level::info, log_level::warn, log_level::error})
    if (text == name_of(level))
      return level;
  return std::nullopt;
}

void log_event(log_level level, std::string_view event, std::string_view message,
               std::initializer_list<log_field> fields) {
  write_event(level, event, message, fields);
}

void log_event(log_level level, std::string_view event, std::string_view message,
               const std::vector<std::pair<std::string, std::string>>& fields) {
  write_event(level, event, message, fields);
}

} // namespace hb::actors

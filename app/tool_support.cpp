#include "app/tool_support.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <utility>
#include <vector>

namespace hb::app {

const char* const exit_codes_footer =
  "Exit codes: 0 ok, 1 other failure, 2 bad usage or no event log, 3 unknown run or session\n"
  "(or a run whose output was pruned), 4 refused (import of a run already in the log),\n"
  "5 damaged input file (or, for verify, a damaged event log), 6 no daemon answers at the endpoint, 130 stopped with Ctrl-C.";

std::string expand_user(const std::string& path) {
  if (path == "~" || path.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "") + path.substr(1);
  }
  return path;
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(expand_user(path), ec);
  return ec ? expand_user(path) : p.lexically_normal().string();
}

std::string log_path(const log_location& where) {
  if (!where.db.empty())
    return expand_user(where.db);
  std::string home = expand_user(where.hermes_home.empty() ? "~/.hermes" : where.hermes_home);
  return (std::filesystem::path(home) / "hermes-bridge" / "events.db").lexically_normal().string();
}

namespace {
// Value options, to tell "given without a value" apart after parsing.
std::vector<std::pair<const CLI::Option*, const std::string*>>& value_options() {
  static std::vector<std::pair<const CLI::Option*, const std::string*>> all;
  return all;
}
} // namespace

CLI::Option* add_value(CLI::App* sub, const std::string& name, std::string& value,
                       const std::string& description) {
  // expected(0, 1): a missing value reaches check_usage instead of making
  // CLI11 exit with its own code.
  CLI::Option* opt = sub->add_option(name, value, description)->expected(0, 1);
  value_options().emplace_back(opt, &value);
  return opt;
}

void add_log_options(CLI::App* sub, log_location& where) {
  add_value(sub, "--db", where.db, "event log file (default: <hermes-home>/hermes-bridge/events.db)")
    ->envname("HERMES_BRIDGE_DB");
  add_value(sub, "--hermes-home", where.hermes_home,
            "Hermes home, where the daemon keeps its log (default: ~/.hermes)")
    ->envname("HERMES_HOME");
}

void check_usage(const CLI::App* sub) {
  auto extras = sub->remaining();
  if (!extras.empty()) {
    std::string list;
    for (const auto& e : extras)
      list += (list.empty() ? "" : " ") + e;
    throw tool_error(exit_usage, "unexpected argument(s): " + list + " (see --help)");
  }
  for (const auto& [opt, value] : value_options())
    if (opt->count() > 0 && (value->empty() || opt->results().empty() || opt->results().back().empty()))
      throw tool_error(exit_usage, opt->get_name() + " needs a value");
}

int run_tool(const std::string& name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const tool_error& e) {
    std::cerr << "hermes-bridge " << name << ": " << e.what() << std::endl;
    return e.code;
  } catch (const SQLite::Exception& e) {
    std::cerr << "hermes-bridge " << name << ": event log: " << e.what() << std::endl;
    return exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "hermes-bridge " << name << ": " << e.what() << std::endl;
    return exit_failure;
  }
}

int64_t parse_count(const std::string& text, const std::string& option) {
  size_t used = 0;
  long long n = -1;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || n < 0)
    throw tool_error(exit_usage, option + " wants a whole number >= 0, not '" + text + "'");
  return n;
}

double parse_positive(const std::string& text, const std::string& option) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v) || v <= 0)
    throw tool_error(exit_usage, option + " wants a number > 0, not '" + text + "'");
  return v;
}

void on_chosen(CLI::App* sub, std::function<int()>& chosen, const std::string& name,
               std::function<int()> body) {
  sub->callback([sub, &chosen, name, body] {
    chosen = [sub, name, body] {
      return run_tool(name, [&] {
        check_usage(sub);
        return body();
      });
    };
  });
}

} // namespace hb::app

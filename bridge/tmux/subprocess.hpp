// Runs a short-lived helper program (tmux) to completion with a deadline.
// posix_spawn rather than fork: the daemon is multi-threaded and holds an
// embedded interpreter, and nothing may run between fork and exec.
#pragma once

#include <spawn.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace hb::bridge {

struct process_result {
  int exit_code = -1; // -1: killed at the deadline or by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Environment changes for the child: a value sets the variable, nullopt-like
// empty optional is expressed by `unset`.
struct process_env {
  std::map<std::string, std::string> set;
  std::vector<std::string> unset;
};

// Throws std::system_error when the program cannot be started at all.
process_result run_process(const std::vector<std::string>& argv, const std::string& input,
                           std::chrono::milliseconds deadline, const process_env& env = {});

// Attributes for a child of the daemon: no blocked signals (the daemon
// blocks SIGTERM/SIGINT for its signal thread) and the default action for
// SIGPIPE, SIGTERM, SIGINT and SIGHUP; `extra_flags` are added to those the
// setup needs. Pair with posix_spawnattr_destroy.
void init_child_spawnattr(posix_spawnattr_t& attr, short extra_flags = 0);

// The first PATH entry holding an executable `name` (or `name` itself when it
// contains a slash and is executable); empty when there is none.
std::string find_executable(const std::string& name);

} // namespace hb::bridge

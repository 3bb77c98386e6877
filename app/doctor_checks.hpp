// What `hermes-bridge doctor` looks at, one function per part of a set-up.
// Each check only looks (nothing is created, no daemon is started) and says
// what it found and, when something is wrong, what to do about it.
#pragma once

#include <string>
#include <vector>

namespace hb::app {

enum class check_status { ok, warn, fail }; // fail: `serve` would refuse, or could host no agent

struct check_result {
  std::string check;  // a stable name for scripts: "agent_root", "interpreter", "event_log", ...
  check_status status = check_status::ok;
  std::string detail; // what was found, paths named
  std::string fix;    // what to do; empty when nothing needs doing
};

const char* status_name(check_status status);

// The serve options that decide where things are, as serve reads them.
struct doctor_inputs {
  std::string agent_root;
  std::string agent_python;
  std::string hermes_home; // absolute
  std::string db;          // absolute: --db, else <hermes-home>/hermes-bridge/events.db
  std::string endpoint;
  std::string token_file;
  std::string hermes_bin;
  std::string native_dir;  // absolute
};

using check_list = std::vector<check_result>;

// The agent root and how it was found, then every interpreter candidate,
// probed, and the one workers would run on.
void check_agent(const doctor_inputs& in, check_list& out);
// The hermes home and its profiles.
void check_hermes_home(const doctor_inputs& in, check_list& out);
// The event log: path, size, schema version, SQLite's quick_check, free disk.
void check_event_log(const doctor_inputs& in, check_list& out);
// The endpoint: its socket directory's owner and mode, or who can reach a
// TCP port, and the token.
void check_endpoint(const doctor_inputs& in, check_list& out);
// The directories of the workers' and native sessions' sockets (serve
// refuses to start when another user could write to them).
void check_runtime_dirs(const doctor_inputs& in, check_list& out);
// tmux and the hermes TUI command, for native sessions.
void check_native(const doctor_inputs& in, check_list& out);
// How Hermes Studio is pointed at this binary.
void check_studio(const doctor_inputs& in, check_list& out);

} // namespace hb::app

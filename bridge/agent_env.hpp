// Where hermes-agent lives and which Python can run it, found the way Hermes
// Studio's bridge manager finds them, so that a daemon pointed at a real
// install (the source tree in ~/.hermes/hermes-agent, its dependencies in
// ./venv) runs the agent on the agent's own interpreter. No CAF, no Python
// linked: the interpreter is a program this file names and probes.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace hb::bridge {

// Everything the search reads from the process, so tests can supply their own.
struct agent_env_inputs {
  std::string agent_root;      // --agent-root, else HERMES_AGENT_ROOT (CLI11 merges them); may be empty
  std::string hermes_home;     // absolute
  std::string python;          // --agent-python, else HERMES_AGENT_PYTHON; may be empty
  std::string hermes_bin = "hermes";
  std::string path;            // PATH
  std::string cwd;
  std::string home;            // HOME
  std::vector<std::string> uv; // HERMES_AGENT_BRIDGE_UV, UV (set ones only)
  std::string python_env;      // PYTHON
  std::string system_python = "/usr/bin/python3"; // after PATH's
  // Fixed system places, after the ones above (the installer's layout first).
  std::vector<std::string> system_roots = {"/usr/local/lib/hermes-agent", "/usr/local/hermes-agent",
                                           "/opt/hermes/hermes-agent", "/opt/hermes-agent"};

  static agent_env_inputs from_process(std::string agent_root, std::string hermes_home, std::string python);
};

// How to start the agent's Python: argv[0] plus, for `uv run`, its prefix.
struct interpreter {
  std::vector<std::string> argv; // empty: none found
  // Where it came from: "--agent-python", "venv", ".venv", "hermes shebang",
  // "uv", "$PYTHON", "PATH", "pyenv shim", "asdf shim", "system", "current directory".
  std::string source;
  // A version manager's shim picks its interpreter by the directory it runs
  // in: the worker runs the interpreter the probe found behind it instead.
  bool shim = false;
  std::string display() const;   // the command as one line, for logs and errors
};

struct agent_env {
  std::optional<std::string> agent_root; // the directory holding run_agent.py
  std::vector<std::string> roots_tried;  // in order, when none held it
  // Candidates in order (Studio's, then every python3 and python on PATH,
  // the system's, the current directory's), one per real interpreter; the
  // first that passes the probe is used.
  std::vector<interpreter> interpreters;
};

// Pure search over the filesystem: no program is run.
agent_env find_agent_env(const agent_env_inputs& in);

// What an interpreter says about itself and the agent: a short-lived process
// imports run_agent.AIAgent and what the adapter imports next, as a worker
// would (agent root on sys.path, PYTHONPATH kept, HERMES_HOME an empty
// directory so that no profile's .env is loaded). bridge/agent_probe.cpp.
struct interpreter_probe {
  bool ran = false;               // the program started and answered
  std::string executable;         // sys.executable
  std::string version;            // platform.python_version()
  std::string agent_version;      // hermes-agent's, when it can be told
  bool imports_agent = false;
  std::string problem;            // why this interpreter cannot host the agent
};

interpreter_probe probe_interpreter(const interpreter& python, const std::optional<std::string>& agent_root,
                                    std::chrono::milliseconds deadline = std::chrono::seconds(20));

// One candidate as health and the ready line list it.
struct candidate_verdict {
  interpreter python;
  bool probed = false; // false: one before it was taken ("ok": null)
  bool ok = false;
  std::string reason;  // why it was taken or refused
};

// The result of choosing: the interpreter to run workers with, or why none.
struct chosen_interpreter {
  std::optional<interpreter> python;
  interpreter_probe probe;
  std::vector<candidate_verdict> candidates; // every candidate, in order
  std::string error;              // set when python is empty: names everything tried
  // {"python", "python_version", "agent_version", ..., "candidates": [...]} for health
  std::string agent_json() const;
};

// Probes the candidates in order and takes the first that imports the agent;
// those after it are listed as not probed, so start-up costs one probe when
// the first candidate is good.
chosen_interpreter choose_interpreter(const agent_env& env,
                                      std::chrono::milliseconds deadline = std::chrono::seconds(20));

} // namespace hb::bridge

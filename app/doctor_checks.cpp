// doctor's checks of what the daemon hosts and keeps: the agent and its
// interpreters, the hermes home, the event log.
#include "app/doctor_checks.hpp"

#include "app/tool_support.hpp"
#include "bridge/agent_env.hpp"
#include "storage/log_file.hpp"
#include "storage/recovery.hpp"
#include "storage/schema.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace hb::app {

namespace {

check_result result(std::string check, check_status status, std::string detail, std::string fix = {}) {
  return {std::move(check), status, std::move(detail), std::move(fix)};
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string megabytes(uintmax_t bytes) {
  return std::to_string((bytes + (1u << 19)) >> 20) + " MB";
}

// Below this the log soon cannot take a run's output (health then says
// "degraded" and agents wait): worth a warning before it happens.
constexpr uintmax_t low_disk_bytes = uintmax_t{512} << 20;

} // namespace

const char* status_name(check_status status) {
  switch (status) {
    case check_status::ok: return "ok";
    case check_status::warn: return "warn";
    default: return "fail";
  }
}

void check_agent(const doctor_inputs& in, check_list& out) {
  auto env = bridge::find_agent_env(bridge::agent_env_inputs::from_process(in.agent_root, in.hermes_home,
                                                                            in.agent_python));
  if (!env.agent_root) {
    out.push_back(result("agent_root", check_status::fail,
                         "no hermes-agent source tree (run_agent.py) in: " + joined(env.roots_tried),
                         "pass --agent-root DIR (or set HERMES_AGENT_ROOT) to a hermes-agent checkout, or "
                         "install hermes-agent into " + in.hermes_home + "/hermes-agent"));
  } else {
    std::error_code ec;
    bool given = !in.agent_root.empty() && fs::equivalent(expand_user(in.agent_root), *env.agent_root, ec);
    if (given)
      out.push_back(result("agent_root", check_status::ok,
                           *env.agent_root + " (given by --agent-root or HERMES_AGENT_ROOT)"));
    else if (!in.agent_root.empty())
      out.push_back(result("agent_root", check_status::warn,
                           in.agent_root + " holds no run_agent.py; the search found " + *env.agent_root,
                           "point --agent-root (HERMES_AGENT_ROOT) at the directory holding run_agent.py"));
    else
      out.push_back(result("agent_root", check_status::ok,
                           *env.agent_root + " (found by searching: the hermes home, near the hermes command, "
                           "the current directory, the usual places)"));
  }

  for (const auto& python : env.interpreters) {
    auto probe = bridge::probe_interpreter(python, env.agent_root);
    std::string name = python.display() + " (" + python.source + ")";
    if (probe.ran && probe.problem.empty())
      out.push_back(result("interpreter", check_status::ok,
                           name + ": Python " + probe.version + ", hermes-agent " +
                             (probe.agent_version.empty() ? "of unknown version" : probe.agent_version)));
    else
      out.push_back(result("interpreter", check_status::warn, name + ": " + probe.problem,
                           "skipped; install hermes-agent's dependencies for it, or ignore it if another "
                           "candidate works"));
  }
  auto chosen = bridge::choose_interpreter(env);
  if (chosen.python)
    out.push_back(result("agent_python", check_status::ok,
                         "agent workers run on " + chosen.python->display() + " (" + chosen.python->source + ")"));
  else
    out.push_back(result("agent_python", check_status::fail, chosen.error,
                         "pass --agent-python PATH (HERMES_AGENT_PYTHON): the Python hermes-agent's dependencies "
                         "are installed for (its venv/bin/python3 with the installer's layout)"));
}

void check_hermes_home(const doctor_inputs& in, check_list& out) {
  std::error_code ec;
  if (!fs::is_directory(in.hermes_home, ec)) {
    out.push_back(result("hermes_home", check_status::warn, in.hermes_home + " does not exist",
                         "run `hermes setup` (or pass --hermes-home DIR, HERMES_HOME): without it the agent "
                         "has no config.yaml, .env or profiles"));
    return;
  }
  std::vector<std::string> profiles{"default"};
  for (const auto& entry : fs::directory_iterator(in.hermes_home + "/profiles", ec))
    if (entry.is_directory(ec))
      profiles.push_back(entry.path().filename().string());
  std::sort(profiles.begin() + 1, profiles.end());
  bool has_config = fs::is_regular_file(in.hermes_home + "/config.yaml", ec);
  out.push_back(result("hermes_home", has_config ? check_status::ok : check_status::warn,
                       in.hermes_home + (has_config ? "" : " (no config.yaml)") + "; profiles: " + joined(profiles),
                       has_config ? "" : "run `hermes setup` to write a config.yaml (model, provider)"));
}

void check_event_log(const doctor_inputs& in, check_list& out) {
  std::error_code ec;
  fs::path path(in.db);
  // Free space where the log is or will be: its nearest existing directory.
  fs::path dir = path.parent_path();
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.parent_path())
    dir = dir.parent_path();
  auto space = fs::space(dir, ec);
  if (ec)
    out.push_back(
      result("disk", check_status::warn, "cannot tell the free space in " + dir.string() + ": " + ec.message()));
  else if (space.available < low_disk_bytes)
    out.push_back(result("disk", check_status::warn, megabytes(space.available) + " free in " + dir.string(),
                         "free some space: with the disk full the log takes no output and health is degraded"));
  else
    out.push_back(result("disk", check_status::ok, megabytes(space.available) + " free in " + dir.string()));

  if (!fs::exists(path, ec)) {
    out.push_back(result("event_log", check_status::ok, in.db + " does not exist yet: the first serve creates it"));
    return;
  }
  uintmax_t size = fs::file_size(path, ec);
  size = ec ? 0 : size;
  if (auto wal = fs::file_size(in.db + "-wal", ec); !ec)
    size += wal;
  std::string where = in.db + " (" + megabytes(size) + ")";
  try {
    SQLite::Database db(in.db, SQLite::OPEN_READONLY);
    db.setBusyTimeout(5000);
    int version = storage::stored_schema_version(db);
    where += ", schema version " + std::to_string(version);
    if (version > storage::schema_version) {
      out.push_back(result("event_log", check_status::fail, where + ": newer than this build reads (" +
                                                              std::to_string(storage::schema_version) + ")",
                           "run a hermes-bridge as new as the one that wrote it"));
      return;
    }
    std::string verdict = storage::check_integrity(db);
    if (verdict != "ok") {
      out.push_back(result("event_log", check_status::fail, where + ": quick_check: " + verdict,
                           "move it aside (recover what you can with: sqlite3 " + in.db +
                             " .recover), or serve it as it is with --skip-integrity-check"));
      return;
    }
    out.push_back(result("event_log", check_status::ok,
                         where + ", quick_check ok (`hermes-bridge verify` checks every invariant)"));
  } catch (const std::exception& e) {
    out.push_back(result("event_log", check_status::fail, where + ": cannot be read: " + e.what(),
                         "restore it from a backup, or move it aside to start a new log"));
  }
}

} // namespace hb::app

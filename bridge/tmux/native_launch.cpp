// Launching a native session's TUI or re-attaching to the tmux server that
// still runs it, what a re-attaching daemon needs to find its way back
// (launch.json), and the watcher that keeps `alive` current between turns.
#include "bridge/tmux/native_session_impl.hpp"

#include "bridge/tmux/command_line.hpp"
#include "bridge/tmux/native_slots.hpp"
#include "protocol/json_text.hpp"
#include "protocol/sha256.hpp"
#include "protocol/trust.hpp"
#include "protocol/wire_error.hpp"

#include <climits>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace hb::bridge {

using nlohmann::json;
using namespace native_detail;

namespace {

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// 128 bits of SHA-256: ids that collide would share one TUI, and the
// socket path must stay under AF_UNIX's 108 bytes.
std::string hex_digest(const std::string& text) { return protocol::sha256_hex(text).substr(0, 32); }

// Creates `path` (and missing parents) owner-only; refuses a directory that
// another user owns or others can enter.
void private_dir(const std::string& path) {
  try {
    protocol::make_trusted_dir(path, "native session directory");
  } catch (const std::runtime_error& e) {
    throw protocol::runtime_error(e.what());
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
    throw protocol::runtime_error("refusing to use " + path + ": not a directory owned by this user");
  if ((st.st_mode & 0077) != 0 && ::chmod(path.c_str(), 0700) != 0)
    throw protocol::runtime_error("cannot make " + path + " owner-only");
}

std::string real_dir(const std::string& path) {
  char buffer[PATH_MAX];
  struct stat st {};
  if (!::realpath(path.c_str(), buffer) || ::stat(buffer, &st) != 0 || !S_ISDIR(st.st_mode))
    throw protocol::value_error("workspace is not a directory: " + path);
  return buffer;
}

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return json::object();
  auto doc = json::parse(in, nullptr, false);
  return doc.is_object() ? doc : json::object();
}

void write_json_file(const std::string& path, const json& doc) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump();
  }
  std::rename(tmp.c_str(), path.c_str());
}

} // namespace

std::string default_native_runtime_dir() {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg)
    return std::string(xdg) + "/hermes-bridge/native";
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  return base + "/hermes-bridge-" + std::to_string(::getuid()) + "/native";
}

void native_session::impl::start_watching() {
  watcher = std::thread([this] {
    std::unique_lock<std::mutex> lock(watch_mu);
    while (!stopping) {
      watch_cv.wait_for(lock, alive_poll, [this] { return stopping; });
      if (stopping)
        break;
      lock.unlock();
      auto seen = tmux.presence();
      lock.lock();
      if (seen.seen != tmux_presence::unknown) // unanswered is not gone: the next chat would replace a live TUI
        alive = seen.seen == tmux_presence::running;
    }
  });
}

void native_session::impl::stop_watching() {
  {
    std::lock_guard<std::mutex> lock(watch_mu);
    stopping = true;
  }
  watch_cv.notify_all();
  if (watcher.joinable())
    watcher.join();
}

void native_session::impl::remember() {
  json doc;
  doc["launched_at"] = launched_at;
  doc["workspace"] = workspace;
  doc["session_id"] = session_id;
  auto p = pinned();
  doc["hermes_session_id"] = p ? json(*p) : json(nullptr);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!turn_run.empty())
      doc["turn"] = {{"run", turn_run}, {"row", turn_row}};
  }
  write_json_file(dir + "/launch.json", doc);
}

void native_session::impl::remember_turn(const std::string& run, int64_t row) {
  {
    std::lock_guard<std::mutex> lock(mu);
    turn_run = run;
    turn_row = row;
  }
  remember();
}

std::vector<native_live_turn> find_live_native_turns(const native_options& options) {
  std::vector<native_live_turn> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options.runtime_dir, ec)) {
    json doc = read_json_file(entry.path().string() + "/launch.json");
    const json* turn = doc.contains("turn") && doc["turn"].is_object() ? &doc["turn"] : nullptr;
    if (!turn || !doc.value("session_id", json()).is_string() || !turn->value("run", json()).is_string() ||
        !turn->value("row", json()).is_number_integer())
      continue;
    native_live_turn t{doc["session_id"].get<std::string>(), (*turn)["run"].get<std::string>(),
                       (*turn)["row"].get<int64_t>()};
    // Only a directory of this session's own name: a file cannot point elsewhere.
    if (entry.path().filename().string() != hex_digest(t.session_id))
      continue;
    found.push_back(std::move(t));
  }
  return found;
}

std::shared_ptr<native_session> native_session::adopt(const native_live_turn& turn, const native_options& options,
                                                      const std::string& history_json) {
  std::string tmux_bin = find_executable("tmux");
  if (tmux_bin.empty())
    return nullptr;
  std::string dir = options.runtime_dir + "/" + hex_digest(turn.session_id);
  json remembered = read_json_file(dir + "/launch.json");
  const json& t = remembered.value("turn", json::object());
  if (!t.is_object() || t.value("run", "") != turn.run_id || t.value("row", int64_t{0}) != turn.row)
    return nullptr;
  auto p = std::make_unique<impl>(turn.session_id, remembered.value("workspace", ""), dir, options, tmux_bin);
  if (p->tmux.presence().seen != tmux_presence::running)
    return nullptr; // gone: its run ends interrupted, as any the log cannot continue
  live_tuis::all().take(&p->alive, options.max_native);
  p->reattached = true;
  p->launched_at = remembered.value("launched_at", wall_now());
  if (remembered.contains("hermes_session_id") && remembered["hermes_session_id"].is_string())
    p->pin_remembered(remembered["hermes_session_id"].get<std::string>());
  p->turn_run = turn.run_id;
  p->turn_row = turn.row;
  p->adopted_row = turn.row;
  json history = json::parse(history_json, nullptr, false);
  p->history = history.is_array() ? history : json::array();
  p->start_watching();
  return std::shared_ptr<native_session>(new native_session(std::move(p)));
}

std::shared_ptr<native_session> native_session::create(const std::string& session_id,
                                                       const std::string& workspace_in,
                                                       const native_options& options,
                                                       std::string& config_json) {
  const char* home = std::getenv("HOME");
  check_workspace_text(workspace_in);
  std::string workspace = real_dir(workspace_in.empty() ? (home && *home ? home : "/") : workspace_in);
  check_workspace_text(workspace);
  auto command = split_command_line(options.hermes_bin, home ? home : "");
  std::string hermes = command.empty() ? std::string() : find_executable(command[0]);
  if (hermes.empty())
    throw protocol::wire_error("FileNotFoundError",
                               "hermes TUI not found: '" + (command.empty() ? options.hermes_bin : command[0]) +
                                 "' (install hermes-agent, or point --hermes-bin / HERMES_BIN at it)");
  command[0] = hermes;
  std::string tmux_bin = find_executable("tmux");
  if (tmux_bin.empty())
    throw protocol::wire_error("FileNotFoundError", "tmux not found on PATH: native sessions need tmux " +
                                                      std::string(minimum_tmux) + " or newer");
  if (auto problem = tmux_version_problem(tmux_bin))
    throw protocol::runtime_error(*problem);
  std::string dir = options.runtime_dir + "/" + hex_digest(session_id);
  private_dir(dir);

  auto p = std::make_unique<impl>(session_id, workspace, dir, options, tmux_bin);
  live_tuis::all().take(&p->alive, options.max_native);
  json remembered = read_json_file(dir + "/launch.json");
  auto seen = p->tmux.presence();
  if (seen.seen == tmux_presence::unknown)
    throw protocol::runtime_error("cannot tell whether the hermes TUI of session " + session_id +
                                  " still runs (" + seen.detail + "); try again (nothing was started over it)");
  if (seen.seen == tmux_presence::running && remembered.value("workspace", "") == workspace) {
    p->reattached = true;
    p->launched_at = remembered.value("launched_at", wall_now());
    if (remembered.contains("hermes_session_id") && remembered["hermes_session_id"].is_string()) {
      p->pin_remembered(remembered["hermes_session_id"].get<std::string>());
    }
  } else {
    p->tmux.kill(); // a TUI in another workspace, or a stale socket
    ::unlink((dir + "/tmux.sock").c_str());
    p->launched_at = wall_now();
    process_env env;
    env.set["HERMES_HOME"] = options.hermes_home;
    p->tmux.launch(workspace, command, env, options.width, options.height);
    p->remember();
  }
  p->start_watching();

  json config;
  config["requested_session_id"] = session_id;
  config["harness"] = "native";
  config["workspace"] = workspace;
  config["hermes_bin"] = hermes;
  if (command.size() > 1)
    config["hermes_command"] = command;
  config["tmux_socket"] = p->tmux.socket_path();
  config["tmux_target"] = p->tmux.target();
  config["attach"] = p->tmux.attach_command();
  config["state_db"] = options.state_db;
  config["reattached"] = p->reattached;
  config_json = protocol::dumps(config);
  return std::shared_ptr<native_session>(new native_session(std::move(p)));
}

} // namespace hb::bridge

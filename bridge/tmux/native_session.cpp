#include "bridge/tmux/native_session_impl.hpp"

#include "bridge/tmux/row_mirror.hpp"
#include "protocol/json_text.hpp"
#include "protocol/sha256.hpp"
#include "protocol/trust.hpp"
#include "protocol/wire_error.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace hb::bridge {

using nlohmann::json;
using namespace native_detail;

namespace {

constexpr milliseconds row_poll{100};
constexpr milliseconds steer_settle{3000};

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

turn_outcome outcome(const std::string& status, const json& result, const std::optional<std::string>& error,
                     const json& history) {
  turn_outcome out;
  out.status = status;
  out.result = protocol::dumps(result);
  out.error = error;
  if (history.is_array()) {
    out.history = protocol::dumps(history);
    out.message_count = static_cast<int64_t>(history.size());
  }
  return out;
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
      bool up = tmux.alive();
      lock.lock();
      alive = up;
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
  write_json_file(dir + "/launch.json", doc);
}

native_session::native_session(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

native_session::~native_session() = default;

std::shared_ptr<native_session> native_session::create(const std::string& session_id,
                                                       const std::string& workspace_in,
                                                       const native_options& options,
                                                       std::string& config_json) {
  const char* home = std::getenv("HOME");
  std::string workspace = real_dir(workspace_in.empty() ? (home && *home ? home : "/") : workspace_in);
  std::string hermes = find_executable(options.hermes_bin);
  if (hermes.empty())
    throw protocol::wire_error("FileNotFoundError",
                               "hermes TUI not found: '" + options.hermes_bin +
                                 "' (install hermes-agent, or point --hermes-bin / HERMES_BIN at it)");
  std::string tmux_bin = find_executable("tmux");
  if (tmux_bin.empty())
    throw protocol::wire_error("FileNotFoundError", "tmux not found on PATH: native sessions need it");
  std::string dir = options.runtime_dir + "/" + hex_digest(session_id);
  private_dir(dir);

  auto p = std::make_unique<impl>(session_id, workspace, dir, options, tmux_bin);
  json remembered = read_json_file(dir + "/launch.json");
  if (p->tmux.alive() && remembered.value("workspace", "") == workspace) {
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
    p->tmux.launch(workspace, {hermes}, env, options.width, options.height);
    p->remember();
  }
  p->start_watching();

  json config;
  config["requested_session_id"] = session_id;
  config["harness"] = "native";
  config["workspace"] = workspace;
  config["hermes_bin"] = hermes;
  config["tmux_socket"] = p->tmux.socket_path();
  config["tmux_target"] = p->tmux.target();
  config["attach"] = p->tmux.attach_command();
  config["state_db"] = options.state_db;
  config["reattached"] = p->reattached;
  config_json = protocol::dumps(config);
  return std::shared_ptr<native_session>(new native_session(std::move(p)));
}

void native_session::prepare_turn() {
  impl_->interrupt_sent = false;
  impl_->let_go = false;
}

turn_outcome native_session::run_turn(const std::shared_ptr<turn_sink>& sink, const std::string& request_json) {
  auto& s = *impl_;
  json request = json::parse(request_json, nullptr, false);
  json base = request.is_object() && request.contains("conversation_history") &&
                  request["conversation_history"].is_array()
                ? request["conversation_history"]
                : [&] {
                    std::lock_guard<std::mutex> lock(s.mu);
                    return s.history;
                  }();
  row_mirror mirror(*sink, base);
  auto result = [&](bool completed, bool interrupted) {
    json r;
    r["final_response"] = mirror.final_text();
    r["completed"] = completed;
    r["interrupted"] = interrupted;
    auto p = s.pinned();
    r["hermes_session_id"] = p ? json(*p) : json(nullptr);
    return r;
  };
  s.turn_live = true;
  struct live_guard {
    std::atomic<bool>& flag;
    ~live_guard() { flag = false; }
  } guard{s.turn_live};
  try {
    std::string text;
    if (request.is_object() && request.contains("message"))
      text = request["message"].is_string() ? request["message"].get<std::string>()
                                            : protocol::py_str(request["message"]);
    if (normalized_message(text).empty())
      throw protocol::value_error("hermes native turn had no user text to send");
    int64_t baseline = s.state.max_message_id();
    mirror.skip_to(baseline);
    mirror.delivered(s.deliver_confirmed(text, baseline));

    approval_watch approvals(s, sink);
    auto next_approval = clock_type::now();
    auto next_alive = clock_type::now() + alive_poll;
    std::optional<std::string> failure;
    while (true) {
      s.follow_children();
      for (const auto& row : s.state.rows_after(s.sessions(), mirror.cursor()))
        if (!mirror.finished())
          mirror.feed(row);
      if (mirror.finished() || s.let_go)
        break;
      auto now = clock_type::now();
      if (s.interrupt_sent &&
          now - clock_type::time_point(clock_type::duration(s.interrupt_at.load())) > s.options.interrupt_grace)
        break;
      if (now >= next_alive) {
        next_alive = now + alive_poll;
        if (!s.tmux.alive()) {
          s.alive = false;
          for (const auto& row : s.state.rows_after(s.sessions(), mirror.cursor()))
            if (!mirror.finished())
              mirror.feed(row);
          if (!mirror.finished())
            failure = exited_message;
          break;
        }
      }
      if (now >= next_approval) {
        next_approval = now + approval_watch::interval;
        approvals.poll();
      }
      std::this_thread::sleep_for(row_poll);
    }
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.history = mirror.history();
    }
    if (failure)
      return outcome("error", result(false, false), failure, mirror.history());
    if (s.let_go && !mirror.finished())
      return outcome("interrupted", result(false, false),
                     std::string("hermes-bridge stopped mirroring this turn; the TUI goes on with it"),
                     mirror.history());
    bool interrupted = s.interrupt_sent || mirror.interrupted();
    return outcome(interrupted ? "interrupted" : "complete", result(mirror.finished(), interrupted),
                   std::nullopt, mirror.history());
  } catch (const protocol::wire_error& e) {
    // Interrupted while the message was still being delivered: the turn
    // never started, and it was the client's wish that it stop.
    std::string status = s.interrupt_sent || s.let_go ? "interrupted" : "error";
    return outcome(status, result(false, status == "interrupted"), std::string(e.what()), mirror.history());
  } catch (const std::exception& e) {
    return outcome("error", result(false, false), std::string("native harness: ") + e.what(),
                   mirror.history());
  }
}

void native_session::interrupt(const std::string&) {
  auto& s = *impl_;
  s.interrupt_at = clock_type::now().time_since_epoch().count();
  s.interrupt_sent = true;
  if (!s.turn_live)
    return; // Escape at an idle prompt would do nothing useful
  std::lock_guard<std::mutex> lock(s.input_mu);
  try {
    s.tmux.send_keys({"Escape"});
  } catch (const protocol::wire_error&) {
    // A TUI that is gone has nothing left to stop.
  }
}

void native_session::let_go(const std::string&) {
  impl_->let_go = true;
}

bool native_session::steer(const std::string& text) {
  auto& s = *impl_;
  if (!s.turn_live || normalized_message(text).empty())
    return false; // idle: a paste would start a turn nobody is mirroring
  s.deliver(text, steer_settle);
  return true;
}

bool native_session::usable() const { return impl_->alive; }

std::string native_session::live_status() const {
  auto& s = *impl_;
  json status;
  status["harness"] = "native";
  status["alive"] = s.alive.load();
  status["workspace"] = s.workspace;
  status["tmux_socket"] = s.tmux.socket_path();
  status["tmux_target"] = s.tmux.target();
  status["attach"] = s.tmux.attach_command();
  auto p = s.pinned();
  status["hermes_session_id"] = p ? json(*p) : json(nullptr);
  status["reattached"] = s.reattached;
  return protocol::dumps(status);
}

void native_session::close() {
  auto& s = *impl_;
  s.stop_watching();
  s.tmux.kill();
  s.alive = false;
  ::unlink((s.dir + "/launch.json").c_str());
  ::unlink((s.dir + "/tmux.sock").c_str());
  ::rmdir(s.dir.c_str());
}

} // namespace hb::bridge

#include "bridge/tmux/native_session_impl.hpp"

#include "bridge/tmux/command_line.hpp"
#include "bridge/tmux/native_interrupt.hpp"
#include "bridge/tmux/native_slots.hpp"
#include "bridge/tmux/tui_command.hpp"
#include "bridge/tmux/row_mirror.hpp"
#include "protocol/json_text.hpp"
#include "protocol/request.hpp"
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
// Hermes turns a steer no tool result carried into the next turn right after
// the answer; this long without that user row, it was carried after all.
constexpr milliseconds steer_leftover_wait{4000};

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
  write_json_file(dir + "/launch.json", doc);
}

native_session::native_session(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

native_session::~native_session() = default;

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

void native_session::prepare_turn() {
  impl_->interrupt_sent = false;
  impl_->let_go = false;
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->steers.clear();
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
    std::atomic<bool>& live;
    std::atomic<bool>& own;
    ~live_guard() { live = own = false; }
  } guard{s.turn_live, s.own_turn};
  try {
    std::string text;
    if (request.is_object() && request.contains("message"))
      text = request["message"].is_string() ? request["message"].get<std::string>()
                                            : protocol::py_str(request["message"]);
    if (normalized_message(text).empty())
      throw protocol::value_error("hermes native turn had no user text to send");
    bool as_command = request.is_object() && protocol::field_truthy(request, "tui_command");
    check_native_text(text, as_command);
    // Never paste into a running turn: Hermes would interrupt it and the
    // message would inherit its text.
    if (!s.wait_until_idle(s.options.settle_timeout))
      return outcome("error", result(false, false),
                     "session " + s.session_id +
                       " is already running (the hermes TUI is still in a turn; interrupt it or wait)",
                     mirror.history());
    if (as_command) { // no user row will come: typed once, the run ends as it is typed
      s.send_tui_command(text);
      sink->event(tui_command_event(text));
      return outcome("complete", result(true, false), std::nullopt, mirror.history());
    }
    int64_t baseline = s.state.max_message_id();
    int64_t own_row = s.deliver_confirmed(text, baseline);
    // Rows before our own user row belong to an earlier turn.
    mirror.skip_to(own_row - 1);
    mirror.delivered(own_row);

    approval_watch approvals(s, sink);
    clarify_watch clarify(s, sink, own_row);
    interrupt_driver stopping(s);
    auto next_screen = clock_type::now();
    auto next_alive = clock_type::now() + alive_poll;
    auto answered_at = clock_type::now(); // tmux last said whether the TUI runs
    std::optional<clock_type::time_point> awaiting_since;
    std::optional<std::string> failure;
    std::optional<std::string> unconfirmed;
    bool reported = false; // native.interrupt emitted
    auto drain = [&] {
      std::vector<int64_t> steers;
      {
        std::lock_guard<std::mutex> lock(s.mu);
        steers.swap(s.steers);
      }
      for (auto at : steers)
        mirror.steered(at);
      s.follow_children();
      for (const auto& row : s.state.rows_after(s.sessions(), mirror.cursor()))
        if (!mirror.finished())
          mirror.feed(row);
    };
    while (true) {
      drain();
      if (mirror.finished() || s.let_go)
        break;
      auto now = clock_type::now();
      if (mirror.awaiting_steer()) {
        if (!awaiting_since)
          awaiting_since = now;
        else if (now - *awaiting_since > steer_leftover_wait)
          mirror.steer_not_coming();
      }
      if (now >= next_alive) {
        next_alive = now + alive_poll;
        auto seen = s.tmux.presence();
        if (seen.seen == tmux_presence::gone) {
          s.alive = false;
          drain();
          if (!mirror.finished())
            failure = exited_message;
          break;
        }
        if (seen.seen == tmux_presence::running)
          answered_at = now;
        else if (now - answered_at > unanswered_limit) {
          failure = "cannot ask tmux about the hermes TUI (" + seen.detail + "); it may still run";
          break;
        }
      }
      if (now >= next_screen) {
        next_screen = now + approval_watch::interval;
        std::string pane;
        try {
          pane = s.tmux.capture();
        } catch (const protocol::wire_error&) {
          continue; // the TUI is gone; the alive check says so
        }
        approvals.poll(pane);
        clarify.poll(pane);
        auto stop = stopping.poll(read_tui_screen(pane), now);
        if (stop == interrupt_driver::state::stopped) {
          drain(); // a partial answer stored just before the prompt came back
          sink->event(interrupt_event(true, mirror.finished() ? "partial answer stored" : "prompt idle again"));
          reported = true;
          break;
        }
        if (stop == interrupt_driver::state::unconfirmed) {
          unconfirmed = stopping.sent()
                          ? "Ctrl-C did not stop the hermes turn: the TUI still shows it running; it may go on "
                            "in the terminal, and the next chat waits for it"
                          : "the hermes TUI never showed the turn running, so no Ctrl-C was sent (one at an idle "
                            "prompt would close it)";
          sink->event(interrupt_event(false, *unconfirmed));
          break;
        }
      }
      std::this_thread::sleep_for(row_poll);
    }
    if (!reported && !unconfirmed && mirror.finished() && s.interrupt_sent && stopping.sent())
      sink->event(interrupt_event(true, "partial answer stored"));
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.history = mirror.history();
    }
    if (failure)
      return outcome("error", result(false, false), failure, mirror.history());
    if (s.let_go && !mirror.finished())
      return outcome("interrupted", result(false, false),
                     std::string(stopped_mirroring),
                     mirror.history());
    bool interrupted = s.interrupt_sent || mirror.interrupted();
    return outcome(interrupted ? "interrupted" : "complete", result(mirror.finished(), interrupted), unconfirmed,
                   mirror.history());
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

// Only asks: the turn's own loop sends Ctrl-C when the TUI shows the turn
// running (Escape, which older code sent, is bound to nothing in the TUI).
void native_session::interrupt(const std::string&) {
  auto& s = *impl_;
  s.interrupt_at = clock_type::now().time_since_epoch().count();
  s.interrupt_sent = true;
}

void native_session::let_go(const std::string&) {
  impl_->let_go = true;
}

// Hermes' mid-turn steer is its inline command; plain text would interrupt
// the turn and start a new one.
bool native_session::steer(const std::string& text) {
  auto& s = *impl_;
  std::string flat = normalized_message(text);
  for (auto& c : flat)
    if (c == '\n' || c == '\t')
      c = ' '; // one command line
  if (!s.turn_live || flat.empty())
    return false; // idle: a paste would start a turn nobody is mirroring
  std::lock_guard<std::mutex> lock(s.input_mu);
  // Idle at the prompt, /steer would be queued as a new turn; before our
  // message is stored, the turn running is someone else's. While a panel
  // or prompt asks, what is typed answers it: its Enter would pick the
  // highlighted row (an approval panel preselects "once").
  tui_screen now = s.screen();
  if (!s.own_turn || !now.busy || now.asking)
    return false;
  int64_t at = s.state.max_message_id();
  s.type("/steer " + flat, steer_settle);
  std::lock_guard<std::mutex> steers(s.mu);
  s.steers.push_back(at);
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

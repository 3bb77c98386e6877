#include "bridge/tmux/native_session.hpp"

#include "bridge/tmux/hermes_state.hpp"
#include "bridge/tmux/pane_text.hpp"
#include "bridge/tmux/row_mirror.hpp"
#include "bridge/tmux/tmux_server.hpp"
#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace hb::bridge {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds pane_poll{200};
constexpr milliseconds row_poll{100};
constexpr milliseconds approval_poll{300};
constexpr milliseconds alive_poll{1000};
constexpr milliseconds commit_wait{5000};
constexpr milliseconds steer_settle{3000};
// After a key answered the prompt, a prompt still showing this long later is
// a new question (or the key was lost): ask again.
constexpr milliseconds answer_echo{2000};
// Hermes may stamp its session a little before our clock read the launch.
constexpr double discovery_skew_s = 10;
const char* exited_message = "hermes terminal is no longer running (the TUI exited)";

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Hermes session ids pinned by some native session of this daemon: two
// TUIs in one workspace must never mirror each other's session.
struct claims {
  std::mutex mu;
  std::set<std::string> ids;
  static claims& all() {
    static claims c;
    return c;
  }
  bool take(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    return ids.insert(id).second;
  }
  bool taken(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    return ids.count(id) > 0;
  }
  void give_back(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    ids.erase(id);
  }
};

std::string hex_digest(const std::string& text) { // FNV-1a: stable across builds
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

// Creates `path` (and missing parents) owner-only; refuses a directory that
// another user owns or others can enter.
void private_dir(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/')
      continue;
    std::string part = path.substr(0, at);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      throw protocol::runtime_error("cannot create " + part + ": " + std::strerror(errno));
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

std::string without_whitespace(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += c;
  return out;
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

std::string outcome(const std::string& status, json result, const std::optional<std::string>& error,
                    const json& history) {
  json out;
  out["status"] = status;
  out["result"] = std::move(result);
  out["error"] = error ? json(*error) : json(nullptr);
  out["history"] = history;
  return protocol::dumps(out);
}

} // namespace

std::string default_native_runtime_dir() {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg)
    return std::string(xdg) + "/hermes-bridge/native";
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  return base + "/hermes-bridge-" + std::to_string(::getuid()) + "/native";
}

struct native_session::impl {
  std::string session_id;
  std::string workspace;
  std::string dir;
  native_options options;
  tmux_server tmux;
  hermes_state state;
  double launched_at = 0;
  bool reattached = false;

  std::mutex input_mu;             // one paste or key sequence at a time
  mutable std::mutex mu;           // guards the fields below
  std::vector<std::string> chain;  // the pinned Hermes session and its compression children
  json history = json::array();
  std::atomic<bool> alive{true};
  std::atomic<bool> turn_live{false};
  std::atomic<bool> interrupt_sent{false};
  std::atomic<clock_type::rep> interrupt_at{0}; // written by interrupt(), read by the turn

  std::mutex watch_mu;
  std::condition_variable watch_cv;
  bool stopping = false;
  std::thread watcher;

  impl(std::string id, std::string ws, std::string d, native_options o, std::string tmux_bin)
    : session_id(std::move(id)), workspace(std::move(ws)), dir(std::move(d)), options(std::move(o)),
      tmux(std::move(tmux_bin), dir + "/tmux.sock"), state(options.state_db) {}

  ~impl() {
    stop_watching();
    std::lock_guard<std::mutex> lock(mu);
    if (!chain.empty())
      claims::all().give_back(chain.front());
  }

  void start_watching() {
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

  void stop_watching() {
    {
      std::lock_guard<std::mutex> lock(watch_mu);
      stopping = true;
    }
    watch_cv.notify_all();
    if (watcher.joinable())
      watcher.join();
  }

  std::optional<std::string> pinned() const {
    std::lock_guard<std::mutex> lock(mu);
    return chain.empty() ? std::nullopt : std::optional<std::string>(chain.front());
  }

  std::vector<std::string> sessions() const {
    std::lock_guard<std::mutex> lock(mu);
    return chain;
  }

  void pin(const std::string& id) {
    {
      std::lock_guard<std::mutex> lock(mu);
      chain = {id};
    }
    remember();
  }

  // Compression ends Hermes' session and continues in a child: follow it.
  void follow_children() {
    std::string last;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (chain.empty())
        return;
      last = chain.back();
    }
    while (auto child = state.newest_child(last)) {
      std::lock_guard<std::mutex> lock(mu);
      if (std::find(chain.begin(), chain.end(), *child) != chain.end())
        break;
      chain.push_back(*child);
      last = *child;
    }
  }

  // What a re-attaching daemon needs to find its way back.
  void remember() {
    json doc;
    doc["launched_at"] = launched_at;
    doc["workspace"] = workspace;
    doc["session_id"] = session_id;
    auto p = pinned();
    doc["hermes_session_id"] = p ? json(*p) : json(nullptr);
    write_json_file(dir + "/launch.json", doc);
  }

  std::string settle(milliseconds limit) {
    auto until = clock_type::now() + limit;
    std::string last;
    int stable = 0;
    while (clock_type::now() < until) {
      std::string pane = tmux.capture();
      bool blank = without_whitespace(pane).empty();
      stable = (!blank && pane == last) ? stable + 1 : 0;
      last = std::move(pane);
      if (stable >= 2) // three equal captures in a row
        break;
      std::this_thread::sleep_for(pane_poll);
    }
    return last;
  }

  // Types `text` into the TUI's input as one bracketed paste and submits it
  // with exactly one Enter, once the paste is visibly committed (an Enter
  // that arrives first would become a newline inside the draft).
  void deliver(const std::string& text, milliseconds settle_limit) {
    std::lock_guard<std::mutex> lock(input_mu);
    if (!tmux.alive())
      throw protocol::runtime_error(exited_message);
    settle(settle_limit);
    tmux.send_keys({"C-a"});
    tmux.send_keys({"C-k"});
    tmux.paste(paste_payload(text));
    std::string needle = without_whitespace(commit_needle(text));
    auto until = clock_type::now() + commit_wait;
    while (!needle.empty() && clock_type::now() < until) {
      if (without_whitespace(tmux.capture()).find(needle) != std::string::npos)
        break;
      std::this_thread::sleep_for(pane_poll);
    }
    std::this_thread::sleep_for(milliseconds(300));
    tmux.send_keys({"Enter"});
  }

  // The user row our message became, once Hermes stored it.
  std::optional<int64_t> find_user_row(const std::string& text, int64_t baseline) {
    if (!state.available())
      return std::nullopt;
    if (pinned()) {
      follow_children();
      for (const auto& row : state.rows_after(sessions(), baseline))
        if (row.role == "user")
          return row.id;
      return std::nullopt;
    }
    // Not pinned yet: Hermes picks its own session id. Ours started after
    // the launch, in this workspace, and holds our message.
    // (Another TUI in the same workspace may have stored its own message
    // first: only our text identifies our session.)
    std::string wanted = normalized_message(text);
    for (const auto& s : state.sessions_since(launched_at - discovery_skew_s)) {
      if ((!s.cwd.empty() && s.cwd != workspace) || claims::all().taken(s.id))
        continue;
      for (const auto& row : state.rows_after({s.id}, baseline)) {
        if (row.role != "user")
          continue;
        if (normalized_message(row.content).find(wanted) != std::string::npos && claims::all().take(s.id)) {
          pin(s.id);
          return row.id;
        }
        break;
      }
    }
    return std::nullopt;
  }

  // Delivers, confirms by the new user row, re-delivers once (Hermes drops
  // input while it cold-starts), then gives up with a clear error.
  int64_t deliver_confirmed(const std::string& text, int64_t baseline) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      deliver(text, options.settle_timeout);
      auto until = clock_type::now() + options.confirm_timeout;
      while (clock_type::now() < until) {
        if (auto id = find_user_row(text, baseline))
          return *id;
        if (interrupt_sent)
          throw protocol::runtime_error("interrupted before hermes accepted the message");
        if (!tmux.alive())
          throw protocol::runtime_error(exited_message);
        std::this_thread::sleep_for(pane_poll);
      }
    }
    throw protocol::runtime_error("hermes did not accept the message: no new user row in " +
                                  state.path() + " after 2 deliveries");
  }
};

namespace {

// The approval prompt as a question to the client. The TUI waits on it;
// the client's answer becomes the key of the chosen option, sent only while
// the prompt still shows. A prompt that goes away unanswered was answered
// at the terminal.
class approval_watch {
public:
  approval_watch(native_session::impl& s, std::shared_ptr<turn_sink> sink) : s_(s), sink_(std::move(sink)) {}
  // A prompt gone by the end of the turn was answered at the terminal
  // (the turn went on); one still showing is left to the run's end.
  ~approval_watch() {
    if (!asking_.valid())
      return;
    bool showing = true;
    try {
      showing = parse_approval_prompt(s_.tmux.capture()).has_value();
    } catch (const protocol::wire_error&) {
      showing = false;
    }
    settle(showing ? "run ended" : "answered in the terminal");
  }

  void poll() {
    std::optional<approval_prompt> prompt;
    try {
      prompt = parse_approval_prompt(s_.tmux.capture());
    } catch (const protocol::wire_error&) {
      return; // the TUI is gone; the run loop notices
    }
    if (asking_.valid()) {
      if (!prompt) {
        settle("answered in the terminal");
        return;
      }
      if (asking_.wait_for(milliseconds(0)) != std::future_status::ready)
        return;
      std::string choice = asking_.get();
      if (!choice.empty())
        answer(*prompt, choice);
      return;
    }
    if (!prompt) {
      answered_at_.reset();
      return;
    }
    if (answered_at_ && clock_type::now() - *answered_at_ < answer_echo)
      return;
    answered_at_.reset();
    ask(*prompt);
  }

private:
  void ask(const approval_prompt& prompt) {
    json request;
    request["command"] = prompt.preview;
    request["description"] = "Hermes flagged a dangerous command. Run it?";
    request["choices"] = prompt.choices();
    auto offered = prompt.choices();
    request["allow_permanent"] = std::find(offered.begin(), offered.end(), "always") != offered.end();
    request["timeout_ms"] = static_cast<int64_t>(s_.options.approval_timeout_s * 1000);
    request["harness"] = "native";
    auto sink = sink_;
    double timeout = s_.options.approval_timeout_s;
    asking_ = std::async(std::launch::async, [sink, body = protocol::dumps(request), timeout] {
      return sink->ask_approval(body, timeout);
    });
  }

  void answer(const approval_prompt& prompt, const std::string& choice) {
    std::string key = prompt.key_for(choice);
    if (key.empty())
      return;
    std::lock_guard<std::mutex> lock(s_.input_mu);
    try {
      s_.tmux.send_keys({key});
      if (prompt.legacy)
        s_.tmux.send_keys({"Enter"});
    } catch (const protocol::wire_error&) {
      // The TUI went away; nothing waits for the key any more.
    }
    answered_at_ = clock_type::now();
  }

  void settle(const std::string& reason) {
    if (!asking_.valid())
      return;
    sink_->withdraw_questions(reason);
    asking_.get(); // the broker answers a withdrawn question at once
  }

  native_session::impl& s_;
  std::shared_ptr<turn_sink> sink_;
  std::future<std::string> asking_;
  std::optional<clock_type::time_point> answered_at_;
};

} // namespace

native_session::native_session(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

native_session::~native_session() = default;

std::shared_ptr<native_session> native_session::create(const std::string& session_id,
                                                       const std::string& workspace_in,
                                                       const native_options& options,
                                                       std::string& config_json) {
  std::string hermes = find_executable(options.hermes_bin);
  if (hermes.empty())
    throw protocol::wire_error("FileNotFoundError",
                               "hermes TUI not found: '" + options.hermes_bin +
                                 "' (install hermes-agent, or point --hermes-bin / HERMES_BIN at it)");
  std::string tmux_bin = find_executable("tmux");
  if (tmux_bin.empty())
    throw protocol::wire_error("FileNotFoundError", "tmux not found on PATH: native sessions need it");
  const char* home = std::getenv("HOME");
  std::string workspace = real_dir(workspace_in.empty() ? (home && *home ? home : "/") : workspace_in);
  std::string dir = options.runtime_dir + "/" + hex_digest(session_id);
  private_dir(dir);

  auto p = std::make_unique<impl>(session_id, workspace, dir, options, tmux_bin);
  json remembered = read_json_file(dir + "/launch.json");
  if (p->tmux.alive() && remembered.value("workspace", "") == workspace) {
    p->reattached = true;
    p->launched_at = remembered.value("launched_at", wall_now());
    if (remembered.contains("hermes_session_id") && remembered["hermes_session_id"].is_string()) {
      std::string pinned = remembered["hermes_session_id"];
      if (claims::all().take(pinned))
        p->chain = {pinned};
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
}

std::string native_session::run_turn(const std::shared_ptr<turn_sink>& sink, const std::string& request_json) {
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
      if (mirror.finished())
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
        next_approval = now + approval_poll;
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
    bool interrupted = s.interrupt_sent || mirror.interrupted();
    return outcome(interrupted ? "interrupted" : "complete", result(mirror.finished(), interrupted),
                   std::nullopt, mirror.history());
  } catch (const protocol::wire_error& e) {
    return outcome("error", result(false, false), std::string(e.what()), mirror.history());
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

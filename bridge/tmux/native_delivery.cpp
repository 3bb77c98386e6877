// Getting a message into the TUI (settle, paste, see it, one Enter) and
// finding the state.db row it became, which also tells us which of Hermes'
// sessions is this TUI's.
#include "bridge/tmux/native_session_impl.hpp"

#include "protocol/wire_error.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace hb::bridge {

using namespace native_detail;

namespace native_detail {

const char* const exited_message = "hermes terminal is no longer running (the TUI exited)";

std::string without_whitespace(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += c;
  return out;
}

} // namespace native_detail

namespace {

constexpr milliseconds commit_wait{5000};
// Hermes may stamp its session a little before our clock read the launch.
constexpr double discovery_skew_s = 10;

// Hermes session ids pinned by some native session of this daemon: two
// TUIs in one workspace must never mirror each other's session.
class claims {
public:
  static claims& all() {
    static claims c;
    return c;
  }
  bool take(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_.insert(id).second;
  }
  bool taken(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_.count(id) > 0;
  }
  void give_back(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    ids_.erase(id);
  }

private:
  std::mutex mu_;
  std::set<std::string> ids_;
};

} // namespace

native_session::impl::impl(std::string id, std::string ws, std::string d, native_options o,
                           std::string tmux_bin)
  : session_id(std::move(id)), workspace(std::move(ws)), dir(std::move(d)), options(std::move(o)),
    tmux(std::move(tmux_bin), dir + "/tmux.sock"), state(options.state_db) {}

native_session::impl::~impl() {
  stop_watching();
  std::lock_guard<std::mutex> lock(mu);
  if (!chain.empty())
    claims::all().give_back(chain.front());
}

std::optional<std::string> native_session::impl::pinned() const {
  std::lock_guard<std::mutex> lock(mu);
  return chain.empty() ? std::nullopt : std::optional<std::string>(chain.front());
}

std::vector<std::string> native_session::impl::sessions() const {
  std::lock_guard<std::mutex> lock(mu);
  return chain;
}

void native_session::impl::pin(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu);
    chain = {id};
  }
  remember();
}

bool native_session::impl::pin_remembered(const std::string& id) {
  if (!claims::all().take(id))
    return false;
  std::lock_guard<std::mutex> lock(mu);
  chain = {id};
  return true;
}

// Compression ends Hermes' session and continues in a child: follow it.
void native_session::impl::follow_children() {
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

std::string native_session::impl::settle(milliseconds limit) {
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
// with exactly one Enter, once the paste is visibly committed (an Enter that
// arrives first would become a newline inside the draft).
void native_session::impl::deliver(const std::string& text, milliseconds settle_limit) {
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
std::optional<int64_t> native_session::impl::find_user_row(const std::string& text, int64_t baseline) {
  if (!state.available())
    return std::nullopt;
  if (pinned()) {
    follow_children();
    for (const auto& row : state.rows_after(sessions(), baseline))
      if (row.role == "user")
        return row.id;
    return std::nullopt;
  }
  // Not pinned yet: Hermes picks its own session id. Ours started after the
  // launch, in this workspace, and holds our message (another TUI in the same
  // workspace may have stored its own message first: only our text tells).
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
int64_t native_session::impl::deliver_confirmed(const std::string& text, int64_t baseline) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (interrupt_sent || let_go) // before the chat was even answered: nothing is pasted
      throw protocol::runtime_error("interrupted before hermes accepted the message");
    deliver(text, options.settle_timeout);
    auto until = clock_type::now() + options.confirm_timeout;
    while (clock_type::now() < until) {
      if (auto id = find_user_row(text, baseline))
        return *id;
      if (interrupt_sent || let_go)
        throw protocol::runtime_error("interrupted before hermes accepted the message");
      if (!tmux.alive())
        throw protocol::runtime_error(exited_message);
      std::this_thread::sleep_for(pane_poll);
    }
  }
  throw protocol::runtime_error("hermes did not accept the message: no new user row in " +
                                state.path() + " after 2 deliveries");
}

} // namespace hb::bridge

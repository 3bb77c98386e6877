// Getting a message into the TUI (wait until no turn runs, settle, clear the
// draft, paste, see it, one Enter), finding the state.db row it became, which
// also tells us which of Hermes' sessions is this TUI's, and the one key that
// interrupts a turn (Ctrl-C).
#include "bridge/tmux/native_session_impl.hpp"

#include "bridge/tmux/native_slots.hpp"
#include "protocol/wire_error.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace hb::bridge {

using namespace native_detail;

namespace native_detail {

const char* const exited_message = "hermes terminal is no longer running (the TUI exited)";

} // namespace native_detail

namespace {

constexpr milliseconds commit_wait{5000};
// How long a turn the TUI started for our message may run before its user
// row shows (hermes 0.20 writes it once the agent is set up).
constexpr milliseconds accepted_row_wait{120'000};
constexpr double fresh_turn_s = 3;
constexpr milliseconds unknown_layout_wait{5000};
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
  live_tuis::all().give_back(&alive);
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
    // The status bar's clocks tick every second: a pane that changes only
    // there has settled.
    std::string pane = settle_view(tmux.capture());
    bool blank = without_whitespace(pane).empty();
    stable = (!blank && pane == last) ? stable + 1 : 0;
    last = std::move(pane);
    if (stable >= 2) // three equal captures in a row
      break;
    std::this_thread::sleep_for(pane_poll);
  }
  return last;
}

tui_screen native_session::impl::screen() { return read_tui_screen(tmux.capture()); }

// state.db's word on it, next to the screen's: the newest row opens or
// continues a turn (a user row, a tool call, a tool result). Only a fresh
// one counts: a turn interrupted before any text leaves its user row last
// for good.
bool native_session::impl::turn_just_stored() {
  if (!pinned())
    return false;
  follow_children();
  auto last = state.last_row(sessions());
  if (!last)
    return false;
  bool open = last->role == "user" || last->role == "tool" || !last->tool_calls.empty();
  double age = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
               last->timestamp;
  return open && last->timestamp > 0 && age < fresh_turn_s;
}

// Idle means the prompt seen idle twice in a row: while the TUI prints
// above its input area it erases and redraws it, and a capture in between
// shows no prompt at all. A screen that never shows a recognisable input
// area (a layout we do not know) is taken as idle after a while.
bool native_session::impl::wait_until_idle(milliseconds limit) {
  auto until = clock_type::now() + limit;
  auto unknown_since = clock_type::now();
  int idle = 0;
  while (true) {
    if (tmux.gone())
      throw protocol::runtime_error(exited_message);
    tui_screen now = screen();
    if (now.input_found)
      unknown_since = clock_type::now();
    idle = now.input_found && !now.busy && !turn_just_stored() ? idle + 1 : 0;
    if (idle >= 2 || clock_type::now() - unknown_since > unknown_layout_wait)
      return true;
    if (clock_type::now() >= until)
      return false;
    if (interrupt_sent || let_go)
      throw protocol::runtime_error("interrupted before hermes accepted the message");
    std::this_thread::sleep_for(pane_poll);
  }
}

bool native_session::impl::ctrl_c_if_busy() {
  std::lock_guard<std::mutex> lock(input_mu);
  if (clock_type::now() - last_ctrl_c < std::chrono::milliseconds(2500))
    return false;
  if (!screen().busy)
    return false;
  tmux.send_keys({"C-c"});
  last_ctrl_c = clock_type::now();
  return true;
}

// prompt_toolkit's C-a and C-k work on the current line only: from the
// draft's start (C-Home), each C-k takes a line's text, then its line break.
void native_session::impl::clear_draft() {
  for (int round = 0; round < 4; ++round) {
    tui_screen now = screen();
    if (!now.input_found && round < 3) { // caught mid-redraw, perhaps: look again
      std::this_thread::sleep_for(milliseconds(100));
      continue;
    }
    if (!now.input_found) { // a layout we do not know: the single-line way
      tmux.send_keys({"C-a"});
      tmux.send_keys({"C-k"});
      return;
    }
    if (now.draft_lines == 0)
      return;
    std::vector<std::string> keys{"C-Home"};
    keys.insert(keys.end(), static_cast<size_t>(std::min(2 * now.draft_lines + 1, 400)), "C-k");
    tmux.send_keys(keys);
    std::this_thread::sleep_for(milliseconds(100));
  }
}

// Types `text` into the TUI's input as one bracketed paste and submits it
// with exactly one Enter, once the paste is visibly in the draft (an Enter
// that arrives first would become a line break inside the draft).
bool native_session::impl::await_in_draft(const std::string& needle_text, milliseconds limit) {
  std::string needle = without_whitespace(needle_text);
  for (auto until = clock_type::now() + limit; !needle.empty();) {
    std::string pane = tmux.capture();
    tui_screen now = read_tui_screen(pane);
    if (without_whitespace(now.input_found ? now.draft : pane).find(needle) != std::string::npos)
      return true;
    if (clock_type::now() >= until)
      return false;
    std::this_thread::sleep_for(pane_poll);
  }
  return true;
}

void native_session::impl::type(const std::string& text, milliseconds settle_limit) {
  if (tmux.gone())
    throw protocol::runtime_error(exited_message);
  settle(settle_limit);
  clear_draft();
  tmux.paste(paste_payload(text));
  // A long paste shows as its placeholder, not as its text.
  await_in_draft(collapses_as_paste(text) ? pasted_text_marker : commit_needle(text), commit_wait);
  std::this_thread::sleep_for(milliseconds(300));
  // hermes 0.20 turns Enter after a trailing backslash into a line break,
  // but only with the cursor at the draft's end: one step left, and Enter
  // submits the draft as it is (older builds submit either way).
  if (!collapses_as_paste(text) && enter_continues_line(text))
    tmux.send_keys({"Left"});
  tmux.send_keys({"Enter"});
}

// The user row our message became, once Hermes stored it: its own row (the
// same text), never another user row that came meanwhile.
std::optional<int64_t> native_session::impl::find_user_row(const std::string& text, int64_t baseline) {
  if (!state.available())
    return std::nullopt;
  // What the paste carried, as Hermes stores it (control bytes dropped, line breaks unified).
  std::string wanted = normalized_message(paste_payload(text));
  if (pinned()) {
    follow_children();
    for (const auto& row : state.rows_after(sessions(), baseline))
      if (row.role == "user" && normalized_message(row.content) == wanted)
        return row.id;
    return std::nullopt;
  }
  // Not pinned yet: Hermes picks its own session id. Ours started after the
  // launch, in this workspace, and holds our message (another TUI in the same
  // workspace may have stored its own message first: only our text tells).
  for (const auto& s : state.sessions_since(launched_at - discovery_skew_s)) {
    if ((!s.cwd.empty() && s.cwd != workspace) || claims::all().taken(s.id))
      continue;
    for (const auto& row : state.rows_after({s.id}, baseline)) {
      if (row.role != "user")
        continue;
      if (normalized_message(row.content) == wanted && claims::all().take(s.id)) {
        pin(s.id);
        return row.id;
      }
      break;
    }
  }
  return std::nullopt;
}

// Delivers, confirms by the message's own user row, re-delivers once (Hermes
// drops input while it cold-starts; the leftover draft is cleared first),
// then gives up with a clear error. Holds the input for the whole time.
int64_t native_session::impl::deliver_confirmed(const std::string& text, int64_t baseline) {
  std::lock_guard<std::mutex> lock(input_mu);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (interrupt_sent || let_go) // before the chat was even answered: nothing is pasted
      throw protocol::runtime_error("interrupted before hermes accepted the message");
    type(text, options.settle_timeout);
    if (auto id = await_user_row(text, baseline, clock_type::now() + options.confirm_timeout, true))
      return *id;
    // No row yet, but a TUI that shows a turn running took the message: it
    // was idle when we typed, and nothing else types while we hold the
    // input. hermes 0.20 stores the first message only after "Initializing
    // agent...", which a busy machine stretches past the wait; pasted again,
    // the message would redirect the turn it started.
    if (took_the_message()) {
      if (auto id = await_user_row(text, baseline, clock_type::now() + accepted_row_wait, false))
        return *id;
      if (let_go)
        throw protocol::runtime_error(stopped_mirroring);
      if (interrupt_sent)
        throw protocol::runtime_error("interrupted before hermes accepted the message");
      throw protocol::runtime_error("hermes started a turn for the message but stored no user row for it in " +
                                    state.path());
    }
  }
  throw protocol::runtime_error("hermes did not accept the message: no new user row in " +
                                state.path() + " after 2 deliveries");
}

// Polls for the message's user row until `until`. With `pasted_only` (the
// TUI may have dropped the paste) an interrupt ends the wait. Otherwise the
// TUI runs the turn: an interrupt is its Ctrl-C, and the wait goes on while
// the turn shows running (a turn stopped before its row was stored has none).
std::optional<int64_t> native_session::impl::await_user_row(const std::string& text, int64_t baseline,
                                                            clock_type::time_point until, bool pasted_only) {
  bool ctrl_c_sent = false;
  for (bool last_look = false;;) {
    if (auto id = find_user_row(text, baseline)) {
      own_turn = true; // before the input is free: a steer waiting for it may go in now
      return id;
    }
    if (last_look || clock_type::now() >= until)
      return std::nullopt;
    if (tmux.gone())
      throw protocol::runtime_error(exited_message);
    if (pasted_only) {
      if (interrupt_sent || let_go) {
        bool taken = took_the_message();
        if (interrupt_sent && taken)
          return std::nullopt; // taken after all: the wait for a taken message stops the turn
        throw protocol::runtime_error(taken ? stopped_mirroring : "interrupted before hermes accepted the message");
      }
    } else {
      if (let_go) // the daemon stops: the TUI goes on with the turn by itself
        return std::nullopt;
      if (interrupt_sent && !ctrl_c_sent) { // input_mu is ours: ctrl_c_if_busy would wait for it
        tmux.send_keys({"C-c"});
        last_ctrl_c = clock_type::now();
        ctrl_c_sent = true;
      }
      last_look = !took_the_message(); // the turn is over: its row is there now or never
    }
    if (!last_look)
      std::this_thread::sleep_for(pane_poll);
  }
}

// Whether a turn runs, as the input area shows it (a capture in the middle
// of a redraw shows no input area at all: looked at again).
bool native_session::impl::took_the_message() {
  for (int look = 0; look < 5; ++look) {
    tui_screen now = screen();
    if (now.input_found)
      return now.busy;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return true; // no input area seen: a panel or a redraw; keep waiting for the row
}

} // namespace hb::bridge

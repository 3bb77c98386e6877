// The inside of a native session, shared by the files that implement it:
// native_launch.cpp (launch, re-attach, the alive watcher), native_turn.cpp
// (the turn loop), native_session.cpp (interrupt, steer, status, close),
// native_delivery.cpp (getting a message into the TUI and finding the row it
// became), native_approvals.cpp (the Dangerous Command prompt as a client
// question) and native_clarify.cpp (the clarify panel as one).
#pragma once

#include "bridge/tmux/clarify_panel.hpp"
#include "bridge/tmux/hermes_state.hpp"
#include "bridge/tmux/native_session.hpp"
#include "bridge/tmux/pane_text.hpp"
#include "bridge/tmux/tmux_server.hpp"
#include "bridge/tmux/tui_screen.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace hb::bridge {

namespace native_detail {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds pane_poll{200};
// A turn the TUI goes on with after the daemon let it go (it stops, or restarts).
constexpr const char* stopped_mirroring = "hermes-bridge stopped mirroring this turn; the TUI goes on with it";
constexpr milliseconds alive_poll{1000};
extern const char* const exited_message;
// A TUI that tmux cannot be asked about for this long fails the run (it may still run).
constexpr milliseconds unanswered_limit{30'000};

std::string tui_command_event(const std::string& text); // native_tui_command.cpp

} // namespace native_detail

class row_mirror;

struct native_session::impl {
  using clock_type = native_detail::clock_type;
  using milliseconds = native_detail::milliseconds;

  std::string session_id;
  std::string workspace;
  std::string dir;
  native_options options;
  tmux_server tmux;
  hermes_state state;
  double launched_at = 0;
  bool reattached = false;
  // The turn being mirrored, remembered in launch.json for a daemon that
  // comes after this one (guarded by mu).
  std::string turn_run;
  int64_t turn_row = 0;
  int64_t adopted_row = 0; // adopt(): the row of the turn continue_turn() follows
  // The approval prompt showing when the turn was adopted, to be asked again
  // under its old id (guarded by mu).
  std::optional<waiting_question> reopening;

  // One paste or key sequence at a time; a message holds it until Hermes
  // stored it, so nothing else is typed into an unconfirmed draft.
  std::mutex input_mu;
  clock_type::time_point last_ctrl_c{}; // guarded by input_mu: never two within 2 s
  mutable std::mutex mu;           // guards the fields below
  std::vector<std::string> chain;  // the pinned Hermes session and its compression children
  nlohmann::json history = nlohmann::json::array();
  std::atomic<bool> alive{true};
  std::atomic<bool> turn_live{false};
  std::atomic<bool> own_turn{false};  // Hermes stored this run's message: its turn is the one running
  std::atomic<bool> interrupt_sent{false}; // the client asked for an interrupt
  std::atomic<bool> let_go{false}; // the daemon stops: stop mirroring, leave the TUI be
  std::atomic<clock_type::rep> interrupt_at{0}; // written by interrupt(), read by the turn
  std::vector<int64_t> steers;     // guarded by mu: newest row id when each /steer was typed

  std::mutex watch_mu;
  std::condition_variable watch_cv;
  bool stopping = false;
  std::thread watcher;

  impl(std::string id, std::string ws, std::string d, native_options o, std::string tmux_bin);
  ~impl();

  // native_launch.cpp
  void start_watching(); // keeps `alive` current while nobody runs a turn
  void stop_watching();
  void remember();       // what a re-attaching daemon needs to find its way back
  void remember_turn(const std::string& run, int64_t row); // "" / 0: no turn live

  // native_turn.cpp: mirrors the turn whose user row is `own_row` until it
  // ends, watching the pane for questions, an interrupt and the TUI's end.
  turn_outcome follow(const std::shared_ptr<turn_sink>& sink, row_mirror& mirror, int64_t own_row);

  // native_delivery.cpp
  std::optional<std::string> pinned() const;
  std::vector<std::string> sessions() const;
  bool pin_remembered(const std::string& id); // re-attach: the session pinned before
  void follow_children();
  tui_screen screen();             // the TUI's state as its pane shows it now
  // Waits until no turn runs in the TUI; false when one still runs at the deadline.
  bool wait_until_idle(milliseconds limit);
  // Ctrl-C, only while the screen shows a running turn and not within 2 s
  // of the last one (a second Ctrl-C within 2 s force-exits the TUI; one at
  // an idle prompt exits it). True when it was sent.
  bool ctrl_c_if_busy();
  // Caller holds input_mu.
  void type(const std::string& text, milliseconds settle_limit);
  // Until the draft (the pane, when no input area shows) holds `needle`
  // (whitespace ignored); false at the limit.
  bool await_in_draft(const std::string& needle, milliseconds limit);
  int64_t deliver_confirmed(const std::string& text, int64_t baseline);

  // native_tui_command.cpp: types `text` once, confirmed by nothing.
  void send_tui_command(const std::string& text);

private:
  void pin(const std::string& id);
  std::string settle(milliseconds limit);
  std::optional<int64_t> await_user_row(const std::string& text, int64_t baseline, clock_type::time_point until,
                                        bool pasted_only);
  bool took_the_message();
  void clear_draft();
  bool turn_just_stored();
  std::optional<int64_t> find_user_row(const std::string& text, int64_t baseline);
};

namespace native_detail {

// The id of the newest row of the session's Hermes sessions (`unreadable`
// when state.db cannot be read). A prompt or panel is bound to the row that
// was newest when it was asked: its tool call, which Hermes stores before
// the tool asks; a newer row means a newer prompt, whatever its text.
int64_t newest_row(native_session::impl& s, int64_t unreadable);

// What the client is asked for the approval prompt (its request JSON).
std::string approval_request(const approval_prompt& prompt, const native_options& options);

// The clarify call a panel shows (its tool call in state.db after the turn's
// user row `turn_row`, else what the panel itself shows), and what the
// client is asked for it, with the panel's countdown as its deadline.
clarify_call clarify_call_for(native_session::impl& s, int64_t turn_row, const clarify_panel& panel);
std::string clarify_request(const clarify_call& call, const clarify_panel& panel);
// How long a clarify panel without a countdown is asked for.
double clarify_timeout_s(const clarify_panel& panel);

// The question `body` (a request JSON) is the one an earlier daemon asked
// and the adopted turn's TUI still shows: taken, to be asked again under its
// old id (native_session::waiting_questions).
std::optional<waiting_question> take_reopening(native_session::impl& s, const std::string& kind,
                                               const std::string& body);

// A question the TUI shows, asked of the client on another thread (the
// broker's answer blocks). Withdrawn when the TUI stops showing it.
class terminal_question {
public:
  void ask(std::shared_ptr<turn_sink> sink, std::function<std::string(turn_sink&)> asking);
  bool open() const { return answer_.valid(); }
  std::optional<std::string> answer(); // once the client answered (empty: nobody did)
  // The broker answers a withdrawn question at once; the withdrawal is sent
  // again in case it overtook the question itself (they come from two threads).
  void withdraw(const std::string& reason);

private:
  std::shared_ptr<turn_sink> sink_;
  std::future<std::string> answer_;
};

// The approval prompt as a question to the client. The TUI waits on it;
// the client's answer becomes the key of the chosen option, sent only while
// the prompt still shows. A prompt that goes away unanswered was answered
// at the terminal.
class approval_watch {
public:
  static constexpr milliseconds interval{300};

  approval_watch(native_session::impl& s, std::shared_ptr<turn_sink> sink);
  ~approval_watch();
  void poll(const std::string& pane);

private:
  void ask(const approval_prompt& prompt);
  void answer(const approval_prompt& prompt, const std::string& choice);
  void settle(const std::string& reason);
  bool same_prompt(const approval_prompt& prompt);

  native_session::impl& s_;
  std::shared_ptr<turn_sink> sink_;
  terminal_question asking_;
  std::string asked_command_;      // the prompt that was announced, as shown
  int64_t asked_row_ = 0;          // and the newest row of the turn then: its tool call
  std::optional<clock_type::time_point> answered_at_;
  bool viewed_ = false;            // "Show full command" was picked for the prompt showing
};

// The clarify panel as a question to the client: the question and choices
// as the agent asked them (its tool call in state.db), the answer given
// with the panel's keys while the same panel still shows. A panel that goes
// away unanswered was answered at the terminal (or the TUI's deadline
// passed; the client's question has the same deadline).
class clarify_watch {
public:
  clarify_watch(native_session::impl& s, std::shared_ptr<turn_sink> sink, int64_t turn_row);
  ~clarify_watch();
  void poll(const std::string& pane);

private:
  bool same_panel(const clarify_panel& panel);
  void ask(const clarify_panel& panel);
  void answer(const std::string& text);
  void type_answer(const std::string& text);
  std::string gone_reason() const;

  native_session::impl& s_;
  std::shared_ptr<turn_sink> sink_;
  int64_t turn_row_; // the turn's user row: its clarify calls come after it
  terminal_question asking_;
  clarify_call asked_;
  int64_t asked_row_ = 0; // the newest row when it was asked (see newest_row)
  int last_countdown_s_ = -1; // as last seen on the panel asked about
  bool unanswered_ = false;   // the client let it pass: not asked again while it shows
  std::optional<clock_type::time_point> answered_at_;
};

} // namespace native_detail

} // namespace hb::bridge

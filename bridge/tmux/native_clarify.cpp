// The clarify panel of a native session as a client question: asked when it
// shows, answered with its keys while the same panel still shows, withdrawn
// when it goes away without them (answered at the terminal, or the TUI's
// own deadline passed).
#include "bridge/tmux/native_session_impl.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

namespace hb::bridge::native_detail {

namespace {

// After our keys answered, a panel still showing this long later is a new
// question (or the keys were lost): ask again.
constexpr milliseconds answer_echo{2000};
// How long the TUI may take to turn "Other" into the `✎ ❯` prompt, and to
// show what was typed there.
constexpr milliseconds prompt_wait{3000};
// No countdown shows: hermes waits without a limit (clarify timeout <= 0).
constexpr double unlimited_s = 24 * 3600;

} // namespace

clarify_watch::clarify_watch(native_session::impl& s, std::shared_ptr<turn_sink> sink, int64_t turn_row)
  : s_(s), sink_(std::move(sink)), turn_row_(turn_row) {}

clarify_watch::~clarify_watch() {
  if (!asking_.open())
    return;
  bool showing = true;
  try {
    auto panel = parse_clarify_panel(s_.tmux.capture());
    showing = panel && same_panel(*panel);
  } catch (const protocol::wire_error&) {
    showing = false;
  }
  asking_.withdraw(showing ? "run ended" : gone_reason());
}

// Why a panel we asked about went away without our keys.
std::string clarify_watch::gone_reason() const {
  if (s_.interrupt_sent)
    return "run interrupted";
  if (last_countdown_s_ >= 0 && last_countdown_s_ <= 2)
    return "timed out in the terminal";
  return "answered in the terminal";
}

void clarify_watch::poll(const std::string& pane) {
  auto panel = parse_clarify_panel(pane);
  if (asking_.open()) {
    if (!panel || !same_panel(*panel)) {
      asking_.withdraw(gone_reason());
      return;
    }
    last_countdown_s_ = panel->countdown_s;
    if (auto text = asking_.answer()) {
      if (text->empty())
        unanswered_ = true; // the TUI's deadline is the same: it decides
      else
        answer(*text);
    }
    return;
  }
  if (!panel || !same_panel(*panel)) {
    answered_at_.reset();
    unanswered_ = false;
  }
  if (!panel || unanswered_ || panel->countdown_s == 0)
    return;
  if (answered_at_ && clock_type::now() - *answered_at_ < answer_echo)
    return;
  answered_at_.reset();
  ask(*panel);
}

// The newest clarify call of this turn; the panel's own text when none is
// found (choices unknown: an answer then goes through "Other").
clarify_call clarify_call_for(native_session::impl& s, int64_t turn_row, const clarify_panel& panel) {
  std::optional<clarify_call> found;
  try {
    auto sessions = s.sessions();
    for (int64_t after = turn_row;;) {
      auto rows = s.state.rows_after(sessions, after);
      for (const auto& row : rows)
        if (row.role == "assistant" && !row.tool_calls.empty())
          if (auto call = clarify_call_in(row.tool_calls); call && panel_shows(panel, *call))
            found = std::move(call);
      if (rows.size() < 500)
        break;
      after = rows.back().id;
    }
  } catch (const std::exception&) {
    // state.db busy or changing under us: the panel's text serves
  }
  if (found)
    return *found;
  clarify_call shown;
  shown.question = panel.question;
  shown.multi_select = panel.multi_select;
  return shown;
}

std::string clarify_request(const clarify_call& call, const clarify_panel& panel) {
  nlohmann::json request;
  request["question"] = call.question;
  request["choices"] = call.choices.empty() ? nlohmann::json() : nlohmann::json(call.choices);
  if (call.multi_select)
    request["multi_select"] = true;
  request["timeout_ms"] = static_cast<int64_t>(clarify_timeout_s(panel) * 1000);
  request["harness"] = "native";
  return protocol::dumps(request);
}

double clarify_timeout_s(const clarify_panel& panel) { return panel.countdown_s > 0 ? panel.countdown_s : unlimited_s; }

bool clarify_watch::same_panel(const clarify_panel& panel) {
  return panel_shows(panel, asked_) && newest_row(s_, asked_row_) == asked_row_;
}

void clarify_watch::ask(const clarify_panel& panel) {
  asked_ = clarify_call_for(s_, turn_row_, panel);
  asked_row_ = newest_row(s_, 0);
  last_countdown_s_ = panel.countdown_s;
  std::string body = clarify_request(asked_, panel);
  double timeout = clarify_timeout_s(panel);
  if (auto again = take_reopening(s_, "clarify", body)) {
    again->request = body;
    again->timeout_s = timeout; // the panel's countdown: what is left
    asking_.ask(sink_, [q = *again](turn_sink& sink) { return sink.ask_again(q); });
    return;
  }
  asking_.ask(sink_, [body = std::move(body), timeout](turn_sink& sink) {
    return sink.ask_clarify(body, timeout);
  });
}

void clarify_watch::answer(const std::string& text) {
  if (s_.let_go) // a stopping daemon answers nothing for the person at the TUI
    return;
  std::lock_guard<std::mutex> lock(s_.input_mu);
  try {
    // The same panel as announced, still there, right before the keys.
    auto now = parse_clarify_panel(s_.tmux.capture());
    if (!now || !same_panel(*now))
      return;
    auto plan = keys_for_answer(*now, asked_, text);
    for (const auto& key : plan.keys) // one call each: a TUI reads them as separate key presses
      s_.tmux.send_keys({key});
    if (!plan.typed.empty())
      type_answer(plan.typed);
  } catch (const protocol::wire_error&) {
    // The TUI went away; nothing waits for the answer any more.
  }
  answered_at_ = clock_type::now();
}

// At `✎ ❯`: typed as keys, not pasted (hermes would fold a long paste into a
// placeholder, and the clarify prompt sends the placeholder as the answer),
// then Enter once the prompt shows the text.
void clarify_watch::type_answer(const std::string& text) {
  auto until = clock_type::now() + prompt_wait;
  while (!read_tui_screen(s_.tmux.capture()).typing_answer) {
    if (clock_type::now() >= until)
      return;
    std::this_thread::sleep_for(pane_poll);
  }
  s_.tmux.type_text(text);
  s_.await_in_draft(commit_needle(text), prompt_wait); // Enter either way: a long draft may show only its end
  s_.tmux.send_keys({"Enter"});
}

} // namespace hb::bridge::native_detail

// The Dangerous Command prompt of a native session as a client question:
// asked on its rising edge, answered with the chosen option's key while it
// still shows, withdrawn when someone answers it at the terminal. Also the
// terminal_question both watches (this one and the clarify one) ask with.
#include "bridge/tmux/native_session_impl.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <algorithm>

namespace hb::bridge::native_detail {

namespace {

// After a key answered the prompt, a prompt still showing this long later is
// a new question (or the key was lost): ask again.
constexpr milliseconds answer_echo{2000};

} // namespace

void terminal_question::ask(std::shared_ptr<turn_sink> sink, std::function<std::string(turn_sink&)> asking) {
  sink_ = std::move(sink);
  answer_ = std::async(std::launch::async, [sink = sink_, asking = std::move(asking)] { return asking(*sink); });
}

std::optional<std::string> terminal_question::answer() {
  if (!answer_.valid() || answer_.wait_for(milliseconds(0)) != std::future_status::ready)
    return std::nullopt;
  return answer_.get();
}

void terminal_question::withdraw(const std::string& reason) {
  if (!answer_.valid())
    return;
  do
    sink_->withdraw_questions(reason);
  while (answer_.wait_for(std::chrono::seconds(1)) != std::future_status::ready);
  answer_.get();
}

approval_watch::approval_watch(native_session::impl& s, std::shared_ptr<turn_sink> sink)
  : s_(s), sink_(std::move(sink)) {}

// A prompt gone by the end of the turn was answered at the terminal (the turn
// went on); one still showing is left to the run's end.
approval_watch::~approval_watch() {
  if (!asking_.open())
    return;
  bool showing = true;
  try {
    auto prompt = parse_approval_prompt(s_.tmux.capture());
    showing = prompt && same_prompt(*prompt);
  } catch (const protocol::wire_error&) {
    showing = false;
  }
  settle(showing ? "run ended" : "answered in the terminal");
}

void approval_watch::poll(const std::string& pane) {
  std::optional<approval_prompt> prompt = parse_approval_prompt(pane);
  if (asking_.open()) {
    // Gone, or another prompt in its place (even one with the same text):
    // the announced one was answered at the terminal, and no answer may
    // land on the newer prompt.
    if (!prompt || !same_prompt(*prompt)) {
      settle("answered in the terminal");
      if (prompt)
        poll(pane); // the newer prompt is a question of its own
      return;
    }
    if (auto choice = asking_.answer(); choice && !choice->empty())
      answer(*prompt, *choice);
    return;
  }
  if (!prompt) {
    answered_at_.reset();
    return;
  }
  if (answered_at_ && clock_type::now() - *answered_at_ < answer_echo)
    return;
  answered_at_.reset();
  if (prompt->truncated) {
    // The panel shows part of a long command until "Show full command" is
    // picked; a client must see all of it before it answers.
    auto keys = prompt->view_keys();
    if (!keys.empty() && !s_.let_go && !viewed_) {
      std::lock_guard<std::mutex> lock(s_.input_mu);
      try {
        for (const auto& key : keys)
          s_.tmux.send_keys({key});
      } catch (const protocol::wire_error&) {
      }
      viewed_ = true;
      return; // asked on a later poll, once the whole command shows
    }
  }
  viewed_ = false;
  ask(*prompt);
}

std::optional<waiting_question> take_reopening(native_session::impl& s, const std::string& kind,
                                               const std::string& body) {
  auto identity = [](const std::string& text) { // a deadline is not which question it is
    auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_object())
      doc.erase("timeout_ms");
    return doc;
  };
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.reopening || s.reopening->kind != kind || identity(s.reopening->request) != identity(body))
    return std::nullopt;
  return std::exchange(s.reopening, std::nullopt);
}

std::string approval_request(const approval_prompt& prompt, const native_options& options) {
  auto offered = prompt.choices();
  nlohmann::json request;
  request["command"] = prompt.command;
  request["description"] = prompt.description.empty() ? "Hermes flagged a dangerous command. Run it?"
                                                       : prompt.description;
  request["choices"] = offered;
  request["allow_permanent"] = std::find(offered.begin(), offered.end(), "always") != offered.end();
  request["timeout_ms"] = static_cast<int64_t>(options.approval_timeout_s * 1000);
  request["harness"] = "native";
  return protocol::dumps(request);
}

void approval_watch::ask(const approval_prompt& prompt) {
  std::string body = approval_request(prompt, s_.options);
  double timeout = s_.options.approval_timeout_s;
  asked_command_ = prompt.command;
  asked_row_ = newest_row(s_, 0);
  // The prompt an earlier daemon asked about, still showing: asked again
  // under the id the client knows (native_session::waiting_questions).
  if (auto again = take_reopening(s_, "approval", body)) {
    asking_.ask(sink_, [q = *again](turn_sink& sink) { return sink.ask_again(q); });
    return;
  }
  asking_.ask(sink_, [body = std::move(body), timeout](turn_sink& sink) {
    return sink.ask_approval(body, timeout);
  });
}

void approval_watch::answer(const approval_prompt& prompt, const std::string& choice) {
  auto keys = prompt.keys_for(choice);
  if (keys.empty() || s_.let_go) // a stopping daemon answers nothing for the person at the TUI
    return;
  std::lock_guard<std::mutex> lock(s_.input_mu);
  try {
    // The same prompt as announced, still there, right before the key.
    auto now = parse_approval_prompt(s_.tmux.capture());
    if (!now || !same_prompt(*now))
      return;
    for (const auto& key : keys) // one call each: a TUI reads them as separate key presses
      s_.tmux.send_keys({key});
  } catch (const protocol::wire_error&) {
    // The TUI went away; nothing waits for the key any more.
  }
  answered_at_ = clock_type::now();
}

// A prompt instance is its text and the tool call it asks for: a newer
// call (a newer row in state.db, which Hermes stores before it runs the
// tool) asking the same command is another prompt.
bool approval_watch::same_prompt(const approval_prompt& prompt) {
  return prompt.command == asked_command_ && newest_row(s_, asked_row_) == asked_row_;
}

int64_t newest_row(native_session::impl& s, int64_t unreadable) {
  try {
    auto last = s.state.last_row(s.sessions());
    return last ? last->id : 0;
  } catch (const std::exception&) {
    return unreadable; // state.db busy for a moment: the text alone decides
  }
}

void approval_watch::settle(const std::string& reason) {
  asking_.withdraw(reason);
}

} // namespace hb::bridge::native_detail

// One turn of a native session: the message delivered, then Hermes' rows
// mirrored to the client until the turn ends, while the pane is watched for
// approval prompts, clarify panels, an interrupt taking effect and the TUI
// going away.
#include "bridge/tmux/native_session_impl.hpp"

#include "bridge/tmux/native_interrupt.hpp"
#include "bridge/tmux/row_mirror.hpp"
#include "bridge/tmux/tui_command.hpp"
#include "protocol/json_text.hpp"
#include "protocol/request.hpp"
#include "protocol/wire_error.hpp"

namespace hb::bridge {

using nlohmann::json;
using namespace native_detail;

namespace {

constexpr milliseconds row_poll{100};
// Hermes turns a steer no tool result carried into the next turn right after
// the answer; this long without that user row, it was carried after all.
constexpr milliseconds steer_leftover_wait{4000};

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

// What the mirror writes, numbered 1, 2, 3... in the order written, so that
// the event log knows how far it holds the turn (its rows' host_seq). The mirror
// is a function of the turn's rows: mirrored again from the first after a
// restart of the daemon, it writes the same frames with the same numbers,
// and those the log holds (`skip_up_to`) are not written twice.
class numbered_sink final : public turn_sink {
public:
  numbered_sink(turn_sink& out, uint64_t skip_up_to) : out_(out), skip_(skip_up_to) {}
  std::string run_id() const override { return out_.run_id(); }
  void delta(std::string text) override {
    if (++seq_ > skip_)
      out_.numbered_delta(std::move(text), seq_);
  }
  void event(std::string json) override {
    if (++seq_ > skip_)
      out_.numbered_event(std::move(json), seq_);
  }
  std::string ask_approval(std::string request_json, double timeout_s) override {
    return out_.ask_approval(std::move(request_json), timeout_s);
  }
  std::string ask_compression(std::string request_json, double timeout_s) override {
    return out_.ask_compression(std::move(request_json), timeout_s);
  }
  std::string ask_clarify(std::string request_json, double timeout_s) override {
    return out_.ask_clarify(std::move(request_json), timeout_s);
  }
  void gateway_notify(std::string request_json, double timeout_s) override {
    out_.gateway_notify(std::move(request_json), timeout_s);
  }
  void withdraw_questions(std::string reason) override { out_.withdraw_questions(std::move(reason)); }

private:
  turn_sink& out_;
  uint64_t skip_;
  uint64_t seq_ = 0;
};

json turn_result(native_session::impl& s, const row_mirror& mirror, bool completed, bool interrupted) {
  json r;
  r["final_response"] = mirror.final_text();
  r["completed"] = completed;
  r["interrupted"] = interrupted;
  auto p = s.pinned();
  r["hermes_session_id"] = p ? json(*p) : json(nullptr);
  return r;
}

struct live_guard {
  std::atomic<bool>& live;
  std::atomic<bool>& own;
  ~live_guard() { live = own = false; }
};

} // namespace

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
  numbered_sink numbered(*sink, 0);
  row_mirror mirror(numbered, base);
  auto result = [&](bool completed, bool interrupted) { return turn_result(s, mirror, completed, interrupted); };
  s.turn_live = true;
  live_guard guard{s.turn_live, s.own_turn};
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
    return s.follow(sink, mirror, own_row);
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

turn_outcome native_session::continue_turn(const std::shared_ptr<turn_sink>& sink, uint64_t logged_seq) {
  auto& s = *impl_;
  int64_t own_row = std::exchange(s.adopted_row, 0);
  if (own_row == 0)
    return agent_host::continue_turn(sink, logged_seq);
  numbered_sink numbered(*sink, logged_seq);
  row_mirror mirror(numbered, [&] {
    std::lock_guard<std::mutex> lock(s.mu);
    return s.history;
  }());
  s.turn_live = true;
  s.own_turn = true; // Hermes stored its message before the last daemon went
  live_guard guard{s.turn_live, s.own_turn};
  try {
    return s.follow(sink, mirror, own_row);
  } catch (const std::exception& e) {
    return outcome("error", turn_result(s, mirror, false, false), std::string("native harness: ") + e.what(),
                   mirror.history());
  }
}

turn_outcome native_session::impl::follow(const std::shared_ptr<turn_sink>& sink, row_mirror& mirror,
                                          int64_t own_row) {
  auto& s = *this;
  auto result = [&](bool completed, bool interrupted) { return turn_result(s, mirror, completed, interrupted); };
  {
    // Rows before our own user row belong to an earlier turn.
    mirror.skip_to(own_row - 1);
    mirror.delivered(own_row);
    // A daemon that comes after this one finds the turn here.
    remember_turn(sink->run_id(), own_row);
    struct forget_turn {
      impl& s;
      ~forget_turn() { s.remember_turn("", 0); }
    } forget{s};

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
  }
}

} // namespace hb::bridge

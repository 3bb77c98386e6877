// Long-polls and subscriptions on the broker's side: the output hub
// (output_hub.hpp) decides; here are its port (reads go to the log readers,
// lines to the connections, deadlines are messages to the broker itself)
// and the handlers that hand it what the broker hears.
#include "actors/broker_state.hpp"
#include "actors/errors.hpp"
#include "actors/log_messages.hpp"
#include "actors/responses.hpp"
#include "actors/session_messages.hpp"

namespace hb::actors {

namespace {

// A read the reader refused (an unknown or pruned run) is answered as it
// said; one that never reached it as the log's failure.
std::string read_failure_line(const caf::error& err) {
  if (err.category() == error_category)
    return error_line(err);
  return protocol::error_line("RuntimeError", "event log read failed: " + caf::to_string(err));
}

class broker_port final : public output_hub::port {
public:
  explicit broker_port(broker_actor* self) : self_(self) {}

  void read(uint64_t key, const output_query& query) override {
    auto self = self_;
    self->request(next_reader(self), caf::infinite, query)
      .then([=](output_reply& r) { self->state.hub->on_read(key, std::move(r)); },
            [=](caf::error& err) { self->state.hub->on_read_failed(key, read_failure_line(err)); });
  }

  void respond(const reply_to& to, std::string line) override {
    actors::respond(self_, to, std::move(line));
  }

  bool push(const watcher& w, std::string line) override {
    return push_line(self_, w.to, std::move(line), w);
  }

  void cut_off(const watcher& w, const std::string& why, const char* error_type) override {
    actors::cut_off(self_, w, why, error_type);
  }

  void end_stream(handle h) override {
    actors::end_stream(self_, h);
  }

  uint64_t unsent_bytes(handle h) override {
    return actors::unsent_bytes(self_, h);
  }

  steady_time last_taken(handle h) override {
    return actors::last_taken(self_, h);
  }

  steady_time now() override {
    return std::chrono::steady_clock::now();
  }

  void arm_deadline(steady_time when) override {
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(when - now());
    self_->delayed_send(self_, std::max(wait, std::chrono::milliseconds(0)),
                        poll_due{when.time_since_epoch().count()});
  }

  void ask_current_run(uint64_t key, const std::string& session_id) override {
    auto self = self_;
    const caf::actor* session = known_session(self, session_id);
    if (!session)
      return;
    self->request(*session, session_reply_limit, session_query{})
      .then([=](session_view& view) { self->state.hub->on_current_run(key, view.current_run_id); },
            [](caf::error&) {});
  }

private:
  broker_actor* self_;
};

} // namespace

void start_output_hub(broker_actor* self) {
  auto& st = self->state;
  st.hub_port = std::make_unique<broker_port>(self);
  if (!st.links.windows)
    st.links.windows = std::make_shared<shared_run_windows>();
  st.hub = std::make_unique<output_hub>(
    *st.hub_port, output_hub::limits{st.settings->subscriber_buffer_bytes, st.settings->subscriber_stall},
    *st.links.windows);
}

void on_request(broker_actor* self, const reply_to& to, requests::get_output& r) {
  // A finished run in memory is answered here, at once: no wait (it is
  // done), no reader, no SQLite.
  if (auto& finished = self->state.links.finished) {
    if (auto run = finished->find(r.run_id))
      return respond(self, to, get_output_line(*run, r.cursor, r.event_cursor, r.include_output));
  }
  if (r.wait_ms > 0)
    return self->state.hub->long_poll(to, r);
  if (auto line = self->state.hub->answer_from_window(r))
    return respond(self, to, std::move(*line));
  self->request(next_reader(self), caf::infinite,
                output_query{r.run_id, r.cursor, r.event_cursor, r.include_output, 0})
    .then([=](output_reply& reply) { respond(self, to, std::move(reply.line)); },
          [=](caf::error& err) { respond_failure(self, to, err); });
}

void on_request(broker_actor* self, const reply_to& to, requests::subscribe& r) {
  begin_stream(self, to.h);
  self->state.hub->subscribe(to, r);
}

void on_committed(broker_actor* self, log_committed& touched) {
  self->state.hub->on_committed(std::move(touched));
}

void on_wait_due(broker_actor* self, int64_t when) {
  self->state.hub->on_deadline(steady_time(steady_time::duration(when)));
}

void on_drained(broker_actor* self, handle h) {
  self->state.hub->on_drained(h);
}

void drop_watchers_of(broker_actor* self, handle h) {
  self->state.hub->drop_watchers_of(h);
}

} // namespace hb::actors

// Output pushed instead of polled: get_output with wait_ms (long-poll) and
// subscriptions to a run or a session. The log writer reports each commit's
// runs; every watcher of such a run re-reads from its own cursors, so what a
// client receives is exactly what was committed after what it already had.
#include "actors/broker_state.hpp"
#include "actors/errors.hpp"
#include "actors/log_messages.hpp"
#include "actors/responses.hpp"
#include "actors/session_messages.hpp"

#include "protocol/request.hpp"

#include <unordered_set>

namespace hb::actors {

using protocol::error_line;
using protocol::json;

namespace {

// What one read for a subscriber takes at most, of deltas and of events
// (see log_reader::read_run): a follower that falls behind a fast run gets
// it in lines of about this size, one at a time as it reads them, instead
// of everything since in one line (a 100 MB run made lines of 200 MB, and
// the daemon held several copies of them).
constexpr int64_t stream_read_bytes = 1 << 20;

void read_for(broker_actor* self, uint64_t key);

// A read the reader refused (an unknown or pruned run) is answered as it
// said; one that never reached it as the log's failure.
std::string read_failure_line(const caf::error& err) {
  if (err.category() == error_category)
    return actors::error_line(err);
  return error_line("RuntimeError", "event log read failed: " + caf::to_string(err));
}

// Read again once the client has taken what it was sent (on_drained).
void defer(watcher& w) {
  if (!w.deferred)
    w.deferred_since = std::chrono::steady_clock::now();
  w.deferred = true;
  w.again = false;
}

void follow_run(broker_actor* self, uint64_t key, const std::string& run_id) {
  auto& w = self->state.watchers.at(key);
  w.run_id = run_id;
  w.cursor = w.event_cursor = 0;
  std::string line = protocol::object_writer{}
                       .boolean("ok", true)
                       .str("event", "run.started")
                       .str("session_id", w.session_id)
                       .str("run_id", run_id)
                       .finish();
  if (push_line(self, w.to, line, w))
    read_for(self, key);
}

void on_read(broker_actor* self, uint64_t key, std::string line, bool news, int64_t cursor,
             int64_t event_cursor, bool done, bool more) {
  auto& watchers = self->state.watchers;
  auto it = watchers.find(key);
  if (it == watchers.end())
    return; // the client left
  auto& w = it->second;
  w.reading = false;
  if (w.what == watcher::kind::long_poll) {
    if (news || std::chrono::steady_clock::now() >= w.deadline) {
      reply_to to = w.to;
      watchers.erase(it);
      respond(self, to, std::move(line));
      return;
    }
  } else {
    uint64_t unsent = unsent_bytes(self, w.to.h);
    // A run's last line goes out at once, unless it is too big to queue
    // behind what the client has not taken yet (it holds the run's result).
    bool too_big = unsent + line.size() + 1 > self->state.settings->subscriber_buffer_bytes;
    if (news && unsent > 0 && (!done || too_big)) {
      // The client has not taken the last line yet: hold this news back and
      // send everything since once it has (fewer, larger lines for a slow
      // reader; nothing piles up for a stopped one).
      defer(w);
      return;
    }
    if (news) {
      if (!push_line(self, w.to, line, w))
        return; // the stream was ended for a client that stopped reading
      w.cursor = cursor;
      w.event_cursor = event_cursor;
    }
    if (done) {
      if (w.what == watcher::kind::run_stream) {
        handle h = w.to.h;
        watchers.erase(it);
        end_stream(self, h);
        return;
      }
      w.run_id.clear(); // a session stream waits for the session's next run
      if (!w.next_run.empty())
        follow_run(self, key, std::exchange(w.next_run, std::string()));
      return;
    }
    if (more) {
      // The rest is in the log already (no commit will announce it): read
      // it once the client has taken this line.
      if (unsent_bytes(self, w.to.h) > 0)
        return defer(w);
      w.again = true;
    }
  }
  if (std::exchange(w.again, false))
    read_for(self, key);
}

// One read in flight per watcher; news arriving meanwhile triggers another.
void read_for(broker_actor* self, uint64_t key) {
  auto& w = self->state.watchers.at(key);
  if (w.reading) {
    w.again = true;
    return;
  }
  w.reading = true;
  int64_t max_bytes = w.what == watcher::kind::long_poll ? 0 : stream_read_bytes;
  self->request(next_reader(self), caf::infinite,
                output_query{w.run_id, w.cursor, w.event_cursor, w.include_output, max_bytes})
    .then(
      [=](output_reply& r) {
        on_read(self, key, std::move(r.line), r.news, r.cursor, r.event_cursor, r.done, r.more);
      },
      [=](caf::error& err) {
        on_read(self, key, read_failure_line(err), true, 0, 0, true, false);
      });
}

uint64_t add_watcher(broker_actor* self, watcher w) {
  uint64_t key = ++self->state.next_watcher;
  self->state.watchers.emplace(key, std::move(w));
  return key;
}

} // namespace

void on_request(broker_actor* self, const reply_to& to, requests::get_output& r) {
  // A finished run in memory is answered here, at once: no wait (it is
  // done), no reader, no SQLite.
  if (auto& finished = self->state.links.finished) {
    if (auto run = finished->find(r.run_id))
      return respond(self, to, get_output_line(*run, r.cursor, r.event_cursor, r.include_output));
  }
  if (r.wait_ms == 0) {
    self->request(next_reader(self), caf::infinite,
                  output_query{r.run_id, r.cursor, r.event_cursor, r.include_output, 0})
      .then([=](output_reply& reply) { respond(self, to, std::move(reply.line)); },
            [=](caf::error& err) { respond_failure(self, to, err); });
    return;
  }
  watcher w(watcher::kind::long_poll, to);
  w.run_id = r.run_id;
  w.cursor = r.cursor;
  w.event_cursor = r.event_cursor;
  w.include_output = r.include_output;
  w.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(r.wait_ms);
  uint64_t key = add_watcher(self, std::move(w));
  self->delayed_send(self, std::chrono::milliseconds(r.wait_ms), poll_due{key});
  read_for(self, key);
}

void on_wait_due(broker_actor* self, uint64_t key) {
  auto it = self->state.watchers.find(key);
  if (it != self->state.watchers.end() && !it->second.reading)
    read_for(self, key); // past its deadline, the answer goes out whatever it holds
}

void on_request(broker_actor* self, const reply_to& to, requests::subscribe& r) {
  begin_stream(self, to.h);
  if (!r.run_id.empty()) {
    watcher w(watcher::kind::run_stream, to);
    w.run_id = r.run_id;
    w.cursor = r.cursor;
    w.event_cursor = r.event_cursor;
    w.include_output = false;
    read_for(self, add_watcher(self, std::move(w)));
    return;
  }
  watcher w(watcher::kind::session_stream, to);
  w.session_id = r.session_id;
  w.include_output = false;
  uint64_t key = add_watcher(self, std::move(w));
  const caf::actor* session = known_session(self, r.session_id);
  if (!session)
    return; // followed from its first run on
  self->request(*session, session_reply_limit, session_query{})
    .then(
      [=](session_view& view) {
        auto it = self->state.watchers.find(key);
        if (it != self->state.watchers.end() && it->second.run_id.empty() && !view.current_run_id.empty())
          follow_run(self, key, view.current_run_id);
      },
      [](caf::error&) {});
}

void on_committed(broker_actor* self, const log_committed& touched) {
  std::unordered_set<std::string> runs;
  std::unordered_map<std::string, std::string> run_of_session;
  for (size_t i = 0; i < touched.runs.size() && i < touched.sessions.size(); ++i) {
    runs.insert(touched.runs[i]);
    run_of_session[touched.sessions[i]] = touched.runs[i];
  }
  std::vector<uint64_t> to_read;
  std::vector<std::pair<uint64_t, std::string>> to_follow;
  for (auto& [key, w] : self->state.watchers) {
    if (!w.run_id.empty() && runs.count(w.run_id)) {
      to_read.push_back(key);
    } else if (w.what == watcher::kind::session_stream) {
      auto found = run_of_session.find(w.session_id);
      if (found == run_of_session.end() || found->second == w.run_id)
        continue;
      if (w.run_id.empty())
        to_follow.emplace_back(key, found->second);
      else
        w.next_run = found->second; // after the current run's last line
    }
  }
  for (uint64_t key : to_read)
    if (self->state.watchers.count(key))
      read_for(self, key);
  for (auto& [key, run_id] : to_follow)
    if (self->state.watchers.count(key))
      follow_run(self, key, run_id);
}

void on_drained(broker_actor* self, handle h) {
  std::vector<uint64_t> ready;
  for (auto& [key, w] : self->state.watchers)
    if (w.to.h == h && w.deferred) {
      w.deferred = false;
      ready.push_back(key);
    }
  for (uint64_t key : ready)
    read_for(self, key);
}

void drop_watchers_of(broker_actor* self, handle h) {
  auto& watchers = self->state.watchers;
  for (auto it = watchers.begin(); it != watchers.end();)
    it = it->second.to.h == h ? watchers.erase(it) : std::next(it);
}

} // namespace hb::actors

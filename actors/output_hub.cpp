#include "actors/output_hub.hpp"

#include "protocol/json_text.hpp"

#include <unordered_set>
#include <utility>
#include <vector>

namespace hb::actors {

uint64_t output_hub::add(watcher w) {
  windows_.following(true); // before the watcher's first look (shared_run_windows.hpp)
  uint64_t key = ++next_key_;
  watchers_.emplace(key, std::move(w));
  return key;
}

void output_hub::long_poll(const reply_to& to, const requests::get_output& r) {
  watcher w(watcher::kind::long_poll, to);
  w.run_id = r.run_id;
  w.cursor = r.cursor;
  w.event_cursor = r.event_cursor;
  w.include_output = r.include_output;
  std::chrono::milliseconds wait(r.wait_ms);
  w.deadline = out_.now() + wait;
  steady_time due = w.deadline;
  uint64_t key = add(std::move(w));
  add_deadline(due, key);
  read_for(key);
}

std::optional<std::string> output_hub::answer_from_window(const requests::get_output& r) const {
  auto known = windows_.answer(output_query{r.run_id, r.cursor, r.event_cursor, r.include_output, 0});
  if (!known)
    return std::nullopt;
  return std::move(known->line);
}

void output_hub::add_deadline(steady_time when, uint64_t key) {
  deadlines_.emplace(when, key);
  if (when < armed_)
    arm_earliest();
}

void output_hub::forget_deadline(const watcher& w, uint64_t key) {
  if (w.what != watcher::kind::long_poll)
    return;
  auto [from, to] = deadlines_.equal_range(w.deadline);
  for (auto it = from; it != to; ++it)
    if (it->second == key)
      return void(deadlines_.erase(it)); // (the timer, if it was the earliest, finds nothing due)
}

void output_hub::arm_earliest() {
  if (deadlines_.empty()) {
    armed_ = steady_time::max();
    return;
  }
  armed_ = deadlines_.begin()->first;
  out_.arm_deadline(armed_);
}

void output_hub::on_deadline(steady_time when) {
  if (when != armed_)
    return; // a timer superseded by an earlier one: that one is live
  auto now = out_.now();
  if (now < when)
    return out_.arm_deadline(when); // early (a clock of its own): the one live timer again
  std::vector<uint64_t> due;
  for (auto it = deadlines_.begin(); it != deadlines_.end() && it->first <= now;)
    due.push_back(it->second), it = deadlines_.erase(it);
  arm_earliest();
  for (uint64_t key : due) {
    auto it = watchers_.find(key);
    if (it != watchers_.end() && !it->second.reading)
      read_for(key); // past its deadline, the answer goes out whatever it holds
  }
}

void output_hub::subscribe(const reply_to& to, const requests::subscribe& r) {
  if (!r.run_id.empty()) {
    watcher w(watcher::kind::run_stream, to);
    w.run_id = r.run_id;
    w.cursor = r.cursor;
    w.event_cursor = r.event_cursor;
    w.include_output = false;
    read_for(add(std::move(w)));
    return;
  }
  watcher w(watcher::kind::session_stream, to);
  w.session_id = r.session_id;
  w.include_output = false;
  uint64_t key = add(std::move(w));
  out_.ask_current_run(key, r.session_id); // an unknown session is followed from its first run on
}

void output_hub::on_current_run(uint64_t key, const std::string& run_id) {
  auto it = watchers_.find(key);
  // A commit may have started it on a run already.
  if (it != watchers_.end() && it->second.run_id.empty() && !run_id.empty() && run_id != it->second.ended_run)
    follow_run(key, run_id);
}

void output_hub::follow_run(uint64_t key, const std::string& run_id) {
  auto& w = watchers_.at(key);
  w.run_id = run_id;
  w.cursor = w.event_cursor = 0;
  std::string line = protocol::object_writer{}
                       .boolean("ok", true)
                       .str("event", "run.started")
                       .str("session_id", w.session_id)
                       .str("run_id", run_id)
                       .finish();
  if (out_.push(w, line))
    read_for(key);
}

// One read in flight per watcher; news arriving meanwhile triggers another.
void output_hub::read_for(uint64_t key) {
  auto& w = watchers_.at(key);
  if (w.reading) {
    w.again = true;
    return;
  }
  int64_t max_bytes = w.what == watcher::kind::long_poll ? 0 : stream_read_bytes;
  output_query q{w.run_id, w.cursor, w.event_cursor, w.include_output, max_bytes};
  w.reading = true;
  if (auto known = windows_.answer(q))
    return on_read(key, std::move(*known));
  out_.read(key, q);
}

// Read again once the client has taken what it was sent (on_drained).
void output_hub::defer(watcher& w) {
  if (!w.deferred)
    w.deferred_since = out_.now();
  w.deferred = true;
  w.again = false;
}

void output_hub::on_read_failed(uint64_t key, std::string error_line) {
  // Counts as news and as the end: the watcher's client reads the error.
  on_read(key, output_reply{std::move(error_line), true, 0, 0, true, false});
}

void output_hub::on_read(uint64_t key, output_reply reply) {
  auto it = watchers_.find(key);
  if (it == watchers_.end())
    return; // the client left
  auto& w = it->second;
  w.reading = false;
  if (w.what == watcher::kind::long_poll) {
    if (reply.news || out_.now() >= w.deadline) {
      reply_to to = w.to;
      forget_deadline(w, key);
      watchers_.erase(it);
      out_.respond(to, std::move(reply.line));
      return;
    }
  } else if (!answer_stream(key, w, reply)) {
    return;
  }
  if (std::exchange(w.again, false))
    read_for(key);
}

// A subscriber's read: false when this answer leaves nothing more to do now
// (held back, or the watcher is done or gone).
bool output_hub::answer_stream(uint64_t key, watcher& w, output_reply& r) {
  uint64_t unsent = out_.unsent_bytes(w.to.h);
  // A run's last line goes out at once, unless it is too big to queue
  // behind what the client has not taken yet (it holds the run's result).
  bool too_big = unsent + r.line.size() + 1 > limits_.subscriber_buffer_bytes;
  if (r.news && unsent > 0 && (!r.done || too_big)) {
    // The client has not taken the last line yet: hold this news back and
    // send everything since once it has (fewer, larger lines for a slow
    // reader; nothing piles up for a stopped one).
    defer(w);
    return false;
  }
  if (r.news) {
    if (!out_.push(w, std::move(r.line))) // not read again: the cursors are
      return false; // the stream was ended for a client that stopped reading
    w.cursor = r.cursor;
    w.event_cursor = r.event_cursor;
  }
  if (r.done) {
    if (w.what == watcher::kind::run_stream) {
      handle h = w.to.h;
      watchers_.erase(key);
      out_.end_stream(h);
      return false;
    }
    w.ended_run = std::exchange(w.run_id, std::string()); // a session stream waits for the session's next run
    if (!w.next_run.empty())
      follow_run(key, std::exchange(w.next_run, std::string()));
    return false;
  }
  if (r.more) {
    // The rest is in the log already (no commit will announce it): read
    // it once the client has taken this line.
    if (out_.unsent_bytes(w.to.h) > 0) {
      defer(w);
      return false;
    }
    w.again = true;
  }
  return true;
}

void output_hub::on_committed(log_committed touched) {
  if (watchers_.empty())
    return windows_.following(false); // the writer stops telling commits until a watcher comes
  // Runs this commit only appended to (each has a tail; an end or a retried
  // write has none): a subscriber holding news back for its client reads
  // them once the client has taken its line (on_drained), not at every commit.
  std::unordered_set<std::string> appended;
  for (const auto& tail : touched.tails)
    appended.insert(tail.run_id);
  std::unordered_set<std::string> runs;
  std::unordered_map<std::string, std::string> run_of_session;
  for (size_t i = 0; i < touched.runs.size() && i < touched.sessions.size(); ++i) {
    runs.insert(touched.runs[i]);
    run_of_session[touched.sessions[i]] = touched.runs[i];
  }
  std::vector<uint64_t> to_read;
  std::vector<std::pair<uint64_t, std::string>> to_follow;
  for (auto& [key, w] : watchers_) {
    if (!w.run_id.empty() && runs.count(w.run_id)) {
      if (!(w.deferred && appended.count(w.run_id)))
        to_read.push_back(key);
    } else if (w.what == watcher::kind::session_stream) {
      auto found = run_of_session.find(w.session_id);
      if (found == run_of_session.end() || found->second == w.run_id || found->second == w.ended_run)
        continue;
      if (w.run_id.empty())
        to_follow.emplace_back(key, found->second);
      else
        w.next_run = found->second; // after the current run's last line
    }
  }
  // Pushing may end streams (a client too far behind): each key is looked up again.
  for (uint64_t key : to_read)
    if (watchers_.count(key))
      read_for(key);
  for (auto& [key, run_id] : to_follow)
    if (watchers_.count(key))
      follow_run(key, run_id);
}

void output_hub::on_drained(handle h) {
  std::vector<uint64_t> ready;
  for (auto& [key, w] : watchers_)
    if (w.to.h == h && w.deferred) {
      w.deferred = false;
      ready.push_back(key);
    }
  for (uint64_t key : ready)
    read_for(key);
}

void output_hub::drop_watchers_of(handle h) {
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (it->second.to.h != h) {
      ++it;
      continue;
    }
    forget_deadline(it->second, it->first);
    it = watchers_.erase(it);
  }
}

// A subscriber whose news has waited this long for a client that took
// nothing is cut off: the daemon does not keep state for clients that left
// without closing. One that keeps taking its line, however slowly, is not
// (a big line to a busy client could take longer than the limit).
void output_hub::cut_stalled() {
  auto now = out_.now();
  std::vector<uint64_t> stalled;
  for (auto& [key, w] : watchers_)
    if (w.deferred && now - std::max(w.deferred_since, out_.last_taken(w.to.h)) >= limits_.subscriber_stall)
      stalled.push_back(key);
  for (uint64_t key : stalled) {
    auto it = watchers_.find(key);
    if (it != watchers_.end())
      out_.cut_off(it->second, "the client has not read for " + std::to_string(limits_.subscriber_stall.count()) +
                                 " ms (--subscriber-stall-ms)", "SlowReader");
  }
}

void output_hub::end_all(const std::string& why) {
  std::vector<uint64_t> keys;
  for (const auto& [key, w] : watchers_)
    keys.push_back(key);
  for (uint64_t key : keys) {
    auto it = watchers_.find(key);
    if (it == watchers_.end())
      continue;
    if (it->second.what == watcher::kind::long_poll) {
      forget_deadline(it->second, key);
      it->second.deadline = out_.now(); // a read on its way answers when it comes back
      if (!it->second.reading)
        read_for(key);
    } else {
      out_.cut_off(it->second, why, "HandedOver");
    }
  }
}

} // namespace hb::actors

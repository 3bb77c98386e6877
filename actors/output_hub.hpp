// Output pushed instead of polled: get_output with wait_ms (long-poll) and
// subscriptions to a run or a session. The log writer reports each commit's
// runs; every watcher of such a run re-reads from its own cursors, so what a
// client receives is exactly what was committed after what it already had.
// A watcher whose cursors fall in the last stretch of its run that the log
// writer keeps in memory is answered from there instead
// (shared_run_windows.hpp): the same line a read would give, without the
// read. The hub only reads those windows; the writer keeps them.
//
// The hub is plain C++ owned by the broker, not an actor: it holds the
// watchers and decides when to read, what to send and when a watcher is
// done; everything it needs from outside (reads, the connection, the clock,
// timers, the session) goes through its port, so its decisions can be tested
// without an actor system or a socket (tests/unit/actors_output_hub_test.cpp).
#pragma once

#include "actors/log_messages.hpp"
#include "actors/reply_to.hpp"
#include "actors/requests.hpp"
#include "actors/shared_run_windows.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

namespace hb::actors {

// A client waiting for a run's output: a long-poll (answered once) or a
// subscription (one line per commit with news).
struct watcher {
  enum class kind { long_poll, run_stream, session_stream };
  watcher(kind what, reply_to to) : what(what), to(std::move(to)) {}
  kind what;
  reply_to to;
  std::string run_id;     // the run being followed; empty while a session idles
  std::string session_id; // session streams
  std::string next_run;   // session streams: started while the previous run was finishing
  // Session streams: the run they saw end. The windows can show an end
  // before the broker has the notices of the commits ahead of it, so
  // later notices (or a late answer of the session) may still name it.
  std::string ended_run;
  int64_t cursor = 0;
  int64_t event_cursor = 0;
  bool include_output = true;
  steady_time deadline{}; // long polls
  bool reading = false;   // a read is on its way
  bool again = false;     // news arrived during that read
  bool deferred = false;  // news held back until the client drains what it has
  steady_time deferred_since{};
};

class output_hub {
public:
  // What the hub asks of the broker. Answers to read() and ask_current_run()
  // come back later through on_read/on_read_failed and on_current_run.
  struct port {
    virtual ~port() = default;
    virtual void read(uint64_t key, const output_query& query) = 0;
    // A long-poll's one answer.
    virtual void respond(const reply_to& to, std::string line) = 0;
    // One more line of w's subscription; false when the stream was ended for
    // a client too far behind (its watchers are dropped by then).
    virtual bool push(const watcher& w, std::string line) = 0; // by value: a run's last line holds its result
    // Ends w's subscription with a line saying why and where to resume.
    // `error_type`: SlowReader, or HandedOver (end_all).
    virtual void cut_off(const watcher& w, const std::string& why, const char* error_type) = 0;
    // A run stream is over: the connection closes once its lines have left.
    virtual void end_stream(handle h) = 0;
    // Bytes written to the client of h that it has not taken yet.
    virtual uint64_t unsent_bytes(handle h) = 0;
    // When the client of h last took some of it (or, if later, when the
    // daemon began to wait for it to).
    virtual steady_time last_taken(handle h) = 0;
    virtual steady_time now() = 0;
    // on_deadline(when) is to be called once `when` has come.
    virtual void arm_deadline(steady_time when) = 0;
    // on_current_run(key, ...) with the session's running run, if the session
    // is known and answers; nothing otherwise.
    virtual void ask_current_run(uint64_t key, const std::string& session_id) = 0;
  };

  struct limits {
    uint64_t subscriber_buffer_bytes = 8u << 20; // --subscriber-buffer-bytes
    std::chrono::milliseconds subscriber_stall{30'000}; // --subscriber-stall-ms
  };

  // What one read for a subscriber takes at most, of deltas and of events
  // (see log_reader::read_run): a follower that falls behind a fast run gets
  // it in lines of about this size, one at a time as it reads them, instead
  // of everything since in one line (a 100 MB run made lines of 200 MB, and
  // the daemon held several copies of them).
  static constexpr int64_t stream_read_bytes = 1 << 20;

  output_hub(port& out, limits lim, shared_run_windows& windows) : out_(out), limits_(lim), windows_(windows) {}
  output_hub(const output_hub&) = delete;
  output_hub& operator=(const output_hub&) = delete;

  // get_output with wait_ms > 0.
  void long_poll(const reply_to& to, const requests::get_output& r);
  // A plain get_output (no wait) of a live or just ended run whose window
  // holds its cursors: the line a read would give, from memory. A client
  // polling a run every 50 ms otherwise costs the daemon a reader's
  // wake-up and a SQLite read per poll. Empty: the log must answer.
  std::optional<std::string> answer_from_window(const requests::get_output& r) const;
  // The connection of `to` is a stream already (begin_stream).
  void subscribe(const reply_to& to, const requests::subscribe& r);

  void on_read(uint64_t key, output_reply reply);
  // A read that failed or was refused (an unknown or pruned run), with the
  // error as the client reads it ({"ok": false, ...}).
  void on_read_failed(uint64_t key, std::string error_line);
  // The session's running run when it was asked; empty when it idles.
  void on_current_run(uint64_t key, const std::string& run_id);
  // A commit the writer told (it has brought the windows up to date by then).
  void on_committed(log_committed touched);
  // Answers the long-polls whose wait is over; `when`: the time the timer
  // was armed for (a timer armed before an earlier one is left alone).
  void on_deadline(steady_time when);
  // The client of h has taken everything written so far.
  void on_drained(handle h);
  // The connection is gone: answers still on their way for its watchers are dropped.
  void drop_watchers_of(handle h);
  // Ends the subscriptions whose news has waited for a client that took
  // nothing for --subscriber-stall-ms.
  void cut_stalled();
  // The daemon hands over to a successor: long-polls are answered now with
  // what they have, subscriptions end with `why` and where to resume.
  void end_all(const std::string& why);

  size_t size() const { return watchers_.size(); }
  size_t deadlines() const { return deadlines_.size(); }

private:
  uint64_t add(watcher w);
  // Long-polls share one timer, armed for the earliest deadline: a timer
  // each woke CAF's clock thread at every long-poll (a few thousand times
  // a second with 64 followers).
  void add_deadline(steady_time when, uint64_t key);
  void forget_deadline(const watcher& w, uint64_t key);
  void arm_earliest();
  void read_for(uint64_t key);
  void defer(watcher& w);
  void follow_run(uint64_t key, const std::string& run_id);
  bool answer_stream(uint64_t key, watcher& w, output_reply& r);

  port& out_;
  limits limits_;
  std::unordered_map<uint64_t, watcher> watchers_;
  uint64_t next_key_ = 0;
  shared_run_windows& windows_;
  std::multimap<steady_time, uint64_t> deadlines_; // long-polls' deadlines -> their keys
  steady_time armed_ = steady_time::max();         // when the one timer is due; max: none
};

} // namespace hb::actors

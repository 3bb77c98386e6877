// A port for the output hub (actors/output_hub.hpp) that records what the
// hub asks for: a test answers its reads, sets what each client has not
// taken yet and moves the clock.
#pragma once

#include "actors/output_hub.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace hb::test {

using namespace hb::actors;
using namespace std::chrono_literals;

struct fake_port final : output_hub::port {
  struct read_call {
    uint64_t key;
    output_query query;
  };
  struct pushed_line {
    int64_t conn;
    std::string line;
  };

  output_hub* hub = nullptr;
  const shared_run_windows* windows = nullptr;
  std::vector<read_call> reads;
  std::vector<bool> following_at_read; // whether the writer told commits when each read was asked
  std::vector<std::pair<reply_to, std::string>> responses;
  std::vector<pushed_line> pushed;
  std::vector<std::pair<int64_t, std::string>> cuts;
  std::vector<int64_t> ended;
  std::vector<std::chrono::milliseconds> deadlines; // the hub's one timer, as armed: its wait from then
  steady_time armed_for{};                          // and the time it was last armed for
  std::vector<std::pair<uint64_t, std::string>> asked;
  std::map<int64_t, uint64_t> unsent;
  std::map<int64_t, steady_time> taken; // when each client last took some of what it was sent
  std::set<int64_t> too_far_behind; // push ends these streams, as push_line does
  bool takes_at_once = false;       // pushed lines leave at once (nothing stays unsent)
  steady_time clock = steady_time{} + std::chrono::hours(1);

  void read(uint64_t key, const output_query& query) override {
    reads.push_back({key, query});
    following_at_read.push_back(windows && windows->following());
  }
  void respond(const reply_to& to, std::string line) override { responses.emplace_back(to, std::move(line)); }
  bool push(const watcher& w, std::string line) override {
    int64_t conn = w.to.h.id();
    if (too_far_behind.count(conn)) {
      cut_off(w, "the client stopped reading", "SlowReader");
      return false;
    }
    pushed.push_back({conn, line});
    if (!takes_at_once)
      unsent[conn] += line.size() + 1;
    return true;
  }
  // Like the broker: ending a stream closes its connection, which drops its watchers.
  void cut_off(const watcher& w, const std::string& why, const char*) override {
    cuts.emplace_back(w.to.h.id(), why);
    hub->drop_watchers_of(w.to.h);
  }
  void end_stream(handle h) override {
    ended.push_back(h.id());
    hub->drop_watchers_of(h);
  }
  uint64_t unsent_bytes(handle h) override {
    auto it = unsent.find(h.id());
    return it == unsent.end() ? 0 : it->second;
  }
  steady_time last_taken(handle h) override {
    auto it = taken.find(h.id());
    return it == taken.end() ? steady_time{} : it->second;
  }
  steady_time now() override { return clock; }
  void arm_deadline(steady_time when) override {
    deadlines.push_back(std::chrono::ceil<std::chrono::milliseconds>(when - clock));
    armed_for = when;
  }
  void ask_current_run(uint64_t key, const std::string& session_id) override {
    asked.emplace_back(key, session_id);
  }

  std::vector<std::string> lines_of(int64_t conn) const {
    std::vector<std::string> out;
    for (auto& p : pushed)
      if (p.conn == conn)
        out.push_back(p.line);
    return out;
  }
};

inline constexpr uint64_t buffer_bytes = 1000;

// What a commit appended to a run: `texts`, each of the kind in `kinds`
// ('d' a delta, 'e' an event), leaving the run's counts at these.
inline run_tail tail_of(const std::string& run_id, int64_t delta_count, int64_t event_count,
                        const std::vector<std::string>& texts, const std::string& kinds) {
  run_tail tail{run_id, delta_count, event_count, {}, {}, {}};
  for (size_t i = 0; i < texts.size() && i < kinds.size(); ++i)
    tail.add(kinds[i], texts[i]);
  return tail;
}

struct hub_fixture {
  fake_port port;
  shared_run_windows windows; // kept here as the log writer keeps them (commit, commit_tail)
  output_hub hub{port, output_hub::limits{buffer_bytes, 30'000ms}, windows};
  hub_fixture() {
    port.hub = &hub;
    port.windows = &windows;
  }

  void answer(size_t read, output_reply reply) { hub.on_read(port.reads.at(read).key, std::move(reply)); }
  // The hub's timer fires (whether or not its time has come on the fake clock).
  void timer_fires() { hub.on_deadline(port.armed_for); }
  // The client of `conn` took some of what it was sent, not all.
  void take_some(int64_t conn) {
    port.unsent[conn] -= 1;
    port.taken[conn] = port.clock;
  }
  // The client of `conn` took everything it was sent.
  void drain(int64_t conn) {
    port.unsent[conn] = 0;
    hub.on_drained(handle::from_int(conn));
  }
  // The writer's part of a commit, then the hub's (told only while it follows).
  void commit(log_committed notice) {
    shared_run_windows::change change(&windows); // (the log's commit came first: nothing reads meanwhile)
    if (windows.committed(notice))
      hub.on_committed(std::move(notice));
  }
  void commit(std::vector<std::string> runs, std::vector<std::string> sessions) {
    commit(log_committed{std::move(runs), std::move(sessions), {}, {}, {}});
  }
  // A commit that only appended `texts` to session s's run (kinds: 'd' a
  // delta, 'e' an event), leaving the run's counts at these.
  void commit_tail(const std::string& run_id, int64_t delta_count, int64_t event_count,
                   std::vector<std::string> texts, std::string kinds) {
    commit(log_committed{
      {run_id}, {"s"}, {tail_of(run_id, delta_count, event_count, texts, kinds)}, {}, {}});
  }
  void poll(int64_t conn, const std::string& run_id, int64_t cursor, int64_t event_cursor, int64_t wait_ms) {
    hub.long_poll(to(conn), requests::get_output{run_id, cursor, event_cursor, true, wait_ms});
  }
  void follow_run(int64_t conn, const std::string& run_id, int64_t cursor = 0, int64_t event_cursor = 0) {
    hub.subscribe(to(conn), requests::subscribe{run_id, "", cursor, event_cursor});
  }
  uint64_t follow_session(int64_t conn, const std::string& session_id) {
    hub.subscribe(to(conn), requests::subscribe{"", session_id, 0, 0});
    REQUIRE(!port.asked.empty());
    CHECK(port.asked.back().second == session_id);
    return port.asked.back().first;
  }
  static reply_to to(int64_t conn) { return reply_to{handle::from_int(conn), 7, "\"x\""}; }
};

inline output_reply news(std::string line, int64_t cursor, int64_t event_cursor, bool done = false, bool more = false) {
  return output_reply{std::move(line), true, cursor, event_cursor, done, more};
}

inline output_reply no_news(std::string line, int64_t cursor, int64_t event_cursor) {
  return output_reply{std::move(line), false, cursor, event_cursor, false, false};
}

inline std::string run_started(const std::string& session_id, const std::string& run_id) {
  return R"({"ok": true, "event": "run.started", "session_id": ")" + session_id + R"(", "run_id": ")" + run_id +
         R"("})";
}

} // namespace hb::test

// Followers answered from the hub's memory of each live run's last stretch
// (run_windows.hpp) instead of a read: every answer must be the line a read
// of the log at the same cursors gives, byte for byte, and whatever a
// window cannot vouch for is read as before.
#include "actors/responses.hpp"
#include "actors/run_windows.hpp"
#include "actors/shared_run_windows.hpp"
#include "fake_hub_port.hpp"
#include "storage/log_reader.hpp"
#include "storage/log_writer.hpp"

#include "temp_dir.hpp"

#include <random>

using namespace hb::actors;
using namespace hb::test;
using namespace std::chrono_literals;

namespace {

// A live run in a real log whose commits are told as the log writer tells
// them: the log reader is the oracle for every line built from memory.
struct live_run {
  temp_log db;
  hb::storage::log_writer log{db.path};
  hb::storage::log_reader reader{db.path};
  run_tail tail; // what the open transaction added

  live_run() {
    log.open_run("r1", "s1", 100.0);
    log.commit();
  }
  void delta(const std::string& text) {
    REQUIRE(log.append_delta("r1", text, 101.0));
    tail.add('d', text);
  }
  void event(const std::string& body) {
    REQUIRE(log.append_event("r1", body, 101.0));
    tail.add('e', body);
  }
  // What a streaming run writes between two commits: a few deltas (with
  // characters JSON escapes) and now and then an event.
  void stream_some(std::mt19937& random, int step) {
    auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
    for (int i = pick(4); i >= 0; --i) {
      if (pick(4) == 0)
        event(R"({"event": "tool", "n": )" + std::to_string(step) + "}");
      else
        delta(std::string(static_cast<size_t>(pick(40)), static_cast<char>('a' + pick(26))) + "\"\n\u00e9");
    }
  }
  log_committed commit() {
    log.commit();
    auto counts = log.counts("r1");
    REQUIRE(counts);
    tail.run_id = "r1";
    tail.delta_count = counts->deltas;
    tail.event_count = counts->events;
    return log_committed{{"r1"}, {"s1"}, {std::exchange(tail, run_tail{})}, {}, {}};
  }
  // The run's end, committed with what the open transaction added, told
  // as the log writer tells it (the counts from before the close: after
  // it the writer no longer knows the run).
  log_committed end(const std::string& status, std::optional<std::string> result,
                    std::optional<std::string> error) {
    auto counts = log.counts("r1");
    REQUIRE(counts);
    log.close_run("r1", status, result, error, 200.0);
    log.commit();
    log_committed told{{"r1"}, {"s1"}, {}, {}, {}};
    told.endings.push_back(run_ending{"r1", counts->deltas, counts->events, status, result.has_value(),
                                      result.value_or(""), error.has_value(), error.value_or("")});
    if (tail.items() > 0) {
      tail.run_id = "r1";
      tail.delta_count = counts->deltas;
      tail.event_count = counts->events;
      told.tails.push_back(std::exchange(tail, run_tail{}));
    }
    return told;
  }
  // What log_reader_actor answers for this query.
  output_reply read(const output_query& q) {
    auto run = reader.read_run("r1", q.include_output ? 0 : q.cursor, q.event_cursor);
    REQUIRE(run);
    bool news = run->status != "running" || run->event_count > run->event_from || run->delta_count > q.cursor;
    return output_reply{get_output_line(*run, q.cursor, q.include_output), news, run->delta_count,
                        run->event_count, run->status != "running", false};
  }
};

// The commit's notice reaches the windows and the writer's bracket ends: a
// status poll is then answered from memory, as a read of the log answers it.
output_reply landed(shared_run_windows& windows, std::optional<shared_run_windows::change>& bracket,
                    log_committed& notice, live_run& run, const output_query& status) {
  windows.committed(notice);
  bracket.reset();
  auto answer = windows.answer(status);
  REQUIRE(answer);
  CHECK(answer->line == run.read(status).line);
  return *answer;
}

// The log writer's bracket around a change, left by an exception.
template <class... Landings>
void leave_by_an_exception(shared_run_windows& windows, Landings&&... landings) {
  try {
    shared_run_windows::change change(&windows, std::forward<Landings>(landings)...);
    throw std::runtime_error("commit failed");
  } catch (const std::runtime_error&) {
  }
}

struct hub_on_a_log : hub_fixture, live_run {
  void commit() { hub_fixture::commit(live_run::commit()); }
  std::string read_line(int64_t cursor, int64_t event_cursor) {
    return read(output_query{"r1", cursor, event_cursor, false, 0}).line;
  }
};

} // namespace

TEST_CASE("run windows: every answer is the line a read of the log gives", "[run_windows]") {
  live_run run;
  run_windows windows(run_windows::limits{300, 1 << 20}); // small: its start moves on
  std::mt19937 random(7);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  int answered = 0, refused = 0, past_end = 0;
  for (int step = 0; step < 400; ++step) {
    run.stream_some(random, step);
    auto told = run.commit();
    windows.on_committed(told);
    auto counts = run.log.counts("r1");
    for (int k = 0; k < 5; ++k) {
      auto near_end = [&](int64_t count) { return std::max<int64_t>(0, count + 1 - pick(14)); };
      bool anywhere = pick(4) == 0;
      output_query q{"r1", anywhere ? pick(static_cast<int>(counts->deltas) + 2) : near_end(counts->deltas),
                     anywhere ? pick(static_cast<int>(counts->events) + 2) : near_end(counts->events),
                     pick(5) == 0, pick(3) == 0 ? 1 << 20 : 0};
      bool log_held = pick(2) == 0; // (it is: each commit is told before the next)
      auto known = windows.answer(q, log_held);
      if (!known) {
        ++refused;
        continue;
      }
      ++answered;
      past_end += q.cursor > counts->deltas || q.event_cursor > counts->events;
      auto read = run.read(q);
      REQUIRE(known->line == read.line);
      CHECK(known->news == read.news);
      CHECK(known->cursor == read.cursor);
      CHECK(known->event_cursor == read.event_cursor);
      CHECK(!known->done);
    }
  }
  CHECK(answered > 200); // both ways taken often
  CHECK(refused > 200);
  CHECK(past_end > 50);
  CHECK(windows.bytes() <= 300 + 60);
}

TEST_CASE("run windows: a told end is answered done as a read of the log gives it", "[run_windows]") {
  live_run run;
  run_windows windows(run_windows::limits{300, 1 << 20, 64}); // small: its start moves on
  std::mt19937 random(11);
  for (int step = 0; step < 30; ++step) {
    run.stream_some(random, step);
    auto told = run.commit();
    windows.on_committed(told);
  }
  auto before = run.log.counts("r1");
  run.delta("the last words");
  log_committed told;
  SECTION("complete, with a result") { told = run.end("complete", R"({"final_response": "\u00e9 done"})", {}); }
  SECTION("failed, with an error and no result") { told = run.end("error", {}, "the model went away"); }
  windows.on_committed(told);
  CHECK(windows.ended_runs() == 1);
  auto done = run.read(output_query{"r1", 0, 0, true, 0});
  REQUIRE(done.done);
  // The poll that sees it end: from the cursors the previous commit left.
  auto last = windows.answer(output_query{"r1", before->deltas, before->events, false, 0}, false);
  REQUIRE(last);
  CHECK(last->line == run.read(output_query{"r1", before->deltas, before->events, false, 0}).line);
  int answered = 0;
  for (int64_t cursor = 0; cursor <= done.cursor + 1; ++cursor)
    for (int64_t event_cursor = 0; event_cursor <= done.event_cursor + 1; ++event_cursor)
      for (bool include_output : {false, true}) {
        output_query q{"r1", cursor, event_cursor, include_output, 0};
        auto known = windows.answer(q, true); // (past the end too: the log has no more than told)
        if (!known)
          continue;
        ++answered;
        auto read = run.read(q);
        REQUIRE(known->line == read.line);
        CHECK(known->news);
        CHECK(known->done);
        CHECK(known->cursor == read.cursor);
        CHECK(known->event_cursor == read.event_cursor);
      }
  CHECK(answered > 10);
  CHECK(!windows.answer(output_query{"r1", 0, 0, true, 0}, true)); // its start was trimmed: the log answers
}

TEST_CASE("shared run windows: a cursor past a run's end is answered from memory only while the windows hold "
          "every change of the log",
          "[run_windows]") {
  live_run run;
  shared_run_windows windows;
  auto commit_told = [&] {
    shared_run_windows::change change(&windows); // as the log writer brackets a commit
    auto told = run.commit();
    windows.committed(told);
  };
  run.delta("a");
  commit_told();
  output_query past{"r1", 1 << 30, 1 << 30, false, 0}; // a poller asking only for the status
  auto status = windows.answer(past);
  REQUIRE(status);
  CHECK(status->line == run.read(past).line);
  CHECK(status->cursor == 1);
  CHECK(!status->news);

  // A commit a read of the log already sees, not yet in the windows: a
  // client may hold a cursor from that read, so the log answers.
  std::optional<shared_run_windows::change> in_flight(&windows);
  run.delta("b");
  auto second = run.commit();
  CHECK(!windows.answer(past));
  CHECK(!windows.answer(output_query{"r1", 2, 2, false, 0})); // the cursor that read gave
  CHECK(windows.answer(output_query{"r1", 1, 1, false, 0}));  // within the window: as before
  CHECK(landed(windows, in_flight, second, run, past).cursor == 2);

  // A change the writer left by an exception: never again held.
  leave_by_an_exception(windows);
  CHECK(!windows.answer(past));
  commit_told();
  CHECK(!windows.answer(past));
  CHECK(windows.answer(output_query{"r1", 2, 2, false, 0}));
}

TEST_CASE("shared run windows: while a commit is in flight, a status poll is answered from memory and a cursor "
          "a read of that commit gave goes to the log",
          "[run_windows]") {
  live_run run;
  shared_run_windows windows;
  run.delta("a");
  auto first = run.commit();
  windows.committed(first);
  output_query status{"r1", 1 << 30, 1 << 30, false, 0};
  auto landing_of_r1 = [&]() -> run_landings {
    auto counts = run.log.counts("r1");
    REQUIRE(counts);
    return {{"r1", run_landing{true, counts->deltas, counts->events}}};
  };

  run.delta("b");
  run.event(R"({"event": "tool"})");
  std::optional<shared_run_windows::change> in_flight;
  in_flight.emplace(&windows, landing_of_r1()); // as the log writer brackets a commit
  auto second = run.commit();
  auto before = windows.answer(status);
  REQUIRE(before);
  CHECK(before->cursor == 1); // the run as the log showed it before the commit: a valid answer
  CHECK(!windows.answer(output_query{"r1", 2, 3, false, 0})); // a read of the commit gave these: the log
  CHECK(!windows.answer(output_query{"r1", 2, 1 << 30, false, 0}));
  CHECK(!windows.answer(output_query{"r1", 1 << 30, 3, false, 0}));
  CHECK(windows.answer(output_query{"r1", 1, 1, false, 0})); // within the window, as ever
  CHECK(landed(windows, in_flight, second, run, status).cursor == 2);
  CHECK(windows.answer(output_query{"r1", 2, 3, false, 0}));

  // A commit that does not touch the run holds none of its answers up; one
  // that leaves it where the writer cannot say (its end) holds them all.
  in_flight.emplace(&windows, run_landings{{"r2", run_landing{true, 5, 5}}});
  CHECK(windows.answer(status));
  in_flight.reset();
  in_flight.emplace(&windows, run_landings{{"r1", run_landing{}}});
  CHECK(!windows.answer(status));
  CHECK(windows.answer(output_query{"r1", 2, 3, false, 0}));
  in_flight.reset();
  CHECK(windows.answer(status));

  // A commit left by an exception: the windows never again answer past an end.
  leave_by_an_exception(windows, landing_of_r1());
  CHECK(!windows.answer(status));
}

TEST_CASE("run windows: ended runs are kept up to their number and leave first for live runs or when pruned",
          "[run_windows]") {
  run_windows windows(run_windows::limits{1000, 3000, 2});
  auto ended_now = [&](const std::string& run_id, std::string result = "{}") {
    log_committed told{{run_id}, {"s"}, {}, {run_ending{run_id, 0, 0, "complete", true, std::move(result), false, ""}},
                       {}};
    windows.on_committed(told);
  };
  auto answers = [&](const std::string& run_id) { return windows.answer(output_query{run_id, 0, 0, false, 0}, false); };
  ended_now("e1");
  ended_now("e2");
  ended_now("e3");
  CHECK(windows.ended_runs() == 2);
  CHECK(!answers("e1")); // the oldest left
  REQUIRE(answers("e3"));
  CHECK(answers("e3")->done);
  log_committed pruned;
  pruned.pruned = {"e2"};
  windows.on_committed(pruned);
  CHECK(!answers("e2"));
  CHECK(windows.ended_runs() == 1);

  ended_now("e4", std::string(2500, '1'));
  log_committed live{{"r1"}, {"s"}, {tail_of("r1", 1, 1, {std::string(900, 'x')}, "d")}, {}, {}};
  windows.on_committed(live); // over the total: the ended run with the big result leaves, not the live one
  CHECK(answers("r1"));
  CHECK(!answers("e3")); // the oldest first
  CHECK(!answers("e4"));
  CHECK(windows.bytes() <= 3000);

  // An end whose counts say the window missed part of the run, and an end
  // of a run no notice told anything of: the log answers both.
  log_committed skewed{{"r1"}, {"s"}, {}, {run_ending{"r1", 2, 2, "complete", false, "", false, ""}}, {}};
  windows.on_committed(skewed);
  CHECK(!answers("r1"));
  log_committed unknown{{"r9"}, {"s"}, {}, {run_ending{"r9", 3, 3, "complete", false, "", false, ""}}, {}};
  windows.on_committed(unknown);
  CHECK(!answers("r9"));
}

TEST_CASE("run windows: a bounded read the log would cut is left to the log", "[run_windows]") {
  live_run run;
  run_windows windows(run_windows::limits{});
  for (int i = 0; i < 2000; ++i) // 2 kB of text; about 80 kB of stream.delta events
    run.delta("a");
  auto told = run.commit();
  windows.on_committed(told);
  auto cut = run.reader.read_run("r1", 0, 0, 50'000);
  REQUIRE(cut);
  REQUIRE(cut->cut);
  CHECK(!windows.answer(output_query{"r1", 0, 0, false, 50'000}, false));
  auto whole = windows.answer(output_query{"r1", 0, 0, false, 1 << 20}, false); // no cut: answered as a read gives
  REQUIRE(whole);
  CHECK(whole->line == run.read(output_query{"r1", 0, 0, false, 0}).line);
}

TEST_CASE("run windows: a run touched without a tail, or past the total bound, has no window", "[run_windows]") {
  live_run run;
  run_windows windows(run_windows::limits{1000, 1500});
  run.delta("a");
  auto first = run.commit();
  windows.on_committed(first);
  CHECK(windows.answer(output_query{"r1", 0, 0, false, 0}, false));
  log_committed end{{"r1"}, {"s1"}, {}, {}, {}}; // a big end, say
  windows.on_committed(end);
  CHECK(!windows.answer(output_query{"r1", 1, 1, false, 0}, true));
  CHECK(windows.bytes() == 0);

  run.delta(std::string(900, 'x'));
  auto second = run.commit();
  windows.on_committed(second);
  CHECK(windows.runs() == 1);
  run.delta(std::string(900, 'y')); // the run's window trims itself to 1000 bytes, and the total is over 1500
  auto told = run.commit();
  told.runs.push_back("r2");
  told.sessions.push_back("s2");
  told.tails.push_back(tail_of("r2", 1, 1, {std::string(900, 'z')}, "d"));
  windows.on_committed(told);
  CHECK(windows.runs() == 1);
  CHECK(windows.bytes() <= 1500);
}

TEST_CASE_METHOD(hub_on_a_log, "output hub: a subscriber within its run's window gets the lines a read of the "
                               "log gives without a read", "[output_hub]") {
  delta("he said \"hi\"\n");
  commit();
  follow_run(1, "r1");
  CHECK(port.reads.empty());
  REQUIRE(port.lines_of(1) == std::vector<std::string>{read_line(0, 0)});
  delta("more");
  event(R"({"event": "tool.started", "tool": "t"})");
  commit(); // held back: its client has not taken the first line
  CHECK(port.lines_of(1).size() == 1);
  drain(1);
  CHECK(port.reads.empty());
  REQUIRE(port.lines_of(1).size() == 2);
  CHECK(port.lines_of(1)[1] == read_line(1, 1));
}

TEST_CASE_METHOD(hub_on_a_log, "output hub: an up-to-date long-poll waits without a read and the next commit "
                               "answers it", "[output_hub]") {
  delta("a");
  commit();
  hub.long_poll(to(3), requests::get_output{"r1", 1, 1, false, 5000});
  CHECK(port.reads.empty());
  CHECK(port.responses.empty());
  delta("b");
  commit();
  CHECK(port.reads.empty());
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].second == read_line(1, 1));
  hub.long_poll(to(4), requests::get_output{"r1", 2, 2, false, 5000});
  port.clock += 5000ms;
  timer_fires();
  REQUIRE(port.responses.size() == 2); // nothing new by its deadline: answered as a read would
  CHECK(port.responses[1].second == read_line(2, 2));
  CHECK(port.reads.empty());
}

TEST_CASE_METHOD(hub_on_a_log, "output hub: the poll and the subscriber that see a run end are answered "
                               "without a read", "[output_hub]") {
  delta("a");
  commit();
  follow_run(1, "r1");
  drain(1);
  hub.long_poll(to(2), requests::get_output{"r1", 1, 1, false, 5000});
  delta("b");
  hub_fixture::commit(end("complete", R"({"final_response": "ab"})", {}));
  CHECK(port.reads.empty());
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].second == read_line(1, 1));
  REQUIRE(port.lines_of(1).size() == 2);
  CHECK(port.lines_of(1)[1] == read_line(1, 1));
  CHECK(port.ended == std::vector<int64_t>{1}); // its stream ends with the run
  auto plain = hub.answer_from_window(requests::get_output{"r1", 1, 1, false, 0});
  REQUIRE(plain);
  CHECK(*plain == read_line(1, 1));
}

TEST_CASE_METHOD(hub_on_a_log, "output hub: a session stream that saw its run end ahead of the notices does not "
                               "follow it again", "[output_hub]") {
  port.takes_at_once = true;
  delta("a");
  commit();
  uint64_t key = follow_session(1, "s1");
  hub.on_current_run(key, "r1");
  REQUIRE(port.lines_of(1).size() == 2); // run.started, then "a" from the window
  delta("b");
  auto appended = live_run::commit();
  auto ended = end("complete", R"({"final_response": "ab"})", {});
  // The writer has kept both commits before the broker takes the first notice.
  windows.committed(appended);
  windows.committed(ended);
  hub.on_committed(std::move(appended)); // the window already says done
  hub.on_committed(std::move(ended));    // names r1 again: stale
  hub.on_current_run(key, "r1");         // a late answer of the session: stale too
  auto lines = port.lines_of(1);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == run_started("s1", "r1"));
  CHECK(lines[2] == read_line(1, 1));
  CHECK(port.reads.empty());
  CHECK(hub.size() == 1); // still following the session for its next run
}

TEST_CASE_METHOD(hub_on_a_log, "output hub: what a window cannot answer is read", "[output_hub]") {
  SECTION("a run whose end was committed untold") {
    delta("a");
    commit();
    hub_fixture::commit(log_committed{{"r1"}, {"s1"}, {}, {}, {}});
    follow_run(1, "r1");
    CHECK(port.reads.size() == 1);
  }
  SECTION("cursors before the window's start, and the whole output of a run seen from the middle") {
    hub_fixture::commit(log_committed{{"r1"}, {"s1"}, {tail_of("r1", 5, 9, {"x"}, "d")}, {}, {}}); // from delta 4 on
    follow_run(1, "r1", 0, 0);
    hub.long_poll(to(2), requests::get_output{"r1", 5, 9, true, 5000});
    CHECK(port.reads.size() == 2);
    hub.long_poll(to(3), requests::get_output{"r1", 4, 8, false, 5000});
    CHECK(port.reads.size() == 2);
    REQUIRE(port.responses.size() == 1);
  }
  SECTION("a long-poll whose read is on its way waits for it") {
    hub.long_poll(to(2), requests::get_output{"r1", 0, 0, false, 5000});
    REQUIRE(port.reads.size() == 1);
    delta("a");
    commit();
    CHECK(port.responses.empty());
    answer(0, news(read_line(0, 0), 1, 0));
    CHECK(port.reads.size() == 1);
    REQUIRE(port.responses.size() == 1);
    CHECK(port.responses[0].second == read_line(0, 0));
  }
}

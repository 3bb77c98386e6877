// The output hub's subscriptions: run and session streams, news held back
// for a client that has not taken what it was sent, capped reads, cut-offs.
#include "fake_hub_port.hpp"

using namespace hb::actors;
using namespace hb::test;
using namespace std::chrono_literals;

TEST_CASE_METHOD(hub_fixture, "output hub: a run stream pushes lines in order from advancing cursors and ends after "
                              "the done line",
                 "[output_hub]") {
  follow_run(1, "r1", 2, 1);
  REQUIRE(port.reads.size() == 1);
  const auto& q = port.reads[0].query;
  CHECK((q.run_id == "r1" && q.cursor == 2 && q.event_cursor == 1 && !q.include_output &&
         q.max_bytes == output_hub::stream_read_bytes));
  answer(0, news("L1", 5, 2));
  drain(1);
  commit({"r1"}, {"s"});
  REQUIRE(port.reads.size() == 2);
  CHECK((port.reads[1].query.cursor == 5 && port.reads[1].query.event_cursor == 2));
  answer(1, news("L2", 9, 3));
  drain(1);
  commit({"r1"}, {"s"});
  REQUIRE(port.reads.size() == 3);
  CHECK((port.reads[2].query.cursor == 9 && port.reads[2].query.event_cursor == 3));
  CHECK(port.ended.empty());
  answer(2, news("L3", 10, 4, true));
  CHECK(port.lines_of(1) == std::vector<std::string>{"L1", "L2", "L3"});
  CHECK(port.ended == std::vector<int64_t>{1});
  CHECK(hub.size() == 0);
}

TEST_CASE_METHOD(hub_fixture, "output hub: news is held back while the client has unsent bytes, read again once "
                              "drained",
                 "[output_hub]") {
  follow_run(1, "r1");
  answer(0, news("L1", 3, 1));
  commit({"r1"}, {"s"});
  answer(1, news("L2", 6, 2));
  CHECK(port.lines_of(1) == std::vector<std::string>{"L1"}); // L1 is not taken yet
  CHECK(port.reads.size() == 2);
  hub.on_drained(handle::from_int(2)); // another connection
  CHECK(port.reads.size() == 2);
  drain(1);
  REQUIRE(port.reads.size() == 3);
  CHECK((port.reads[2].query.cursor == 3 && port.reads[2].query.event_cursor == 1)); // from what it has
  answer(2, news("L2+", 7, 2));
  CHECK(port.lines_of(1) == std::vector<std::string>{"L1", "L2+"});
  drain(1);
  CHECK(port.reads.size() == 3); // nothing held back any more
}

TEST_CASE_METHOD(hub_fixture, "output hub: a subscriber holding news back reads nothing for commits that only append "
                              "and reads once drained or at its run's end",
                 "[output_hub]") {
  follow_run(1, "r1");
  answer(0, news("L1", 1, 1));
  commit_tail("r1", 2, 2, {"b"}, "d"); // answered from the window, and held back: L1 is not taken yet
  CHECK(port.lines_of(1) == std::vector<std::string>{"L1"});
  CHECK(port.reads.size() == 1);
  commit_tail("r1", 20, 20, {"x"}, "d"); // a window past its cursors, which only a read could answer
  CHECK(port.reads.size() == 1);
  commit({"r1"}, {"s"}); // no tail: the run's end (or a retried write), which goes out at once
  REQUIRE(port.reads.size() == 2);
  answer(1, news("L2", 20, 20)); // not the end after all: held back again
  CHECK(port.lines_of(1) == std::vector<std::string>{"L1"});
  drain(1);
  REQUIRE(port.reads.size() == 3);
  CHECK((port.reads[2].query.cursor == 1 && port.reads[2].query.event_cursor == 1));
}

TEST_CASE_METHOD(hub_fixture, "output hub: a run's last line goes out at once unless too big for the subscriber "
                              "buffer",
                 "[output_hub]") {
  follow_run(1, "r1");
  answer(0, news("L1", 1, 0));
  commit({"r1"}, {"s"});
  answer(1, news("done", 2, 1, true)); // small: queued behind L1
  CHECK(port.lines_of(1) == std::vector<std::string>{"L1", "done"});
  CHECK(port.ended == std::vector<int64_t>{1});

  follow_run(2, "r2");
  answer(2, news("L1", 1, 0));
  port.unsent[2] = 900;
  commit({"r2"}, {"s"});
  std::string big(100, 'x'); // 900 + 100 + 1 > 1000
  answer(3, news(big, 2, 1, true));
  CHECK(port.lines_of(2) == std::vector<std::string>{"L1"});
  CHECK(port.ended == std::vector<int64_t>{1});
  drain(2);
  REQUIRE(port.reads.size() == 5);
  answer(4, news(big, 2, 1, true));
  CHECK(port.lines_of(2) == std::vector<std::string>{"L1", big});
  CHECK(port.ended == std::vector<int64_t>{1, 2});
}

TEST_CASE_METHOD(hub_fixture, "output hub: a capped read reads on once its line is taken", "[output_hub]") {
  follow_run(1, "r1");
  answer(0, news("part 1", 100, 0, false, true));
  CHECK(port.reads.size() == 1); // no commit will announce the rest, but the client has not taken part 1
  drain(1);
  REQUIRE(port.reads.size() == 2);
  CHECK(port.reads[1].query.cursor == 100);

  port.takes_at_once = true;
  answer(1, news("part 2", 200, 0, false, true));
  REQUIRE(port.reads.size() == 3); // taken already: on at once
  CHECK(port.reads[2].query.cursor == 200);
  answer(2, news("part 3", 250, 0));
  CHECK(port.reads.size() == 3);
  CHECK(port.lines_of(1) == std::vector<std::string>{"part 1", "part 2", "part 3"});
}

TEST_CASE_METHOD(hub_fixture, "output hub: a session stream starts with run.started for the session's current run",
                 "[output_hub]") {
  uint64_t key = follow_session(4, "s1");
  CHECK(port.reads.empty());
  hub.on_current_run(key, "r1");
  CHECK(port.lines_of(4) == std::vector<std::string>{run_started("s1", "r1")});
  REQUIRE(port.reads.size() == 1);
  const auto& q = port.reads[0].query;
  CHECK((q.run_id == "r1" && q.cursor == 0 && q.event_cursor == 0 && !q.include_output &&
         q.max_bytes == output_hub::stream_read_bytes));
}

TEST_CASE_METHOD(hub_fixture, "output hub: a session stream follows the next run after the current one's last line",
                 "[output_hub]") {
  uint64_t key = follow_session(4, "s1");
  hub.on_current_run(key, "r1");
  drain(4);
  answer(0, news("r1 a", 3, 1));
  drain(4);
  commit({"r1"}, {"s1"});
  commit({"r2"}, {"s1"}); // r2 opened while r1 finishes
  REQUIRE(port.reads.size() == 2);
  CHECK(port.reads[1].query.run_id == "r1");
  CHECK(port.lines_of(4).size() == 2); // nothing of r2 before r1's end
  answer(1, news("r1 done", 4, 2, true));
  CHECK(port.lines_of(4) == std::vector<std::string>{run_started("s1", "r1"), "r1 a", "r1 done",
                                                     run_started("s1", "r2")});
  REQUIRE(port.reads.size() == 3);
  CHECK((port.reads[2].query.run_id == "r2" && port.reads[2].query.cursor == 0 &&
         port.reads[2].query.event_cursor == 0));
  CHECK(port.ended.empty());
  CHECK(hub.size() == 1);
}

TEST_CASE_METHOD(hub_fixture, "output hub: a session stream follows a run started while the session idles",
                 "[output_hub]") {
  uint64_t key = follow_session(4, "s1");
  hub.on_current_run(key, ""); // idle
  CHECK(port.pushed.empty());
  commit({"r9"}, {"s2"});
  CHECK((port.pushed.empty() && port.reads.empty()));
  commit({"r5"}, {"s1"});
  CHECK(port.lines_of(4) == std::vector<std::string>{run_started("s1", "r5")});
  REQUIRE(port.reads.size() == 1);
  CHECK(port.reads[0].query.run_id == "r5");
  hub.on_current_run(key, "r4"); // the session's answer, later than the commit
  CHECK(port.lines_of(4).size() == 1);
  CHECK(port.reads.size() == 1);
  answer(0, news("r5 done", 1, 1, true));
  drain(4);
  commit({"r6"}, {"s1"}); // idle again, then its next run
  CHECK(port.lines_of(4).back() == run_started("s1", "r6"));
  CHECK(port.reads.back().query.run_id == "r6");
}

TEST_CASE_METHOD(hub_fixture, "output hub: a stream ended for a client too far behind reads no more",
                 "[output_hub]") {
  follow_run(1, "r1");
  port.too_far_behind.insert(1);
  answer(0, news("L1", 1, 0, false, true));
  REQUIRE(port.cuts.size() == 1);
  CHECK(hub.size() == 0);
  commit({"r1"}, {"s"});
  drain(1);
  CHECK(port.reads.size() == 1);
}

TEST_CASE_METHOD(hub_fixture, "output hub: a subscriber holding news back for --subscriber-stall-ms is cut off",
                 "[output_hub]") {
  follow_run(1, "r1");
  follow_run(2, "r2"); // reads on, its client taking what it gets
  answer(0, news("L1", 1, 0));
  answer(1, news("L1", 1, 0));
  commit({"r1"}, {"s"});
  answer(2, news("L2", 2, 0)); // held back from 1
  port.clock += 20'000ms;
  drain(2);
  commit({"r2"}, {"s"});
  answer(3, news("L2", 2, 0));
  commit({"r1"}, {"s"});
  answer(4, news("L3", 3, 0)); // held back from 1 again: its wait began 20 s ago
  REQUIRE(port.reads.size() == 5);
  CHECK(port.lines_of(2).size() == 2);
  port.clock += 9'999ms;
  hub.cut_stalled();
  CHECK(port.cuts.empty());
  port.clock += 1ms;
  hub.cut_stalled();
  REQUIRE(port.cuts.size() == 1);
  CHECK(port.cuts[0].first == 1);
  CHECK(port.cuts[0].second == "the client has not read for 30000 ms (--subscriber-stall-ms)");
  CHECK(hub.size() == 1);
}

TEST_CASE_METHOD(hub_fixture, "output hub: a subscriber whose client keeps taking its line slowly is not cut off",
                 "[output_hub]") {
  follow_run(1, "r1");
  answer(0, news("L1", 1, 0));
  commit({"r1"}, {"s"});
  answer(1, news("L2", 2, 0)); // held back: L1 is still on its way
  for (int i = 0; i < 4; ++i) {
    port.clock += 20'000ms;
    take_some(1);
    hub.cut_stalled();
  }
  CHECK(port.cuts.empty());
  port.clock += 29'999ms;
  hub.cut_stalled();
  CHECK(port.cuts.empty());
  port.clock += 1ms; // nothing taken for 30 s
  hub.cut_stalled();
  REQUIRE(port.cuts.size() == 1);
  CHECK(port.cuts[0].first == 1);
  CHECK(hub.size() == 0);
}

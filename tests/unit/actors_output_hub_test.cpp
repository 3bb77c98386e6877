// The output hub's long-polls, and what every watcher shares: one read in
// flight, commits of other runs, closed connections, failed reads.
#include "fake_hub_port.hpp"

#include <nlohmann/json.hpp>

using namespace hb::actors;
using namespace hb::test;
using namespace std::chrono_literals;

TEST_CASE_METHOD(hub_fixture, "output hub: a long-poll whose read has news is answered at once", "[output_hub]") {
  poll(3, "r1", 4, 2, 5000);
  REQUIRE(port.deadlines.size() == 1);
  CHECK(port.deadlines[0] == 5000ms);
  REQUIRE(port.reads.size() == 1);
  const auto& q = port.reads[0].query;
  CHECK((q.run_id == "r1" && q.cursor == 4 && q.event_cursor == 2 && q.include_output && q.max_bytes == 0));
  answer(0, news("L", 6, 3));
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].first.h.id() == 3);
  CHECK(port.responses[0].first.seq == 7);
  CHECK(port.responses[0].second == "L");
  CHECK(hub.size() == 0);
}

TEST_CASE_METHOD(hub_fixture, "output hub: a long-poll without news waits for a commit of its run", "[output_hub]") {
  poll(3, "r1", 4, 2, 5000);
  answer(0, no_news("nothing", 4, 2));
  CHECK(port.responses.empty());
  CHECK(hub.size() == 1);
  commit({"r2"}, {"s1"});
  CHECK(port.reads.size() == 1);
  commit({"r2", "r1"}, {"s1", "s1"});
  REQUIRE(port.reads.size() == 2);
  CHECK((port.reads[1].query.cursor == 4 && port.reads[1].query.event_cursor == 2));
  answer(1, news("news", 5, 2));
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].second == "news");
  CHECK(hub.size() == 0);
}

TEST_CASE_METHOD(hub_fixture, "output hub: a long-poll is answered at its deadline with what it has", "[output_hub]") {
  poll(3, "r1", 0, 0, 1000);
  answer(0, no_news("first", 0, 0));
  port.clock += 999ms;
  commit({"r1"}, {"s"});
  answer(1, no_news("early", 0, 0));
  CHECK(port.responses.empty()); // not yet due
  port.clock += 1ms;
  timer_fires();
  REQUIRE(port.reads.size() == 3);
  answer(2, no_news("late", 0, 0));
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].second == "late");
  CHECK(hub.size() == 0);
  timer_fires(); // a deadline for a poll answered already
  CHECK(port.reads.size() == 3);
}

TEST_CASE_METHOD(hub_fixture, "output hub: long-polls share one timer, armed again only for an earlier deadline",
                 "[output_hub]") {
  poll(1, "r1", 0, 0, 5000);
  port.clock += 10ms;
  poll(2, "r1", 0, 0, 5000);
  CHECK(port.deadlines == std::vector<std::chrono::milliseconds>{5000ms}); // the second is due later
  poll(3, "r1", 0, 0, 1000);
  CHECK(port.deadlines.back() == 1000ms);
  for (size_t i = 0; i < 3; ++i)
    answer(i, no_news("", 0, 0));
  CHECK(hub.deadlines() == 3);
  port.clock += 1000ms;
  timer_fires();
  REQUIRE(port.reads.size() == 4); // the third's, past its deadline
  CHECK(port.reads[3].key == port.reads[2].key);
  CHECK(port.deadlines.back() == 3990ms); // then the timer for the first
  answer(3, no_news("third", 0, 0));
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].first.h.id() == 3);
  commit({"r1"}, {"s"});
  answer(4, news("news", 1, 1)); // the first and second are answered with news
  answer(5, news("news", 1, 1));
  CHECK(port.responses.size() == 3);
  CHECK(hub.deadlines() == 0); // answered polls leave no deadline behind
  port.clock += 4000ms;
  timer_fires();
  CHECK(port.reads.size() == 6);
}

TEST_CASE_METHOD(hub_fixture, "output hub: a timer superseded by an earlier one is ignored, one that fires early "
                              "is armed again", "[output_hub]") {
  poll(1, "r1", 0, 0, 5000);
  auto later = port.armed_for;
  poll(2, "r1", 0, 0, 1000);
  answer(0, no_news("", 0, 0));
  answer(1, no_news("", 0, 0));
  port.clock += 1000ms;
  hub.on_deadline(later); // the first timer, armed for 5 s: not the live one
  CHECK(port.reads.size() == 2);
  port.clock -= 1ms;
  timer_fires(); // the live one, a little before its time on this clock
  CHECK(port.reads.size() == 2);
  REQUIRE(port.deadlines.size() == 3);
  CHECK(port.deadlines.back() == 1ms);
  port.clock += 1ms;
  timer_fires();
  REQUIRE(port.reads.size() == 3);
  answer(2, no_news("due", 0, 0));
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].first.h.id() == 2);
}

TEST_CASE_METHOD(hub_fixture, "output hub: a deadline during a read waits for that read's answer", "[output_hub]") {
  poll(3, "r1", 0, 0, 1000);
  port.clock += 1000ms;
  timer_fires();
  CHECK(port.reads.size() == 1); // no second read beside the one on its way
  answer(0, no_news("as is", 0, 0));
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].second == "as is");
}

TEST_CASE_METHOD(hub_fixture, "output hub: one read in flight per watcher, one more for news during it",
                 "[output_hub]") {
  follow_run(1, "r1");
  REQUIRE(port.reads.size() == 1);
  commit({"r1"}, {"s"});
  commit({"r1"}, {"s"});
  CHECK(port.reads.size() == 1);
  answer(0, no_news("", 0, 0));
  REQUIRE(port.reads.size() == 2); // exactly one more for both commits
  answer(1, no_news("", 0, 0));
  CHECK(port.reads.size() == 2); // and none after it without news
  commit({"r1"}, {"s"});
  CHECK(port.reads.size() == 3);
}

TEST_CASE_METHOD(hub_fixture, "output hub: commits of other runs read nothing", "[output_hub]") {
  poll(1, "r1", 0, 0, 5000);
  follow_run(2, "r2");
  answer(0, no_news("", 0, 0));
  answer(1, no_news("", 0, 0));
  commit({"r3", "r4"}, {"s3", "s4"});
  commit({}, {});
  CHECK(port.reads.size() == 2);
  commit({"r2"}, {"s2"});
  REQUIRE(port.reads.size() == 3);
  CHECK(port.reads[2].query.run_id == "r2");
}

TEST_CASE_METHOD(hub_fixture, "output hub: a closed connection's watchers are dropped and their late answers ignored",
                 "[output_hub]") {
  poll(1, "r1", 0, 0, 5000);
  follow_run(1, "r1");
  follow_run(2, "r1");
  CHECK(hub.size() == 3);
  hub.drop_watchers_of(handle::from_int(1));
  CHECK(hub.size() == 1);
  answer(0, news("late poll", 1, 0));
  answer(1, news("late stream", 1, 0));
  hub.on_read_failed(port.reads[0].key, R"({"ok": false, "error": "gone", "error_type": "RuntimeError"})");
  CHECK(port.responses.empty());
  CHECK(port.lines_of(1).empty());
  timer_fires();
  answer(2, no_news("", 0, 0));
  commit({"r1"}, {"s"});
  REQUIRE(port.reads.size() == 4);
  CHECK(port.reads[3].key == port.reads[2].key); // only connection 2's stream reads
}

TEST_CASE_METHOD(hub_fixture, "output hub: a failed read is answered with its error line", "[output_hub]") {
  const std::string failed = R"({"ok": false, "error": "'unknown run: r1'", "error_type": "KeyError"})";
  poll(1, "r1", 0, 0, 5000);
  hub.on_read_failed(port.reads[0].key, failed);
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].second == failed);

  follow_run(2, "r1", 5, 5);
  hub.on_read_failed(port.reads[1].key, failed);
  CHECK(port.lines_of(2) == std::vector<std::string>{port.responses[0].second}); // and ends the stream
  CHECK(port.ended == std::vector<int64_t>{2});
}

TEST_CASE_METHOD(hub_fixture, "output hub: at a hand-over long-polls are answered now and subscriptions end",
                 "[output_hub]") {
  poll(1, "r1", 0, 0, 60'000);
  answer(0, no_news("waiting", 0, 0));
  poll(2, "r1", 0, 0, 60'000); // its read still on its way
  follow_run(3, "r1");
  answer(2, no_news("", 0, 0));
  hub.end_all("handed over");
  REQUIRE(port.reads.size() == 4); // a read for the first poll; the second's own read answers it
  answer(3, no_news("now", 0, 0));
  answer(1, no_news("its read", 0, 0));
  REQUIRE(port.responses.size() == 2);
  CHECK(port.responses[0].second == "now");
  CHECK(port.responses[1].second == "its read");
  REQUIRE(port.cuts.size() == 1);
  CHECK(port.cuts[0] == std::pair<int64_t, std::string>{3, "handed over"});
  CHECK(hub.size() == 0);
}

TEST_CASE_METHOD(hub_fixture, "output hub: a plain get_output of a live run is answered from its window without a read",
                 "[output_hub]") {
  auto plain = [](int64_t cursor, int64_t event_cursor, bool include_output) {
    return requests::get_output{"r1", cursor, event_cursor, include_output, 0};
  };
  CHECK(!hub.answer_from_window(plain(0, 0, true))); // no commit told of r1 yet: the log answers
  commit_tail("r1", 2, 3, {"he", "{\"event\": \"tool.started\"}", "llo"}, "ded");
  auto whole = hub.answer_from_window(plain(0, 0, true));
  REQUIRE(whole);
  auto line = nlohmann::json::parse(*whole);
  CHECK(line["status"] == "running");
  CHECK(line["done"] == false);
  CHECK(line["output"] == "hello");
  CHECK(line["cursor"] == 2);
  CHECK(line["event_cursor"] == 3);
  auto tail = hub.answer_from_window(plain(1, 3, false));
  REQUIRE(tail);
  line = nlohmann::json::parse(*tail);
  CHECK(line["delta"] == "llo");
  CHECK(line.value("output", "") != "hello");
  // Past the run's end, with every commit told: as the log answers it (a
  // commit not yet told leaves it to the log: shared_run_windows).
  auto past = hub.answer_from_window(plain(5, 3, false));
  REQUIRE(past);
  line = nlohmann::json::parse(*past);
  CHECK(line["delta"] == "");
  CHECK(line["cursor"] == 2);
  CHECK(line["events"].empty());
  CHECK(port.reads.empty());
  CHECK(hub.size() == 0); // nothing waits
  commit({"r1"}, {"s"}); // its end (a commit without a tail): the log answers from now on
  CHECK(!hub.answer_from_window(plain(2, 3, false)));
}

TEST_CASE_METHOD(hub_fixture, "output hub: commits are told only while a watcher follows and from before its first look",
                 "[output_hub]") {
  auto whole = [this] { return hub.answer_from_window(requests::get_output{"r1", 0, 0, true, 0}); };
  CHECK(!windows.following());
  commit_tail("r1", 1, 1, {"a"}, "d"); // a run only polled: the window is kept, the hub hears nothing
  REQUIRE(whole());
  poll(3, "r2", 0, 0, 5000); // no window: the log is read
  REQUIRE(port.reads.size() == 1);
  CHECK(port.following_at_read == std::vector<bool>{true});
  answer(0, news("L", 1, 1));
  CHECK(hub.size() == 0);
  CHECK(windows.following()); // until a commit finds nobody
  commit_tail("r1", 2, 2, {"b"}, "d");
  CHECK(!windows.following());
  log_committed later{{"r1"}, {"s"}, {tail_of("r1", 3, 3, {"c"}, "d")}, {}, {}};
  CHECK(!windows.committed(later)); // not for the hub, in the windows all the same
  CHECK(nlohmann::json::parse(*whole())["output"] == "abc");
  follow_run(4, "r1", 3, 3); // answered from the window: no news yet, and the hub is told again
  CHECK(port.reads.size() == 1);
  CHECK(windows.following());
}

// Watchers answered from a commit's notice (run_tail) instead of a read:
// the line must be the one a read of the log would have given, byte for
// byte, and anything the notice cannot vouch for is read as before.
#include "actors/responses.hpp"
#include "fake_hub_port.hpp"
#include "storage/log_reader.hpp"
#include "storage/log_writer.hpp"

#include "temp_dir.hpp"

using namespace hb::actors;
using namespace hb::test;
using namespace std::chrono_literals;

namespace {

// A live run in a real log, its commits told to a hub as the log writer
// tells them: the reader is the oracle for every line the hub builds.
struct tail_fixture : hub_fixture {
  temp_log db;
  hb::storage::log_writer log{db.path};
  hb::storage::log_reader reader{db.path};
  run_tail tail; // what the open transaction added

  tail_fixture() {
    log.open_run("r1", "s1", 100.0);
    log.commit();
  }
  void delta(const std::string& text) {
    REQUIRE(log.append_delta("r1", text, 101.0));
    tail.texts.push_back(text);
    tail.kinds.push_back('d');
  }
  void event(const std::string& body) {
    REQUIRE(log.append_event("r1", body, 101.0));
    tail.texts.push_back(body);
    tail.kinds.push_back('e');
  }
  void commit_with_tail() {
    log.commit();
    auto counts = log.counts("r1");
    REQUIRE(counts);
    tail.run_id = "r1";
    tail.delta_count = counts->deltas;
    tail.event_count = counts->events;
    hub.on_committed(log_committed{{"r1"}, {"s1"}, {std::exchange(tail, run_tail{})}});
  }
  // What a follower at these cursors reads from the log.
  std::string read_line(int64_t cursor, int64_t event_cursor) {
    auto run = reader.read_run("r1", cursor, event_cursor);
    REQUIRE(run);
    return get_output_line(*run, cursor, false);
  }
};

} // namespace

TEST_CASE_METHOD(tail_fixture, "output hub: a subscriber at a commit's start gets the line a read would give, "
                               "without reading", "[output_hub]") {
  follow_run(1, "r1");
  REQUIRE(port.reads.size() == 1);
  answer(0, no_news("", 0, 0));
  delta("he said \"hi\"\n");
  event(R"({"event": "tool.started", "name": "x"})");
  delta("ü\u00e9");
  commit_with_tail();
  CHECK(port.reads.size() == 1);
  REQUIRE(port.lines_of(1).size() == 1);
  CHECK(port.lines_of(1)[0] == read_line(0, 0));
  drain(1);

  delta("more");
  commit_with_tail();
  CHECK(port.reads.size() == 1);
  REQUIRE(port.lines_of(1).size() == 2);
  CHECK(port.lines_of(1)[1] == read_line(2, 3));
}

TEST_CASE_METHOD(tail_fixture, "output hub: a subscriber behind a commit's start reads from its own cursors",
                 "[output_hub]") {
  follow_run(1, "r1");
  answer(0, no_news("", 0, 0));
  delta("a");
  commit_with_tail();
  REQUIRE(port.lines_of(1).size() == 1); // not drained: the next news is held back
  delta("b");
  commit_with_tail();
  CHECK(port.lines_of(1).size() == 1);
  drain(1); // the news held back is read from the log
  REQUIRE(port.reads.size() == 2);
  CHECK((port.reads[1].query.cursor == 1 && port.reads[1].query.event_cursor == 1));
}

TEST_CASE_METHOD(tail_fixture, "output hub: a watcher whose read is on its way is not answered from a tail",
                 "[output_hub]") {
  follow_run(1, "r1");
  delta("a");
  commit_with_tail();
  CHECK(port.lines_of(1).empty());
  REQUIRE(port.reads.size() == 1); // the first read's answer comes, then one more read
  answer(0, news(read_line(0, 0), 1, 1));
  CHECK(port.reads.size() == 2);
}

TEST_CASE_METHOD(tail_fixture, "output hub: a long-poll where the last commit left its run waits without a read "
                               "and is answered by the next commit", "[output_hub]") {
  delta("a");
  commit_with_tail();
  hub.long_poll(to(3), hb::actors::requests::get_output{"r1", 1, 1, false, 5000});
  CHECK(port.reads.empty());
  CHECK(port.responses.empty());
  delta("b");
  commit_with_tail();
  CHECK(port.reads.empty());
  REQUIRE(port.responses.size() == 1);
  CHECK(port.responses[0].second == read_line(1, 1));

  SECTION("one behind, or wanting the whole output, reads") {
    hub.long_poll(to(4), hb::actors::requests::get_output{"r1", 1, 1, false, 5000});
    hub.long_poll(to(5), hb::actors::requests::get_output{"r1", 2, 2, true, 5000});
    CHECK(port.reads.size() == 2);
  }
  SECTION("a commit that touched the run without a tail (its end) makes it read again") {
    hub.on_committed(log_committed{{"r1"}, {"s1"}, {}});
    hub.long_poll(to(4), hb::actors::requests::get_output{"r1", 2, 2, false, 5000});
    CHECK(port.reads.size() == 1);
  }
}

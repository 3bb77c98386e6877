// What the log writer tells the broker with each commit: the runs touched
// and, for live runs, what the commit added (run_tail) and a small end
// (run_ending), or nothing where a read is the only way to know (much
// text, a big end, a retried write).
#define CAF_SUITE log_writer_notices
#include "tests/actors/writer_fixture.hpp"

#include "actors/run_output.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

using namespace hb::actors;
using hb::test::writer_fixture;

namespace {

// A tail's texts, one by one.
std::vector<std::string> texts_of(const run_tail& tail) {
  std::vector<std::string> out;
  size_t at = 0;
  for (auto size : tail.sizes) {
    out.push_back(tail.text.substr(at, size));
    at += size;
  }
  CAF_CHECK_EQUAL(at, tail.text.size());
  return out;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(log_writer_notices_tests, writer_fixture)

CAF_TEST(a commit notice tells what it added to each live run in order with the run counts) {
  auto heard = watch(writer);
  CAF_REQUIRE(open_run("r1", "s1"));
  CAF_REQUIRE(open_run("r2", "s2"));
  CAF_CHECK(heard->back().tails.empty()); // an opening adds nothing to tell
  heard->clear();
  delta("r1", "a");
  caf::anon_send(writer, run_event{"r1", R"({"event": "x"})", 101.5});
  delta("r2", "b");
  auto queue = open_run_output("r1"); // a worker's numbered output, through the run's queue
  send_run_deltas(writer, "r1", *queue, {"c", "d"}, 102.0, 1);
  deliver();
  CAF_REQUIRE_EQUAL(heard->size(), 1u);
  auto tails = heard->back().tails;
  CAF_REQUIRE_EQUAL(tails.size(), 2u);
  std::sort(tails.begin(), tails.end(), [](auto& x, auto& y) { return x.run_id < y.run_id; });
  CAF_CHECK_EQUAL(tails[0].run_id, "r1");
  CAF_CHECK_EQUAL(texts_of(tails[0]), (std::vector<std::string>{"a", R"({"event": "x"})", "c", "d"}));
  CAF_CHECK_EQUAL(tails[0].kinds, "dedd");
  CAF_CHECK_EQUAL(tails[0].delta_count, 3);
  CAF_CHECK_EQUAL(tails[0].event_count, 4);
  CAF_CHECK_EQUAL(texts_of(tails[1]), (std::vector<std::string>{"b"}));
  CAF_CHECK_EQUAL(tails[1].delta_count, 1);
  heard->clear();
  delta("r1", "e");
  deliver();
  CAF_REQUIRE_EQUAL(heard->back().tails.size(), 1u);
  const auto& next = heard->back().tails[0];
  CAF_CHECK_EQUAL(next.delta_from(), 3);
  CAF_CHECK_EQUAL(next.event_from(), 4);
  CAF_CHECK_EQUAL(next.event_count, 5);
  forget_run_output("r1");
}

CAF_TEST(more text than a notice carries is told without a tail) {
  auto heard = watch(writer);
  CAF_REQUIRE(open_run("r1", "s1"));
  heard->clear();
  delta("r1", std::string(70'000, 'x'));
  deliver();
  CAF_REQUIRE_EQUAL(heard->size(), 1u);
  CAF_CHECK_EQUAL(heard->back().runs, (std::vector<std::string>{"r1"}));
  CAF_CHECK(heard->back().tails.empty());
}

CAF_TEST(a runs small end is told with its counts and its last output and a big one is not) {
  auto heard = watch(writer);
  CAF_REQUIRE(open_run("r1", "s1"));
  delta("r1", "a");
  deliver();
  heard->clear();
  delta("r1", "b");
  caf::anon_send(writer, run_end{"r1", "complete", R"({"final_response": "ab"})", false, "", 200.0});
  caf::anon_send(writer, run_event{"r1", R"({"event": "approval.resolved"})", 200.5}); // late: the log drops it
  deliver(); // the delta, the end and the late event in one transaction
  CAF_REQUIRE_EQUAL(heard->size(), 1u);
  const auto& told = heard->back();
  CAF_REQUIRE_EQUAL(told.tails.size(), 1u);
  CAF_CHECK_EQUAL(texts_of(told.tails[0]), (std::vector<std::string>{"b"}));
  CAF_CHECK_EQUAL(told.tails[0].delta_count, 2);
  CAF_REQUIRE_EQUAL(told.endings.size(), 1u);
  const auto& ending = told.endings[0];
  CAF_CHECK_EQUAL(ending.run_id, "r1");
  CAF_CHECK_EQUAL(ending.delta_count, 2);
  CAF_CHECK_EQUAL(ending.event_count, 2);
  CAF_CHECK_EQUAL(ending.status, "complete");
  CAF_CHECK(ending.has_result);
  CAF_CHECK_EQUAL(ending.result, R"({"final_response": "ab"})");
  CAF_CHECK(!ending.has_error);
  auto run = committed_run("r1");
  CAF_REQUIRE(run);
  CAF_CHECK_EQUAL(run->status, "complete");
  CAF_CHECK_EQUAL(run->events.size(), 2u); // the two deltas' stream.delta, not the late event

  CAF_REQUIRE(open_run("r2", "s1"));
  heard->clear();
  CAF_REQUIRE(end_run("r2", "complete", "\"" + std::string(70'000, 'z') + "\""));
  CAF_CHECK_EQUAL(heard->back().runs, (std::vector<std::string>{"r2"}));
  CAF_CHECK(heard->back().endings.empty()); // a result over the bound: not copied, a read tells it
}

CAF_TEST(output written again by a retry is told without a tail) {
  auto heard = watch(writer);
  CAF_REQUIRE(open_run("r1"));
  heard->clear();
  fill_disk();
  std::vector<std::string> texts; // under a notice's bound, over what fits in the pages the log has
  for (int i = 0; i < 40; ++i) {
    texts.push_back(std::string(1000, static_cast<char>('a' + i % 26)));
    delta("r1", texts.back());
  }
  deliver();
  CAF_REQUIRE(health().degraded);
  free_disk();
  let_pass(std::chrono::seconds(1));
  CAF_REQUIRE(!heard->empty());
  CAF_CHECK_EQUAL(heard->back().runs, (std::vector<std::string>{"r1"}));
  CAF_CHECK(heard->back().tails.empty());
  auto run = committed_run("r1");
  CAF_REQUIRE(run);
  CAF_CHECK_EQUAL(run->deltas, texts);
}

CAF_TEST(a writer that keeps the run windows tells commits only while they follow) {
  windows = std::make_shared<shared_run_windows>();
  writer = spawn_writer();
  auto heard = watch(writer);
  CAF_REQUIRE(open_run("r1", "s1"));
  delta("r1", "a");
  deliver();
  CAF_CHECK(heard->empty()); // a run only polled: nothing to wake
  auto polled = windows->answer(output_query{"r1", 0, 0, true, 0});
  CAF_REQUIRE(polled);
  auto line = nlohmann::json::parse(polled->line);
  CAF_CHECK_EQUAL(line["output"], "a");
  // Each commit bracketed by the writer: the windows hold the whole log, so
  // a status poll past the run's end is answered from them, as the log would.
  auto past = windows->answer(output_query{"r1", 1000, 1000, false, 0});
  CAF_REQUIRE(past);
  CAF_CHECK_EQUAL(past->cursor, 1);
  CAF_CHECK(!past->news);
  windows->following(true);
  delta("r1", "b");
  deliver();
  CAF_REQUIRE_EQUAL(heard->size(), 1u);
  CAF_CHECK_EQUAL(heard->back().runs, (std::vector<std::string>{"r1"}));
  auto told = windows->answer(output_query{"r1", 1, 1, false, 0}); // (a local: CAF's check keeps a reference)
  CAF_REQUIRE(told);
  CAF_CHECK_EQUAL(told->cursor, 2); // in the windows before the notice
  windows->following(false);
  CAF_REQUIRE(end_run("r1"));
  CAF_CHECK_EQUAL(heard->size(), 1u);
  auto ended = windows->answer(output_query{"r1", 2, 2, false, 0});
  CAF_REQUIRE(ended);
  CAF_CHECK(ended->done);
}

CAF_TEST_FIXTURE_SCOPE_END()

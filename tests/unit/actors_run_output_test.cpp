#include "actors/run_output.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

using hb::actors::run_output;

TEST_CASE("a run's queue tells its first item, keeps order and refuses after close", "[run_output]") {
  run_output q;
  CHECK(q.push(false, "a", 1.0) == run_output::pushed::first);
  CHECK(q.push(true, "{}", 1.5) == run_output::pushed::more);
  auto taken = q.take();
  REQUIRE(taken.size() == 2);
  CHECK((!taken[0].is_event && taken[0].text == "a" && taken[0].at == 1.0));
  CHECK((taken[1].is_event && taken[1].text == "{}"));
  CHECK(q.take().empty());
  CHECK(q.push(false, "b", 2.0) == run_output::pushed::first); // empty again: tell the writer again
  auto rest = q.close();
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].text == "b");
  CHECK(q.push(false, "late", 3.0) == run_output::pushed::refused);
  CHECK(q.take().empty());
}

TEST_CASE("queues are found by run id until forgotten", "[run_output]") {
  auto made = hb::actors::open_run_output("run-x");
  CHECK(hb::actors::open_run_output("run-x") == made);
  CHECK(hb::actors::find_run_output("run-x") == made);
  hb::actors::forget_run_output("run-x");
  CHECK_FALSE(hb::actors::find_run_output("run-x"));
}

TEST_CASE("senders wait while the writer is behind, until it catches up", "[run_output]") {
  using namespace std::chrono_literals;
  hb::actors::writer_backlog_add(hb::actors::writer_backlog_limit + 1);
  REQUIRE(hb::actors::writer_backlogged());
  std::atomic<bool> done{false};
  std::thread sender([&] {
    hb::actors::wait_for_writer([] { return false; });
    done = true;
  });
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(done.load()); // still over half the limit
  hb::actors::writer_backlog_add(-(hb::actors::writer_backlog_limit + 1)); // the writer took it all
  sender.join();
  CHECK(done.load());
  CHECK_FALSE(hb::actors::writer_backlogged());

  // `stop` ends a wait too (the turn is over).
  hb::actors::writer_backlog_add(hb::actors::writer_backlog_limit + 1);
  hb::actors::wait_for_writer([] { return true; });
  hb::actors::writer_backlog_add(-(hb::actors::writer_backlog_limit + 1));
}

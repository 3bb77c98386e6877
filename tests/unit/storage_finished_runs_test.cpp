// Finished runs served from memory: the same text, cursors and JSON as the
// log gives, and a cache that stays within its byte budget.
#include "storage/finished_runs.hpp"

#include "protocol/json_text.hpp"

#include <catch2/catch.hpp>

using namespace hb::storage;

namespace {

run_snapshot finished(const std::string& id, std::vector<std::string> deltas) {
  run_snapshot run;
  run.run_id = id;
  run.session_id = "s";
  run.status = "complete";
  run.result = R"({"final_response": "x"})";
  run.deltas = std::move(deltas);
  run.delta_count = static_cast<int64_t>(run.deltas.size());
  run.events = {R"({"event": "a"})", R"({"event": "b", "x": [1, 2]})", R"({"event": "c"})"};
  run.event_count = 3;
  return run;
}

} // namespace

TEST_CASE("a finished run keeps its joined text, per-delta cursors and encoded output") {
  auto run = finished_run::from(finished("r", {"he", "llo ", "\"wörld\"\n"}));
  CHECK(run->text == "hello \"wörld\"\n");
  CHECK(run->delta_count() == 3);
  CHECK(run->text_from(0) == run->text);
  CHECK(run->text_from(1) == "llo \"wörld\"\n");
  CHECK(run->text_from(3) == "");
  CHECK(run->text_from(99) == "");
  CHECK(run->text_from(-5) == run->text);
  std::string quoted;
  hb::protocol::append_quoted(quoted, run->text);
  CHECK(run->quoted_text == quoted);
  CHECK(run->event_count() == 3);
  CHECK(run->events_from(0) == R"([{"event": "a"}, {"event": "b", "x": [1, 2]}, {"event": "c"}])");
  CHECK(run->events_from(2) == R"([{"event": "c"}])");
  CHECK(run->events_from(3) == "[]");
  CHECK(run->events_from(99) == "[]");
  CHECK(run->events_from(-1) == run->events_from(0));
  CHECK(run->result == std::optional<std::string>(R"({"final_response": "x"})"));
}

TEST_CASE("a finished run is worth keeping once it is read again") {
  finished_run_cache cache(1 << 20);
  CHECK_FALSE(cache.read_again("a"));
  CHECK_FALSE(cache.read_again("b"));
  CHECK(cache.read_again("a"));
  CHECK(cache.read_again("a"));
  for (int i = 0; i < 5000; ++i) // only recent first reads are remembered
    cache.read_again("r" + std::to_string(i));
  CHECK_FALSE(cache.read_again("b"));
}

TEST_CASE("a run without deltas has an empty text") {
  auto run = finished_run::from(finished("r", {}));
  CHECK(run->text.empty());
  CHECK(run->quoted_text == "\"\"");
  CHECK(run->text_from(0).empty());
}

TEST_CASE("the cache evicts the least recently read runs to stay within its bytes") {
  auto a = finished_run::from(finished("a", {std::string(1000, 'a')}));
  size_t one = a->bytes();
  finished_run_cache cache(one * 2 + one / 2); // room for two
  cache.put(a);
  cache.put(finished_run::from(finished("b", {std::string(1000, 'b')})));
  REQUIRE(cache.find("a")); // a is now the most recently read
  cache.put(finished_run::from(finished("c", {std::string(1000, 'c')})));
  CHECK(cache.find("a"));
  CHECK_FALSE(cache.find("b"));
  CHECK(cache.find("c"));
  CHECK(cache.size() == 2);
  CHECK(cache.bytes() <= one * 2 + one / 2);

  cache.forget("a"); // pruned
  CHECK_FALSE(cache.find("a"));
  CHECK(cache.size() == 1);
  cache.put(a); // a reader's snapshot from before the prune
  CHECK_FALSE(cache.find("a"));

  finished_run_cache small(100);
  small.put(a); // bigger than the whole cache: not kept
  CHECK_FALSE(small.find("a"));
  CHECK(small.bytes() == 0);
}

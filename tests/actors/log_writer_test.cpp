// The log writer, driven message by message: what it commits, when it
// answers, what it tells the watcher, and how it holds and then writes what
// an unwritable log refused.
#define CAF_SUITE log_writer
#include "tests/actors/writer_fixture.hpp"

#include "actors/run_output.hpp"
#include "storage/recovery.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include <filesystem>

using namespace hb::actors;
using hb::storage::run_snapshot;
using namespace hb::test;
using nlohmann::json;

CAF_TEST_FIXTURE_SCOPE(log_writer_tests, writer_fixture)

CAF_TEST(a run opening is answered only once its row is committed) {
  auto answer = self->request(writer, caf::infinite, run_opening{"r1", "s1", 100.0, "\"hello\""});
  expect((run_opening), from(_).to(writer));
  CAF_CHECK(self->mailbox().empty()); // applied, not committed: no answer yet
  CAF_CHECK(!committed_run("r1"));
  expect((commit_due), from(writer).to(writer));
  auto run = committed_run("r1");
  CAF_REQUIRE(run);
  CAF_CHECK_EQUAL(run->status, "running");
  CAF_CHECK_EQUAL(run->session_id, "s1");
  SQLite::Database file(db.path);
  CAF_CHECK_EQUAL(file.execAndGet("SELECT user_message FROM runs WHERE run_id = 'r1'").getString(), "\"hello\"");
  CAF_REQUIRE(!self->mailbox().empty());
  answer.receive([](bool ok) { CAF_CHECK(ok); }, [](caf::error& err) { CAF_FAIL(to_string(err)); });
}

CAF_TEST(output through the run queue lands in order) {
  CAF_REQUIRE(open_run("r1"));
  auto queue = open_run_output("r1");
  send_run_output(writer, "r1", queue.get(), false, "Hel", 101.0);
  send_run_output(writer, "r1", queue.get(), true, R"({"event": "tool.started"})", 102.0);
  send_run_output(writer, "r1", nullptr, false, "lo", 103.0); // the queue found by run id
  deliver();
  auto run = committed_run("r1");
  CAF_REQUIRE(run);
  CAF_CHECK_EQUAL(run->deltas, (std::vector<std::string>{"Hel", "lo"}));
  CAF_REQUIRE_EQUAL(run->events.size(), 3u);
  CAF_CHECK_EQUAL(json::parse(run->events[0]).value("delta", ""), "Hel");
  CAF_CHECK_EQUAL(json::parse(run->events[1]).value("event", ""), "tool.started");
  CAF_CHECK_EQUAL(json::parse(run->events[2]).value("delta", ""), "lo");
  CAF_CHECK_EQUAL(event_times("r1"), (std::vector<double>{101.0, 102.0, 103.0}));
  forget_run_output("r1");
}

CAF_TEST(a run queue tells the writer once per batch) {
  CAF_REQUIRE(open_run("r1"));
  auto queue = open_run_output("r1");
  for (const char* text : {"a", "b", "c"})
    send_run_output(writer, "r1", queue.get(), false, text, 101.0);
  expect((run_output_queued), from(_).to(writer));
  expect((commit_due), from(writer).to(writer));
  CAF_CHECK(!sched.has_job());
  auto run = committed_run("r1"); // (CAF_CHECK_EQUAL keeps references: no temporaries)
  CAF_REQUIRE(run);
  CAF_CHECK_EQUAL(run->deltas, (std::vector<std::string>{"a", "b", "c"}));
  forget_run_output("r1");
}

CAF_TEST(numbered output is acknowledged with its highest number only once committed) {
  CAF_REQUIRE(open_run("r1"));
  auto queue = open_run_output("r1");
  std::vector<uint64_t> told;
  queue->on_committed([&](uint64_t seq) { told.push_back(seq); });
  send_run_output(writer, "r1", queue.get(), false, "a", 101.0, 1);
  send_run_output(writer, "r1", queue.get(), true, R"({"event": "x"})", 101.0, 2);
  send_run_output(writer, "r1", queue.get(), false, "b", 101.0, 3);
  expect((run_output_queued), from(_).to(writer));
  CAF_CHECK(told.empty()); // applied, not yet committed
  expect((commit_due), from(writer).to(writer));
  CAF_CHECK_EQUAL(told, (std::vector<uint64_t>{3}));
  send_run_output(writer, "r1", queue.get(), false, "unnumbered", 102.0); // an embedded agent's: nothing to tell
  deliver();
  CAF_CHECK_EQUAL(told, (std::vector<uint64_t>{3}));
  forget_run_output("r1");
}

CAF_TEST(a workers texts land in order around its events and are acknowledged with the last number) {
  CAF_REQUIRE(open_run("r1"));
  auto queue = open_run_output("r1");
  std::vector<uint64_t> told;
  queue->on_committed([&](uint64_t seq) { told.push_back(seq); });
  send_run_deltas(writer, "r1", *queue, {"a", "b", "c"}, 101.0, 1);
  send_run_output(writer, "r1", queue.get(), true, R"({"event": "x"})", 102.0, 4);
  std::vector<std::string> many;
  for (int i = 0; i < 2500; ++i) // more than one log operation holds
    many.push_back(std::to_string(i) + " ");
  send_run_deltas(writer, "r1", *queue, many, 103.0, 5);
  expect((run_output_queued), from(_).to(writer)); // once: the queue was empty only at the first
  expect((commit_due), from(writer).to(writer));
  CAF_CHECK(!sched.has_job());
  CAF_CHECK_EQUAL(told, (std::vector<uint64_t>{2504}));
  auto run = committed_run("r1");
  CAF_REQUIRE(run);
  std::vector<std::string> want{"a", "b", "c"};
  want.insert(want.end(), many.begin(), many.end());
  CAF_CHECK_EQUAL(run->deltas, want);
  CAF_REQUIRE_EQUAL(run->events.size(), want.size() + 1);
  CAF_CHECK_EQUAL(json::parse(run->events[2]).value("delta", ""), "c");
  CAF_CHECK_EQUAL(json::parse(run->events[3]).value("event", ""), "x");
  CAF_CHECK_EQUAL(json::parse(run->events.back()).value("delta", ""), "2499 ");
  forget_run_output("r1");
}

CAF_TEST(rows from a workers queue carry the numbers of the frames that brought them) {
  CAF_REQUIRE(open_run("r1"));
  auto queue = open_run_output("r1");
  send_run_deltas(writer, "r1", *queue, {"a", "b"}, 101.0, 1); // frames 1 and 2: one packed row
  send_run_output(writer, "r1", queue.get(), true, R"({"event": "x"})", 102.0, 3);
  send_run_deltas(writer, "r1", *queue, {"c"}, 103.0, 4);
  deliver();
  SQLite::Database file(db.path);
  auto run_no = file.execAndGet("SELECT run_no FROM runs WHERE run_id = 'r1'").getInt64();
  SQLite::Statement rows(file, "SELECT host_seq FROM deltas WHERE run_no = ? ORDER BY seq");
  rows.bind(1, run_no);
  std::vector<int64_t> delta_rows;
  while (rows.executeStep())
    delta_rows.push_back(rows.getColumn(0).getInt64());
  CAF_CHECK_EQUAL(delta_rows, (std::vector<int64_t>{2, 4})); // each row: its last delta's frame
  SQLite::Statement event(file, "SELECT host_seq FROM events WHERE run_no = ? AND body LIKE '%\"event\": \"x\"%'");
  event.bind(1, run_no);
  CAF_REQUIRE(event.executeStep());
  CAF_CHECK_EQUAL(event.getColumn(0).getInt64(), 3);
  CAF_CHECK_EQUAL(hb::storage::logged_host_seq(file, run_no), 4u); // what a daemon re-attaching asks after
  forget_run_output("r1");
}

CAF_TEST(numbered output held by an unwritable log is acknowledged once the retry writes it) {
  CAF_REQUIRE(open_run("r1"));
  auto queue = open_run_output("r1");
  std::vector<uint64_t> told;
  queue->on_committed([&](uint64_t seq) { told.push_back(seq); });
  fill_disk();
  send_run_output(writer, "r1", queue.get(), false, std::string(100000, 'a'), 101.0, 7);
  deliver();
  CAF_CHECK(health().degraded);
  CAF_CHECK(told.empty());
  free_disk();
  let_pass(std::chrono::seconds(1));
  CAF_CHECK_EQUAL(told, (std::vector<uint64_t>{7}));
  forget_run_output("r1");
}

CAF_TEST(output without a queue arrives as messages and lands too) {
  CAF_REQUIRE(open_run("r1"));
  send_run_output(writer, "r1", nullptr, false, "plain", 101.0);
  send_run_output(writer, "r1", nullptr, true, R"({"event": "note"})", 102.0);
  expect((run_delta), from(_).to(writer));
  expect((run_event), from(_).to(writer));
  deliver();
  auto run = committed_run("r1");
  CAF_CHECK_EQUAL(run->deltas, (std::vector<std::string>{"plain"}));
  CAF_CHECK_EQUAL(run->events.size(), 2u);
}

CAF_TEST(a run end is committed with what its queue still held) {
  CAF_REQUIRE(open_run("r1"));
  auto queue = open_run_output("r1");
  std::string left = "left in the queue";
  writer_backlog_add(static_cast<int64_t>(left.size())); // as send_run_output does
  queue->push(false, left, 150.0); // and no message: the end takes it
  auto answer = ask<bool>(writer, run_end{"r1", "error", "", true, "it broke", 200.0});
  CAF_REQUIRE(answer);
  CAF_CHECK(*answer);
  auto run = committed_run("r1");
  CAF_CHECK_EQUAL(run->status, "error");
  CAF_CHECK_EQUAL(run->error.value_or(""), "it broke");
  CAF_CHECK(!run->result);
  CAF_CHECK_EQUAL(run->ended_at.value_or(0), 200.0);
  CAF_CHECK_EQUAL(run->deltas, (std::vector<std::string>{"left in the queue"}));
  CAF_CHECK(!find_run_output("r1"));
  CAF_CHECK(queue->push(false, "late", 201.0) == run_output::pushed::refused);
}

CAF_TEST(output after a run end is not written) {
  CAF_REQUIRE(open_run("r1"));
  CAF_REQUIRE(end_run("r1"));
  delta("r1", "too late");
  deliver();
  auto run = committed_run("r1");
  CAF_CHECK_EQUAL(run->status, "complete");
  CAF_CHECK_EQUAL(run->result.value_or(""), "{\"final_response\": \"done\"}");
  CAF_CHECK(run->deltas.empty());
}

CAF_TEST(the watcher hears each commit with the runs and sessions it touched) {
  auto heard = watch(writer);
  CAF_REQUIRE(open_run("r1", "s1"));
  CAF_REQUIRE_EQUAL(heard->size(), 1u);
  CAF_CHECK_EQUAL(heard->back().runs, (std::vector<std::string>{"r1"}));
  CAF_CHECK_EQUAL(heard->back().sessions, (std::vector<std::string>{"s1"}));
  CAF_REQUIRE(open_run("r2", "s2"));
  delta("r1", "x");
  deliver();
  CAF_REQUIRE_EQUAL(heard->size(), 3u);
  CAF_CHECK_EQUAL(heard->back().runs, (std::vector<std::string>{"r1"}));
  CAF_CHECK_EQUAL(heard->back().sessions, (std::vector<std::string>{"s1"}));
  caf::anon_send(writer, session_put{{"s3", 1.0, 2.0, "{}", "[]", true, 0, false}, nullptr});
  deliver();
  CAF_CHECK_EQUAL(heard->size(), 3u); // a session row touches no run
}

CAF_TEST(appends waiting in the mailbox share one commit and one notice) {
  auto heard = watch(writer);
  CAF_REQUIRE(open_run("r1", "s1"));
  CAF_REQUIRE(open_run("r2", "s2"));
  auto before = health();
  heard->clear();
  delta("r1", "a");
  delta("r2", "b");
  delta("r1", "c");
  deliver();
  auto after = health();
  CAF_CHECK_EQUAL(after.commits, before.commits + 1);
  CAF_CHECK_EQUAL(after.rows, before.rows + 3); // a row per delta: its event has none
  CAF_REQUIRE_EQUAL(heard->size(), 1u);
  auto runs = heard->back().runs;
  std::sort(runs.begin(), runs.end());
  CAF_CHECK_EQUAL(runs, (std::vector<std::string>{"r1", "r2"}));
}

CAF_TEST(a session row is written and an unknown history keeps the stored one) {
  caf::anon_send(writer,
                 session_put{{"s1", 1.0, 2.0, R"({"model": "m"})", R"([{"role": "user"}])", true, 1, false}, nullptr});
  deliver();
  hb::storage::log_reader reader(db.path);
  CAF_CHECK_EQUAL(reader.read_history("s1"), R"([{"role": "user"}])");
  caf::anon_send(writer, session_put{{"s1", 1.0, 3.0, R"({"model": "n"})", "[]", false, 1, false}, nullptr});
  deliver();
  CAF_CHECK_EQUAL(reader.read_history("s1"), R"([{"role": "user"}])");
  auto sessions = hb::storage::load_sessions(log->database());
  CAF_REQUIRE_EQUAL(sessions.size(), 1u);
  CAF_CHECK_EQUAL(sessions[0].config, R"({"model": "n"})");
  CAF_CHECK_EQUAL(sessions[0].last_used_at, 3.0);
}

CAF_TEST(a flush is answered once what came before it is committed) {
  CAF_REQUIRE(open_run("r1"));
  delta("r1", "before the flush");
  auto answer = self->request(writer, caf::infinite, log_flush{});
  expect((run_delta), from(_).to(writer));
  expect((log_flush), from(_).to(writer));
  CAF_CHECK(self->mailbox().empty()); // the delta is not committed yet
  expect((commit_due), from(writer).to(writer));
  CAF_CHECK_EQUAL(committed_run("r1")->deltas.size(), 1u);
  CAF_REQUIRE(!self->mailbox().empty());
  answer.receive([](bool ok) { CAF_CHECK(ok); }, [](caf::error& err) { CAF_FAIL(to_string(err)); });
}

CAF_TEST(the final flush commits everything and empties the WAL) {
  CAF_REQUIRE(open_run("r1"));
  delta("r1", std::string(100000, 'x'));
  auto answer = ask<bool>(writer, final_flush{true});
  CAF_REQUIRE(answer);
  CAF_CHECK(*answer);
  CAF_CHECK_EQUAL(std::filesystem::file_size(db.path + "-wal"), 0u);
  CAF_CHECK_EQUAL(committed_run("r1")->deltas.size(), 1u);
}

CAF_TEST(a failed write is reported by health and held until a retry writes it) {
  CAF_REQUIRE(open_run("r1"));
  fill_disk();
  delta("r1", std::string(100000, 'a'));
  delta("r1", "then this");
  deliver();
  auto h = health();
  CAF_CHECK(h.degraded);
  CAF_CHECK(h.reason.find("full") != std::string::npos);
  CAF_CHECK_EQUAL(h.held_operations, 2);
  CAF_CHECK_GREATER_OR_EQUAL(h.held_bytes, 100000);
  CAF_CHECK(committed_run("r1")->deltas.empty());
  let_pass(std::chrono::seconds(1)); // a retry: still full
  CAF_CHECK(health().degraded);
  free_disk();
  let_pass(std::chrono::seconds(1));
  h = health();
  CAF_CHECK(!h.degraded);
  CAF_CHECK_EQUAL(h.held_operations, 0);
  auto deltas = committed_run("r1")->deltas;
  CAF_CHECK(deltas == (std::vector<std::string>{std::string(100000, 'a'), "then this"}));
}

CAF_TEST(an unwritable log refuses new runs and holds a run end until written) {
  CAF_REQUIRE(open_run("r1"));
  fill_disk();
  delta("r1", std::string(100000, 'a'));
  deliver();
  auto refused = ask<bool>(writer, run_opening{"r2", "s1", 100.0, ""});
  CAF_CHECK(!refused);
  auto ended = ask_later<bool>(writer, run_end{"r1", "complete", "", false, "", 200.0});
  deliver();
  CAF_CHECK(!answered(ended));
  free_disk();
  let_pass(std::chrono::seconds(1));
  CAF_CHECK(answered_true(ended));
  auto closed = committed_run("r1"); // (CAF_CHECK_EQUAL keeps references: no temporaries)
  CAF_REQUIRE(closed);
  CAF_CHECK_EQUAL(closed->status, "complete");
  CAF_CHECK(!committed_run("r2"));
}

CAF_TEST(the final flush of an unwritable log fails with what is held) {
  CAF_REQUIRE(open_run("r1"));
  fill_disk();
  delta("r1", std::string(100000, 'a'));
  auto answer = ask<bool>(writer, final_flush{true});
  CAF_REQUIRE(!answer);
  CAF_CHECK(to_string(answer.error()).find("never written") != std::string::npos);
  free_disk();
}

CAF_TEST(held output of a live run keeps its agent waiting until written) {
  CAF_REQUIRE(open_run("r1"));
  fill_disk();
  auto queue = open_run_output("r1");
  send_run_output(writer, "r1", queue.get(), false, std::string(2 * writer_backlog_limit, 'a'), 101.0);
  deliver();
  CAF_CHECK(health().degraded);
  CAF_CHECK(writer_backlogged());
  free_disk();
  let_pass(std::chrono::seconds(1));
  CAF_CHECK(!writer_backlogged());
  CAF_CHECK_EQUAL(committed_run("r1")->deltas.size(), 1u);
  forget_run_output("r1");
}

CAF_TEST(a retention step between an append and its commit writes the append once) {
  CAF_REQUIRE(open_run("r1"));
  fill_disk();
  delta("r1", "small"); // fits in the pages the log has
  caf::anon_send(writer, prune_due{});
  delta("r1", std::string(100000, 'b')); // needs new pages: fails
  deliver();
  CAF_REQUIRE(health().degraded);
  free_disk();
  let_pass(std::chrono::seconds(1));
  CAF_CHECK(committed_run("r1")->deltas == (std::vector<std::string>{"small", std::string(100000, 'b')}));
}

CAF_TEST(retention prunes finished runs and drops them from the finished cache) {
  CAF_REQUIRE(open_run("old", "s1"));
  delta("old", "gone soon");
  CAF_REQUIRE(end_run("old"));
  CAF_REQUIRE(open_run("latest", "s1")); // the latest run of a session is never pruned
  auto old = committed_run("old");
  finished->put(hb::storage::finished_run::from(*old));
  CAF_REQUIRE(finished->find("old"));
  auto pruning = quiet_retention();
  pruning.policy.max_age_s = 60; // "old" ended at 200 s after the epoch
  auto pruner = spawn_writer(pruning);
  deliver();
  auto run = committed_run("old");
  CAF_CHECK(run->pruned_at.has_value());
  CAF_CHECK(run->deltas.empty());
  CAF_CHECK(!finished->find("old"));
  CAF_CHECK(!committed_run("latest")->pruned_at);
}

CAF_TEST(runs retention prunes are told to the commit watcher) {
  auto pruning = quiet_retention();
  pruning.policy.max_age_s = 60;
  auto pruner = spawn_writer(pruning); // nothing to prune yet
  auto heard = watch(pruner);
  CAF_REQUIRE(open_run("old", "s1"));
  CAF_REQUIRE(end_run("old")); // ended 200 s after the epoch
  CAF_REQUIRE(open_run("latest", "s1"));
  CAF_REQUIRE(heard->empty());
  caf::anon_send(pruner, prune_due{});
  deliver();
  CAF_REQUIRE_EQUAL(heard->size(), 1u); // (the output hub forgets what it kept of the run)
  CAF_CHECK_EQUAL(heard->back().pruned, (std::vector<std::string>{"old"}));
  CAF_CHECK(heard->back().runs.empty());
}

CAF_TEST(health counts commits and committed rows) {
  auto before = health();
  CAF_REQUIRE(open_run("r1"));
  delta("r1", "x");
  deliver();
  auto after = health();
  CAF_CHECK_EQUAL(after.commits, before.commits + 2);
  CAF_CHECK_EQUAL(after.rows, before.rows + 2); // the run and the delta
  CAF_CHECK(!after.degraded);
  CAF_CHECK_GREATER_OR_EQUAL(after.max_commit_ms, after.last_commit_ms);
}

CAF_TEST_FIXTURE_SCOPE_END()

// What the actor tests share: CAF's deterministic test coordinator with all
// of the daemon's message types registered, helpers to ask an actor and to
// stand in for the actors around it, and a fresh event log per test.
//
// Every actor runs on the test's thread, one message at a time, only when a
// test delivers: nothing sleeps, and nothing happens between two lines of a
// test unless it says so. Timers fire only when a test lets time pass on the
// coordinator's clock.
//
// A file of tests defines CAF_SUITE before including this header. CAF 0.17's
// CAF_CHECK_EQUAL renders both sides even when they match, and crashed on a
// vector holding a 100 kB string: compare long texts with CAF_CHECK(a == b).
#pragma once

#include "actors/blocking_call.hpp"
#include "actors/broker.hpp"
#include "actors/log_actors.hpp"
#include "actors/log_messages.hpp"
#include "actors/question_messages.hpp"
#include "actors/responses.hpp"
#include "actors/run.hpp"
#include "actors/session_messages.hpp"
#include "actors/shared_run_windows.hpp"
#include "actors/studio_messages.hpp"
#include "storage/finished_runs.hpp"
#include "storage/log_reader.hpp"
#include "storage/log_writer.hpp"
#include "tests/unit/temp_dir.hpp"

#include <caf/io/all.hpp>
#include <caf/io/network/test_multiplexer.hpp>
#include <caf/test/dsl.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hb::test {

// The daemon's message types, registered as actors/daemon.cpp does.
struct actor_test_config : caf::actor_system_config {
  actor_test_config() {
    actors::add_studio_message_types(*this);
    actors::add_question_message_types(*this);
    actors::add_run_message_types(*this);
    actors::add_session_message_types(*this);
    actors::add_log_message_types(*this);
    actors::add_broker_message_types(*this);
    // The broker runs on CAF's test multiplexer: connections, bytes in and
    // bytes out are the test's to make and read (broker_fixture.hpp).
    load<caf::io::middleman>();
    // actors/blocking_call.hpp: on the coordinator's thread, deterministically.
    opt_group{custom_options_, "hb"}.add<bool>("scheduled-blocking-calls", "blocking calls scheduled");
    set(actors::scheduled_calls_option, true);
  }
};

class actor_fixture : public test_coordinator_fixture<actor_test_config> {
public:
  // The actors a test spawned are stopped here: the writer's retention
  // timer re-arms itself for good, so the base class's final run() (which
  // fires every timer) would never end while it lives.
  ~actor_fixture() override { stop_all(); }

  // Delivers every queued message, and those they cause, until none is
  // left; the broker's messages and the bytes clients sent included. Timers
  // stay pending.
  size_t deliver() {
    size_t n = 0;
    while (sched.try_run_once() || mpx.try_exec_runnable() || mpx.read_data())
      ++n;
    return n;
  }

  // Lets `span` pass on the coordinator's clock (the timers due by then
  // fire) and delivers what follows.
  void let_pass(caf::timespan span) {
    advance_time(span);
    deliver();
  }

  // Sends a request from an actor of its own (a stand-in for whoever asks);
  // the answer, once delivered, lands in the returned slot. It may never
  // come: a test can look for it without blocking.
  template <class T, class... Ts>
  std::shared_ptr<std::optional<caf::expected<T>>> ask_later(const caf::actor& to, Ts... xs) {
    auto slot = std::make_shared<std::optional<caf::expected<T>>>();
    // (The unused int: CAF 0.17 dereferences a null argument tuple for an
    // actor function without arguments, which UBSan reports.)
    sys.spawn(
      [=](caf::event_based_actor* client, int) {
        client->request(to, caf::infinite, xs...)
          .then([=](T& x) { *slot = caf::expected<T>{std::move(x)}; },
                [=](caf::error& err) { *slot = caf::expected<T>{std::move(err)}; });
      },
      0);
    return slot;
  }

  // The same, delivering until the answer is there; the test fails when
  // none comes.
  template <class T, class... Ts>
  caf::expected<T> ask(const caf::actor& to, Ts... xs) {
    auto slot = ask_later<T>(to, std::move(xs)...);
    deliver();
    CAF_REQUIRE(slot->has_value());
    return std::move(**slot);
  }

  // ask_later for an actor that answers with a typed reply: the slot holds
  // the reply as the client reads it (actors/responses.hpp's encode).
  template <class Reply, class... Ts>
  std::shared_ptr<std::optional<caf::expected<std::string>>> ask_line_later(const caf::actor& to, Ts... xs) {
    auto slot = std::make_shared<std::optional<caf::expected<std::string>>>();
    sys.spawn(
      [=](caf::event_based_actor* client, int) { // (the int: see ask_later)
        client->request(to, caf::infinite, xs...)
          .then([=](Reply& reply) { *slot = caf::expected<std::string>{actors::encode(reply)}; },
                [=](caf::error& err) { *slot = caf::expected<std::string>{std::move(err)}; });
      },
      0);
    return slot;
  }

  template <class Reply, class... Ts>
  caf::expected<std::string> ask_line(const caf::actor& to, Ts... xs) {
    auto slot = ask_line_later<Reply>(to, std::move(xs)...);
    deliver();
    CAF_REQUIRE(slot->has_value());
    return std::move(**slot);
  }

  // Keeps `a` until the test ends, then stops it.
  caf::actor keep(caf::actor a) {
    spawned_.push_back(a);
    return a;
  }

protected:
  void stop_all() {
    for (auto& a : std::exchange(spawned_, {}))
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    deliver();
  }

  caf::io::network::test_multiplexer& mpx =
    dynamic_cast<caf::io::network::test_multiplexer&>(sys.middleman().backend());

private:
  std::vector<caf::actor> spawned_;
};

// An event log of its own, the writer's connection to it (as the daemon
// opens it: the checkpointer, not the writer, moves the WAL into the file),
// and the finished-run cache the writer and readers share.
class log_fixture : public actor_fixture {
public:
  ~log_fixture() override { stop_all(); } // before the log's directory goes

  // No retention step but the first until a test asks for one.
  static actors::retention_settings quiet_retention() {
    actors::retention_settings r;
    r.interval = std::chrono::hours(24);
    return r;
  }

  caf::actor spawn_writer(const actors::retention_settings& retention = quiet_retention()) {
    auto writer = keep(actors::spawn_log_writer(sys, log, retention, finished, windows, actors::spawn_mode::scheduled));
    deliver(); // its first retention step
    return writer;
  }

  caf::actor spawn_reader() {
    return keep(actors::spawn_log_reader(sys, db.path, finished, actors::spawn_mode::scheduled));
  }

  // A stand-in for the broker: asks `writer` for commit notices and keeps
  // each one it gets.
  std::shared_ptr<std::vector<actors::log_committed>> watch(const caf::actor& writer) {
    auto heard = std::make_shared<std::vector<actors::log_committed>>();
    keep(sys.spawn(
      [=](caf::event_based_actor* self, int) -> caf::behavior { // (the int: see ask_later)
        self->send(writer, actors::log_watch{});
        return {[=](actors::log_committed& c) { heard->push_back(std::move(c)); }};
      },
      0));
    deliver();
    return heard;
  }

  // The run as a connection of its own sees it: committed rows only.
  std::optional<storage::run_snapshot> committed_run(const std::string& run_id) {
    return storage::log_reader(db.path).read_run(run_id, 0, 0);
  }

  // From now on every write that needs a new page of the database fails
  // with SQLITE_FULL, as on a full disk; free_disk() lifts it.
  void fill_disk() { log->database().exec("PRAGMA max_page_count = 1"); }
  void free_disk() { log->database().exec("PRAGMA max_page_count = 1073741823"); }

  temp_log db;
  std::shared_ptr<storage::log_writer> log =
    std::make_shared<storage::log_writer>(db.path, storage::writer_options{"NORMAL", false});
  std::shared_ptr<storage::finished_run_cache> finished = std::make_shared<storage::finished_run_cache>(1u << 20);
  // The run windows the writer keeps (none unless a test sets them before
  // spawn_writer: then the watcher hears of commits only while they follow).
  std::shared_ptr<actors::shared_run_windows> windows;
};

} // namespace hb::test

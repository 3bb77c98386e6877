// The run actor, report by report: the host's reports (armed, ended) become
// the session's run_armed, run_closing and run_finished in that order; the
// questions of a run that asked any are settled before its end goes to the
// log (one that asked none goes there at once); the run holds
// no agent once the turn began. The agent host, the session, the broker and
// the log writer are played by the test, so every step happens when it says.
#define CAF_SUITE run
#include "tests/actors/actor_fixture.hpp"

#include "actors/errors.hpp"
#include "actors/question_messages.hpp"
#include "actors/run.hpp"

#include <optional>

using namespace hb::actors;

namespace {

// A host that only records what the run asks of it; the test reports for it.
class scripted_host : public hb::bridge::agent_host {
public:
  bool reports_turns() const override { return true; }
  void prepare_turn() override { ++prepares; }
  hb::bridge::turn_outcome run_turn(const std::shared_ptr<hb::bridge::turn_sink>&, const std::string&) override {
    return {}; // start_turn is what a run calls
  }
  void start_turn(std::shared_ptr<hb::bridge::turn_sink> sink, std::string request, std::string steer,
                  hb::bridge::turn_reports r) override {
    sink_ = std::move(sink);
    requests.push_back(std::move(request));
    steers.push_back(std::move(steer));
    reports = std::move(r);
  }
  std::vector<hb::bridge::waiting_question> waiting_questions() const override { return waiting; }
  void start_continued_turn(std::shared_ptr<hb::bridge::turn_sink> sink, uint64_t logged_seq,
                            std::function<void(hb::bridge::turn_outcome)> ended) override {
    sink_ = std::move(sink);
    continued_after = logged_seq;
    reports.ended = std::move(ended);
  }
  void drop_turn() override { ++drops; }
  void interrupt(const std::string&) override {}
  bool steer(const std::string&) override { return true; }

  std::shared_ptr<hb::bridge::turn_sink> sink_;
  std::vector<std::string> requests, steers;
  hb::bridge::turn_reports reports;
  std::vector<hb::bridge::waiting_question> waiting;
  std::optional<uint64_t> continued_after;
  int prepares = 0, drops = 0;
};

// A host whose turn runs on the caller's thread (embedded, native): the
// run gives it one (on the test's thread here: hb.scheduled-blocking-calls).
class blocking_host : public hb::bridge::agent_host {
public:
  void prepare_turn() override { steps.push_back("prepare"); }
  hb::bridge::turn_outcome run_turn(const std::shared_ptr<hb::bridge::turn_sink>&, const std::string& request) override {
    steps.push_back("run " + request);
    hb::bridge::turn_outcome out;
    out.status = "complete";
    out.result = R"({"final_response": "ok"})";
    return out;
  }
  void interrupt(const std::string&) override {}
  bool steer(const std::string& text) override {
    steps.push_back("steer " + text);
    return true;
  }
  std::vector<std::string> steps;
};

// What the session, the broker and the writer heard, in one order.
struct heard {
  std::vector<std::string> steps; // "armed", "closing", "questions_end", "run_end", "finished"
  std::optional<run_closing> closing;
  std::optional<run_questions_end> questions_end;
  std::optional<run_end> end;
  std::optional<run_continuing> continuing;
  bool refuse_end = false;        // the writer answers run_end with an error
  bool refuse_continuing = false; // ... and run_continuing
  uint64_t logged_host_seq = 7;
  int asked = 0; // questions the broker heard of
};

class run_fixture : public hb::test::actor_fixture {
public:
  run_fixture() {
    auto h = log;
    session = keep(sys.spawn(
      [h](caf::event_based_actor*, int) -> caf::behavior { // (the int: see ask_later)
        return {
          [h](const run_armed&) { h->steps.push_back("armed"); },
          [h](run_closing& c) {
            h->steps.push_back("closing");
            h->closing = std::move(c);
          },
          [h](const run_finished&) { h->steps.push_back("finished"); },
        };
      },
      0));
    broker = keep(sys.spawn(
      [h](caf::event_based_actor*, int) -> caf::behavior {
        return {[h](const run_questions_end& q) {
                  h->steps.push_back("questions_end");
                  h->questions_end = q;
                  return true;
                },
                [h](const gateway_approval_asked&) { ++h->asked; }};
      },
      0));
    writer = keep(sys.spawn(
      [h](caf::event_based_actor*, int) -> caf::behavior {
        return {
          [h](run_end& e) -> caf::result<bool> {
            h->steps.push_back("run_end");
            h->end = std::move(e);
            if (h->refuse_end)
              return make_error(errc::failed, "disk full");
            return true;
          },
          [h](run_continuing& c) -> caf::result<hb::storage::continued_run> {
            h->continuing = std::move(c);
            if (h->refuse_continuing)
              return make_error(errc::not_found, "no such run");
            return hb::storage::continued_run{h->logged_host_seq, {}};
          },
          [](const run_output_queued&) {},
        };
      },
      0));
  }

  run_spec spec_for(const std::string& run_id, bool continuing = false) {
    run_spec spec;
    spec.run_id = run_id;
    spec.session_id = "s1";
    spec.request = R"({"message": "hi"})";
    spec.carried_steer = "look left";
    spec.agent = host;
    spec.session = session;
    spec.broker = broker;
    spec.writer = writer;
    spec.continuing = continuing;
    return spec;
  }

  // Starts a run and delivers what it does at once.
  caf::actor run(const std::string& run_id, bool continuing = false) {
    auto r = spawn_run(sys, spec_for(run_id, continuing));
    deliver();
    return r;
  }

  // The turn asks something (a gateway approval: answered elsewhere, so it
  // does not wait).
  void turn_asks() {
    host->sink_->gateway_notify(R"({"command": "rm -rf /tmp/x"})", 30.0);
    deliver();
    CAF_CHECK_EQUAL(log->asked, 1);
  }

  static hb::bridge::turn_outcome outcome(const std::string& status) {
    hb::bridge::turn_outcome out;
    out.status = status;
    out.result = R"({"final_response": "done"})";
    out.history = R"([{"role": "user", "content": "hi"}])";
    out.message_count = 1;
    out.last_seq = 12;
    return out;
  }

  std::shared_ptr<heard> log = std::make_shared<heard>();
  std::shared_ptr<scripted_host> host = std::make_shared<scripted_host>();
  caf::actor session, broker, writer;
};

using steps = std::vector<std::string>;

} // namespace

CAF_TEST_FIXTURE_SCOPE(run_tests, run_fixture)

CAF_TEST(a turn begins on its host with its request and the steer carried from idle) {
  run("r1");
  CAF_REQUIRE_EQUAL(host->requests.size(), 1u);
  CAF_CHECK_EQUAL(host->requests[0], R"({"message": "hi"})");
  CAF_CHECK_EQUAL(host->steers[0], "look left");
  CAF_CHECK_EQUAL(host->prepares, 0); // the host clears a stale interrupt itself
  CAF_CHECK(log->steps.empty());      // not armed until the host says so
}

CAF_TEST(the run holds no reference to its agent once the turn began) {
  run("r1");
  CAF_CHECK_EQUAL(host.use_count(), 1); // the test's own: nothing of the run's dies on the scheduler later
}

CAF_TEST(the reports of the host reach the session in order and the end is logged after the questions) {
  run("r1");
  host->reports.armed();
  deliver();
  CAF_CHECK_EQUAL(log->steps, steps({"armed"}));
  turn_asks();
  host->reports.ended(outcome("complete"));
  deliver();
  CAF_CHECK_EQUAL(log->steps, steps({"armed", "closing", "questions_end", "run_end", "finished"}));
  CAF_REQUIRE(log->closing && log->end && log->questions_end);
  CAF_CHECK(log->closing->has_history);
  CAF_CHECK_EQUAL(log->closing->history, R"([{"role": "user", "content": "hi"}])");
  CAF_CHECK_EQUAL(log->closing->message_count, 1);
  CAF_CHECK_EQUAL(log->questions_end->interrupted, false);
  CAF_CHECK_EQUAL(log->end->status, "complete");
  CAF_CHECK_EQUAL(log->end->result, R"({"final_response": "done"})");
  CAF_CHECK(!log->end->has_error);
}

CAF_TEST(the run ends once its end is logged) {
  auto r = run("r1");
  bool down = false;
  keep(sys.spawn(
    [&down, r](caf::event_based_actor* self, int) -> caf::behavior {
      self->monitor(r);
      self->set_down_handler([&down](caf::down_msg&) { down = true; });
      return {[](int) {}};
    },
    0));
  deliver();
  host->reports.armed();
  deliver();
  CAF_CHECK(!down);
  host->reports.ended(outcome("complete"));
  deliver();
  CAF_CHECK(down);
}

CAF_TEST(a turn that ends before it was armed still arms its session first) {
  run("r1");
  host->reports.ended(outcome("error"));
  deliver();
  CAF_CHECK_EQUAL(log->steps, steps({"armed", "closing", "run_end", "finished"}));
}

CAF_TEST(a turn that asked nothing goes to the log without settling questions) {
  run("r1");
  host->reports.armed();
  host->reports.ended(outcome("interrupted"));
  deliver();
  CAF_CHECK_EQUAL(log->steps, steps({"armed", "closing", "run_end", "finished"}));
  CAF_CHECK(!log->questions_end);
  CAF_REQUIRE(log->end);
  CAF_CHECK_EQUAL(log->end->status, "interrupted");
}

CAF_TEST(an interrupted turn settles its questions as interrupted) {
  run("r1");
  host->reports.armed();
  turn_asks();
  host->reports.ended(outcome("interrupted"));
  deliver();
  CAF_REQUIRE(log->questions_end);
  CAF_CHECK(log->questions_end->interrupted);
  CAF_CHECK_EQUAL(log->end->status, "interrupted");
}

CAF_TEST(an error and a turn without history reach the log and the session as such) {
  run("r1");
  auto out = outcome("error");
  out.error = "the agent worker died";
  out.history.reset();
  host->reports.ended(std::move(out));
  deliver();
  CAF_REQUIRE(log->closing && log->end);
  CAF_CHECK(!log->closing->has_history);
  CAF_CHECK(log->end->has_error);
  CAF_CHECK_EQUAL(log->end->error, "the agent worker died");
}

CAF_TEST(a second report of the end is not a second end) {
  run("r1");
  host->reports.armed();
  auto again = host->reports.ended;
  again(outcome("complete"));
  again(outcome("error"));
  deliver();
  CAF_CHECK_EQUAL(log->steps, steps({"armed", "closing", "run_end", "finished"}));
  CAF_CHECK_EQUAL(log->end->status, "complete");
}

CAF_TEST(a run whose end the log refuses still tells the session it finished) {
  log->refuse_end = true;
  run("r1");
  host->reports.armed();
  host->reports.ended(outcome("complete"));
  deliver();
  CAF_CHECK_EQUAL(log->steps, steps({"armed", "closing", "run_end", "finished"}));
}

CAF_TEST(a run continued after a restart goes on after what the log holds) {
  host->waiting = {{4, "approval", R"({"command": "ls"})", 30.0}};
  run("r1", true);
  CAF_REQUIRE(log->continuing);
  CAF_CHECK_EQUAL(log->continuing->run_id, "r1");
  CAF_REQUIRE_EQUAL(log->continuing->waiting.size(), 1u);
  CAF_CHECK_EQUAL(log->continuing->waiting[0].ask, 4u);
  CAF_CHECK(host->requests.empty()); // not started again
  CAF_REQUIRE(host->continued_after);
  CAF_CHECK_EQUAL(*host->continued_after, 7u);
  CAF_CHECK_EQUAL(log->steps, steps({"armed"}));
  CAF_CHECK_EQUAL(host.use_count(), 1);
  host->reports.ended(outcome("complete"));
  deliver();
  CAF_CHECK_EQUAL(log->steps, steps({"armed", "closing", "questions_end", "run_end", "finished"}));
}

CAF_TEST(a run the log cannot continue drops the turn of the worker and ends with the reason) {
  log->refuse_continuing = true;
  run("r1", true);
  CAF_CHECK_EQUAL(host->drops, 1);
  CAF_CHECK(!host->continued_after);
  CAF_CHECK_EQUAL(log->steps, steps({"armed", "closing", "questions_end", "run_end", "finished"}));
  CAF_REQUIRE(log->end);
  CAF_CHECK(log->end->has_error);
  CAF_CHECK(log->end->error.find("cannot continue the run after a restart") != std::string::npos);
}

CAF_TEST(a turn that blocks runs on a thread of its own which lets go of the agent) {
  auto blocking = std::make_shared<blocking_host>();
  auto spec = spec_for("r1");
  spec.agent = blocking;
  spawn_run(sys, std::move(spec));
  deliver();
  CAF_CHECK_EQUAL(blocking->steps, steps({"prepare", "steer look left", R"(run {"message": "hi"})"}));
  CAF_CHECK_EQUAL(log->steps, steps({"armed", "closing", "run_end", "finished"}));
  CAF_REQUIRE(log->end);
  CAF_CHECK_EQUAL(log->end->result, R"({"final_response": "ok"})");
  CAF_CHECK_EQUAL(blocking.use_count(), 1);
}

CAF_TEST_FIXTURE_SCOPE_END()

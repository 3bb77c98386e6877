#include "actors/run_replay.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"
#include "storage/log_reader.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace hb::actors {

namespace {

// Sleeps until `due`, in short steps so an interrupt is noticed.
bool wait_until(std::chrono::steady_clock::time_point due, const std::atomic<bool>& stop) {
  while (!stop) {
    auto now = std::chrono::steady_clock::now();
    if (now >= due)
      return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(due - now, std::chrono::milliseconds(20)));
  }
  return false;
}

class recording final : public bridge::agent_host {
public:
  explicit recording(replay_spec replay) : replay_(std::move(replay)) {}

  void prepare_turn() override {}

  // On start_turn's thread: it sleeps between the recorded events.
  bridge::turn_outcome run_turn(const std::shared_ptr<bridge::turn_sink>& sink, const std::string&) override {
    bridge::turn_outcome out;
    try {
      storage::log_reader log(replay_.db_path);
      auto recorded = log.read_run(replay_.run_id, 0, 0);
      if (!recorded || recorded->pruned_at)
        throw std::runtime_error("nothing to replay: run " + replay_.run_id +
                                 (recorded ? " was pruned" : " is not in the event log"));
      // A live run has no end to copy: its replay would take over its
      // `running` status and never finish.
      if (recorded->status == "running")
        throw std::runtime_error("cannot replay run " + replay_.run_id +
                                 ": it is still running; only finished runs can be replayed");
      auto events =
        log.read_events_timed(replay_.run_id).value_or(std::vector<storage::log_reader::timed_event>{});
      auto start = std::chrono::steady_clock::now();
      bool stopped = false;
      for (const auto& ev : events) {
        auto offset = std::chrono::duration<double>((ev.at - recorded->started_at) / replay_.speed);
        if (!wait_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(offset),
                        *replay_.stop)) {
          stopped = true;
          break;
        }
        replay_one(*sink, ev.body);
        if (sink->backlogged()) // a fast replay of a big run waits for the log like an agent
          sink->wait_for_room();
      }
      out.status = stopped ? "interrupted" : recorded->status;
      out.result = recorded->result.value_or("");
      out.error = recorded->error;
    } catch (const std::exception& e) {
      out.status = "error";
      out.error = e.what();
    }
    return out;
  }

  // The session stops a replay through replay_spec::stop.
  void interrupt(const std::string&) override { *replay_.stop = true; }
  bool steer(const std::string&) override { return false; }

private:
  static void replay_one(bridge::turn_sink& sink, const std::string& body_text) {
    auto body = protocol::json::parse(body_text, nullptr, false);
    std::string name = body.is_object() ? body.value("event", "") : "";
    if (name == "stream.delta") {
      sink.delta(body.value("delta", ""));
    } else if (name == "approval.requested") {
      protocol::json ask = body;
      ask.erase("event");
      ask.erase("approval_id");
      double timeout_s = ask.value("timeout_ms", 60'000) / 1000.0;
      sink.ask_approval(protocol::dumps(ask), timeout_s); // the broker logs its own resolution
    } else if (name != "approval.resolved") {
      sink.event(body_text);
    }
  }

  replay_spec replay_;
};

} // namespace

std::shared_ptr<bridge::agent_host> recorded_run(const replay_spec& replay) {
  return std::make_shared<recording>(replay);
}

} // namespace hb::actors

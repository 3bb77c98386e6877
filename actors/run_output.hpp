// A run's output on its way from the agent's threads to the log writer.
//
// Each delta or event used to be a message of its own: a heap-allocated
// message, a copy of the run id, and often a wake-up of the writer's thread,
// all paid by the agent's thread while it holds the GIL. Now a run's sink
// appends to the run's queue and tells the writer only when the queue was
// empty; the writer takes everything queued at once. One message per batch,
// the same rows in the same order.
//
// Also here: how much output is on its way to the writer, across all runs.
// An agent that streams faster than the log takes it (a 100 MB flood arrives
// in a tenth of a second) would otherwise leave all of it in memory; its sink
// waits instead while the backlog is over writer_backlog_limit, as a slow
// network would make it wait.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace hb::actors {

class run_output {
public:
  struct item {
    bool is_event; // else a delta
    std::string text;
    double at;
    uint64_t seq = 0; // its host's number for it (a worker frame's), 0 for none
  };
  enum class pushed { first, more, refused };

  // `first`: the queue was empty, so the writer must be told; `refused`:
  // the run is closed in the log, the item is dropped (a thread the turn
  // left behind).
  pushed push(bool is_event, std::string text, double at, uint64_t seq = 0);
  // Deltas numbered first_seq on, under one lock; `texts` is left empty.
  pushed push_deltas(std::vector<std::string>& texts, double at, uint64_t first_seq);
  std::vector<item> take();
  // Takes what is left and refuses everything after.
  std::vector<item> close();

  // Who is told, once a commit holds them, the highest `seq` of this run's
  // items (and, at its end, its host's last number): a worker, which then
  // lets go of those frames. Called on the writer's thread.
  void on_committed(std::function<void(uint64_t)> told);
  void committed(uint64_t seq);

private:
  std::mutex mu_;
  std::vector<item> items_;
  bool closed_ = false;
  std::function<void(uint64_t)> told_;
};

// The queue of a run: made by its sink, found by the writer by run id, and
// forgotten once the writer has closed the run.
std::shared_ptr<run_output> open_run_output(const std::string& run_id);
std::shared_ptr<run_output> find_run_output(const std::string& run_id);
void forget_run_output(const std::string& run_id);

constexpr int64_t writer_backlog_limit = 8 << 20;
void writer_backlog_add(int64_t bytes); // before queueing; negative once written or dropped
bool writer_backlogged();
// Blocks (in short sleeps) until the backlog is down to half the limit or
// `stop` says to give up; not at all once the writer has taken nothing for
// 30 s, until it takes something again, unless the writer says it is
// degraded: then it holds the output on purpose until the log takes it, and
// agents wait as long as that lasts (an output without a place to go would
// otherwise be lost).
void wait_for_writer(const std::function<bool()>& stop);
void set_writer_degraded(bool degraded);

} // namespace hb::actors

// The log writer actor's state and the steps its two files share
// (log_writer_actor.cpp: transactions, commits, failures, retention;
// log_writer_output.cpp: a run's output as operations). Private to them.
#pragma once

#include "actors/commit_notices.hpp"
#include "actors/log_actors.hpp"
#include "actors/log_batches.hpp"
#include "actors/log_messages.hpp"
#include "storage/retention.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/result.hpp>
#include <caf/stateful_actor.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hb::storage {
class finished_run_cache;
}

namespace hb::actors {

class run_output;
class shared_run_windows;

struct writer_confirmation {
  caf::response_promise promise;
  bool survives_failure; // a run's end, flushes: kept until written; a run's opening: fails at once
};

struct writer_state {
  std::unique_ptr<log_batches> batches;
  retention_settings retention;
  storage::pruner pruner;
  std::shared_ptr<storage::finished_run_cache> finished;
  // Callers that may only proceed once their rows are durable.
  std::vector<writer_confirmation> after_commit;
  bool commit_queued = false;
  // Who hears about each commit (the broker, for long-polls and
  // subscriptions), the windows kept for it, and what the pending batch
  // touched.
  caf::actor listener;
  std::shared_ptr<shared_run_windows> windows;
  commit_notices notices;
  // Numbered output (a worker's frames) in the pending batch: per run, its
  // queue and the highest number applied, told to the queue once committed.
  std::unordered_map<std::string, std::pair<std::shared_ptr<run_output>, uint64_t>> numbered;
  static inline const char* name = "log_writer";
};

using writer_actor = caf::stateful_actor<writer_state>;

namespace log_writing {

// Applies one operation to the open transaction; the commit follows once
// the mailbox ahead of it is applied, or at once for a full batch.
log_batches::applied apply(writer_actor* self, log_batches::operation op, size_t bytes,
                           const std::string* run = nullptr);
// The same, for a caller that waits until the operation is durable.
// `told_run`: the run the notices tell of this operation (its end).
caf::result<bool> apply_then_confirm(writer_actor* self, log_batches::operation op, bool survives_failure,
                                     size_t bytes = 0, const std::string* told_run = nullptr);
// An operation the log did not take for a run: its followers read the log.
void untold_unless_written(writer_actor* self, const std::string& run_id, log_batches::applied outcome);

// log_writer_output.cpp: each message that carries a run's output.
caf::result<bool> open_run(writer_actor* self, run_opening& opening);
caf::result<storage::continued_run> continue_run(writer_actor* self, const run_continuing& run);
void write_delta(writer_actor* self, run_delta& delta);
void write_event(writer_actor* self, run_event& event);
void write_queued(writer_actor* self, const run_output_queued& queued);
caf::result<bool> end_run(writer_actor* self, run_end& end);

} // namespace log_writing

} // namespace hb::actors

// A run's output on its way into the log writer's transaction: its opening,
// its deltas and events (alone, or what its queue held: run_output.hpp),
// its taking up again after a restart and its end, each applied as the
// operations log_operations.hpp makes and told to the commit's notice.
#include "actors/errors.hpp"
#include "actors/log_operations.hpp"
#include "actors/log_writer_state.hpp"
#include "actors/run_output.hpp"
#include "actors/vocabulary.hpp"
#include "storage/log_writer.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace hb::actors::log_writing {

namespace {

// A queue's deltas go to the log in operations of at most this many: few
// allocations, and still small steps for a retry after a failed write.
constexpr size_t max_deltas_per_operation = 1024;

// A delta or an event of a run. Texts are taken out of the message (mutable
// references: the message is this actor's alone, so nothing is copied) and
// moved into the operation (see log_operations.hpp).
log_batches::applied apply_text(writer_actor* self, const std::string& run_id, bool is_event, std::string text,
                                double at, uint64_t host_seq = 0) {
  note_output_moved(text.size());
  size_t bytes = text.size();
  self->state.notices.tell(run_id, is_event ? 'e' : 'd', text);
  auto op = is_event ? log_operations::append_event(run_id, std::move(text), at, host_seq)
                     : log_operations::append_delta(run_id, std::move(text), at);
  auto outcome = apply(self, std::move(op), bytes, &run_id);
  untold_unless_written(self, run_id, outcome);
  return outcome;
}

// Deltas that followed each other in a run's queue, as one operation.
void apply_deltas(writer_actor* self, const std::string& run_id, std::vector<log_operations::timed_text>& deltas,
                  int64_t bytes) {
  if (deltas.empty())
    return;
  note_output_moved(static_cast<size_t>(bytes));
  for (const auto& d : deltas)
    self->state.notices.tell(run_id, 'd', d.text);
  auto outcome = apply(self, log_operations::append_deltas(run_id, std::exchange(deltas, {})),
                       static_cast<size_t>(bytes), &run_id);
  untold_unless_written(self, run_id, outcome);
  self->state.batches->count_output(outcome, bytes);
}

void write_items(writer_actor* self, const std::string& run_id, const std::shared_ptr<run_output>& queue,
                 std::vector<run_output::item> items) {
  if (items.empty())
    return;
  self->state.notices.touch(run_id);
  uint64_t last_seq = 0;
  std::vector<log_operations::timed_text> deltas;
  deltas.reserve(std::min(items.size(), max_deltas_per_operation));
  int64_t delta_bytes = 0;
  for (auto& item : items) {
    auto size = static_cast<int64_t>(item.text.size());
    last_seq = std::max(last_seq, item.seq);
    if (!item.is_event) {
      deltas.push_back({std::move(item.text), item.at, item.seq});
      delta_bytes += size;
      if (deltas.size() < max_deltas_per_operation)
        continue;
    }
    apply_deltas(self, run_id, deltas, std::exchange(delta_bytes, 0)); // in their place, before the event
    if (item.is_event)
      self->state.batches->count_output(apply_text(self, run_id, true, std::move(item.text), item.at, item.seq),
                                        size);
  }
  apply_deltas(self, run_id, deltas, delta_bytes);
  if (last_seq > 0) {
    // Applied, held for a retry or refused alike: a commit (or the retry's)
    // settles them, and a refused item is one the log will never hold, so
    // its host has nothing to hand over again either. (Each row carries its
    // item's seq, in the same transaction: a daemon that re-attaches to the
    // worker after a crash asks for what comes after the highest.)
    auto& entry = self->state.numbered[run_id];
    entry.first = queue;
    entry.second = std::max(entry.second, last_seq);
  }
}

} // namespace

caf::result<bool> open_run(writer_actor* self, run_opening& opening) {
  self->state.notices.opened(opening.run_id, opening.session_id);
  self->state.notices.touch(opening.run_id);
  return apply_then_confirm(self,
                            log_operations::open_run(std::move(opening.run_id), std::move(opening.session_id),
                                                     opening.started_at, std::move(opening.user_message)),
                            false);
}

void write_delta(writer_actor* self, run_delta& delta) {
  self->state.notices.touch(delta.run_id);
  apply_text(self, delta.run_id, false, std::move(delta.text), delta.at);
}

void write_event(writer_actor* self, run_event& event) {
  self->state.notices.touch(event.run_id);
  apply_text(self, event.run_id, true, std::move(event.body), event.at);
}

void write_queued(writer_actor* self, const run_output_queued& queued) {
  if (auto queue = find_run_output(queued.run_id))
    write_items(self, queued.run_id, queue, queue->take());
}

caf::result<storage::continued_run> continue_run(writer_actor* self, const run_continuing& run) {
  std::optional<storage::continued_run> continued;
  try {
    continued = self->state.batches->log().continue_run(run.run_id, now_seconds(), run.waiting);
  } catch (const std::exception& e) {
    return make_error(errc::failed, std::string("event log: ") + e.what());
  }
  if (!continued)
    return make_error(errc::not_found, "run " + run.run_id + " is not running in the event log");
  self->state.notices.opened(run.run_id, run.session_id);
  self->state.notices.untold(run.run_id); // what taking it up wrote (settled questions)
  apply(self, log_operations::nothing(), 0); // what taking it up wrote (settled questions) is committed
  return std::move(*continued);
}

caf::result<bool> end_run(writer_actor* self, run_end& end) {
  auto& st = self->state;
  const std::string& run_id = end.run_id;
  if (auto queue = find_run_output(run_id)) {
    write_items(self, run_id, queue, queue->close()); // whatever its last message did not take
    forget_run_output(run_id);
  }
  size_t bytes = end.result.size() + end.error.size();
  std::optional<std::string> result, error;
  if (!end.result.empty())
    result = std::move(end.result);
  if (end.has_error)
    error = std::move(end.error);
  std::string status = end.status;
  if (auto cut = st.batches->take_cut(run_id)) {
    status = "error"; // its output is not whole: never `complete`
    error = std::move(cut);
  }
  st.notices.ended(run_id, st.batches->log().counts(run_id), status, result, error);
  return apply_then_confirm(
    self, log_operations::close_run(run_id, std::move(status), std::move(result), std::move(error), end.ended_at),
    true, bytes, &run_id);
}

} // namespace hb::actors::log_writing

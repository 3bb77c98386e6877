// A live run's output on its way to the log writer (run_output.hpp): queued,
// and the writer told only when the queue was empty.
#include "actors/log_actors.hpp"
#include "actors/log_messages.hpp"
#include "actors/run_output.hpp"

#include <caf/actor.hpp>
#include <caf/send.hpp>

namespace hb::actors {

void send_run_output(const caf::actor& writer, const std::string& run_id, run_output* queue, bool is_event,
                     std::string text, double at, uint64_t seq) {
  std::shared_ptr<run_output> found;
  if (!queue) {
    found = find_run_output(run_id);
    queue = found.get();
  }
  if (!queue) {
    if (is_event)
      caf::anon_send(writer, run_event{run_id, std::move(text), at});
    else
      caf::anon_send(writer, run_delta{run_id, std::move(text), at});
    return;
  }
  auto size = static_cast<int64_t>(text.size());
  switch (queue->push(is_event, std::move(text), at, seq)) {
    case run_output::pushed::first:
      writer_backlog_add(size);
      caf::anon_send(writer, run_output_queued{run_id});
      break;
    case run_output::pushed::more:
      writer_backlog_add(size);
      break;
    case run_output::pushed::refused:
      break; // the run is closed: dropped, as the log would refuse it
  }
}

void send_run_deltas(const caf::actor& writer, const std::string& run_id, run_output& queue,
                     std::vector<std::string> texts, double at, uint64_t first_seq) {
  int64_t size = 0;
  for (const auto& text : texts)
    size += static_cast<int64_t>(text.size());
  auto pushed = queue.push_deltas(texts, at, first_seq);
  if (pushed == run_output::pushed::refused)
    return; // the run is closed: dropped, as the log would refuse them
  writer_backlog_add(size);
  if (pushed == run_output::pushed::first)
    caf::anon_send(writer, run_output_queued{run_id});
}

} // namespace hb::actors

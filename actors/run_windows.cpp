#include "actors/run_windows.hpp"

#include "actors/responses.hpp"
#include "storage/run_events.hpp"

#include <algorithm>
#include <string_view>

namespace hb::actors {

void run_windows::on_committed(log_committed& touched) {
  for (const auto& run_id : touched.pruned)
    forget(run_id);
  std::unordered_map<std::string_view, run_tail*> tails;
  for (auto& tail : touched.tails)
    tails.emplace(tail.run_id, &tail);
  std::unordered_map<std::string_view, run_ending*> endings;
  for (auto& ending : touched.endings)
    endings.emplace(ending.run_id, &ending);
  for (size_t i = 0; i < touched.runs.size() && i < touched.sessions.size(); ++i) {
    auto tail = tails.find(touched.runs[i]);
    auto ending = endings.find(touched.runs[i]);
    if (tail != tails.end())
      add(*tail->second, touched.sessions[i]);
    if (ending != endings.end())
      end(*ending->second, touched.sessions[i]);
    else if (tail == tails.end())
      forget(touched.runs[i]);
  }
}

// The run's window, whole up to its end, is kept done; one that missed
// part of the run is not (the log answers).
void run_windows::end(run_ending& ending, const std::string& session_id) {
  auto it = windows_.find(ending.run_id);
  if (it == windows_.end()) {
    if (ending.delta_count != 0 || ending.event_count != 0)
      return; // output no notice told: only the log has it
    it = windows_.try_emplace(ending.run_id).first;
    it->second.session_id = session_id;
  }
  window& w = it->second;
  if (w.end || w.delta_count != ending.delta_count || w.event_count != ending.event_count)
    return forget(ending.run_id);
  w.end = ended{std::move(ending.status),
                ending.has_result ? std::optional<std::string>(std::move(ending.result)) : std::nullopt,
                ending.has_error ? std::optional<std::string>(std::move(ending.error)) : std::nullopt};
  bytes_ += w.end->bytes();
  ended_.push_back(ending.run_id);
  if (ended_.size() > limits_.ended_runs)
    forget(std::string(ended_.front())); // (a copy: forget erases it from ended_)
  make_room();
}

// Over the total bound, ended runs leave first, the oldest first: a live
// run's followers gain more from a window than the poll of an ended one.
void run_windows::make_room() {
  while (bytes_ > limits_.total_bytes && !ended_.empty())
    forget(std::string(ended_.front()));
}

void run_windows::add(run_tail& tail, const std::string& session_id) {
  if (tail.sizes.size() != tail.kinds.size())
    return forget(tail.run_id);
  auto it = windows_.find(tail.run_id);
  if (it != windows_.end() &&
      (tail.delta_from() != it->second.delta_count || tail.event_from() != it->second.event_count))
    forget(tail.run_id); // a commit it did not see: start again from this one
  auto [at, fresh] = windows_.try_emplace(tail.run_id);
  window& w = at->second;
  if (fresh) {
    w.session_id = session_id;
    w.delta_base = w.delta_count = tail.delta_from();
    w.event_base = w.event_count = tail.event_from();
  }
  bytes_ += tail.text.size();
  if (w.text.empty())
    w.text = std::move(tail.text); // a new window, or one trimmed empty: the tail's buffer as it is
  else
    w.text += tail.text;
  for (size_t i = 0; i < tail.sizes.size(); ++i) {
    bool delta = tail.kinds[i] == 'd';
    w.items.push_back({tail.sizes[i], delta});
    w.delta_count += delta;
    ++w.event_count;
  }
  trim(w);
  make_room();
  if (bytes_ > limits_.total_bytes)
    forget(tail.run_id);
}

// Keeps the window's newest text within its bound; its start moves on.
void run_windows::trim(window& w) {
  size_t dropped = 0;
  while (w.bytes() - dropped > limits_.run_bytes && !w.items.empty()) {
    auto& oldest = w.items.front();
    dropped += oldest.size;
    w.delta_base += oldest.delta;
    ++w.event_base;
    w.items.pop_front();
  }
  w.start += dropped;
  bytes_ -= dropped;
  // The dropped text goes once it outweighs the kept: each byte is moved
  // about once.
  if (w.start > w.text.size() - w.start) {
    w.text.erase(0, w.start);
    w.start = 0;
  }
}

void run_windows::forget(const std::string& run_id) {
  auto it = windows_.find(run_id);
  if (it == windows_.end())
    return;
  bytes_ -= it->second.bytes();
  if (it->second.end) {
    bytes_ -= it->second.end->bytes();
    ended_.erase(std::find(ended_.begin(), ended_.end(), run_id));
  }
  windows_.erase(it);
}

// A client holds a cursor past a window's end from a read of a commit the
// windows do not hold yet, or of none (its mistake, or a status poll): past
// where the commit in flight lands the run, no read can have given it.
static bool past_any_read(const output_query& q, int64_t delta_end, int64_t event_end, const run_landing* landing) {
  if (!landing)
    return true;
  return landing->known && (q.cursor <= delta_end || q.cursor > landing->delta_count) &&
         (q.event_cursor <= event_end || q.event_cursor > landing->event_count);
}

std::optional<output_reply> run_windows::answer(const output_query& q, bool log_held,
                                                const run_landing* landing) const {
  auto it = windows_.find(q.run_id);
  if (it == windows_.end())
    return std::nullopt;
  const window& w = it->second;
  int64_t from = q.include_output ? 0 : q.cursor; // the whole output, or from the cursor on
  bool past_end = q.cursor > w.delta_count || q.event_cursor > w.event_count;
  if (q.cursor < w.delta_base || q.event_cursor < w.event_base || from < w.delta_base ||
      (past_end && !(log_held && past_any_read(q, w.delta_count, w.event_count, landing))))
    return std::nullopt;
  // A bounded read that could stop early is the log's to answer: it says
  // where. What it would take at most: each delta's text, and again,
  // escaped (at most 6 bytes a byte), in its stream.delta event.
  if (q.max_bytes > 0 && w.bytes() * 6 + w.items.size() * 64 >= static_cast<size_t>(q.max_bytes))
    return std::nullopt;
  storage::run_snapshot run;
  run.run_id = q.run_id;
  run.session_id = w.session_id;
  if (w.end) {
    run.status = w.end->status;
    run.result = w.end->result;
    run.error = w.end->error;
  } else {
    run.status = "running";
  }
  run.delta_from = std::min(from, w.delta_count); // (as a read clamps them)
  run.event_from = std::min(q.event_cursor, w.event_count);
  run.delta_count = w.delta_count;
  run.event_count = w.event_count;
  // The first item anything is wanted from, found from the end: a poll
  // wants the last few items of a window of thousands, or none.
  size_t first = w.items.size(), offset = w.text.size();
  int64_t delta = w.delta_count, event = w.event_count;
  while (first > 0 && (delta > from || event > q.event_cursor)) {
    --first;
    offset -= w.items[first].size;
    delta -= w.items[first].delta ? 1 : 0;
    --event;
  }
  for (size_t i = first; i < w.items.size(); ++i) {
    const auto& item = w.items[i];
    std::string_view text(w.text.data() + offset, item.size);
    offset += item.size;
    if (item.delta && delta++ >= from)
      run.deltas.emplace_back(text);
    if (event++ >= q.event_cursor) {
      if (item.delta)
        storage::stream_delta_body(run.events.emplace_back(), text);
      else
        run.events.emplace_back(text);
    }
  }
  bool done = w.end.has_value();
  bool news = done || w.delta_count > q.cursor || w.event_count > q.event_cursor;
  return output_reply{get_output_line(run, q.cursor, q.include_output), news, w.delta_count, w.event_count,
                      done, false};
}

} // namespace hb::actors

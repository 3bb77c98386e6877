#include "actors/run_windows.hpp"

#include "actors/responses.hpp"
#include "storage/run_events.hpp"

#include <string_view>

namespace hb::actors {

void run_windows::on_committed(log_committed& touched) {
  std::unordered_map<std::string_view, run_tail*> tails;
  for (auto& tail : touched.tails)
    tails.emplace(tail.run_id, &tail);
  for (size_t i = 0; i < touched.runs.size() && i < touched.sessions.size(); ++i) {
    auto tail = tails.find(touched.runs[i]);
    if (tail == tails.end())
      forget(touched.runs[i]);
    else
      add(*tail->second, touched.sessions[i]);
  }
}

void run_windows::add(run_tail& tail, const std::string& session_id) {
  if (tail.texts.size() != tail.kinds.size())
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
  for (size_t i = 0; i < tail.texts.size(); ++i) {
    bool delta = tail.kinds[i] == 'd';
    size_t size = tail.texts[i].size();
    w.items.push_back({std::move(tail.texts[i]), delta});
    w.bytes += size;
    bytes_ += size;
    w.delta_count += delta;
    ++w.event_count;
  }
  trim(w);
  if (bytes_ > limits_.total_bytes)
    forget(tail.run_id);
}

// Keeps the window's newest text within its bound; its start moves on.
void run_windows::trim(window& w) {
  while (w.bytes > limits_.run_bytes && !w.items.empty()) {
    auto& oldest = w.items.front();
    w.bytes -= oldest.text.size();
    bytes_ -= oldest.text.size();
    w.delta_base += oldest.delta;
    ++w.event_base;
    w.items.pop_front();
  }
}

void run_windows::forget(const std::string& run_id) {
  auto it = windows_.find(run_id);
  if (it == windows_.end())
    return;
  bytes_ -= it->second.bytes;
  windows_.erase(it);
}

std::optional<output_reply> run_windows::answer(const output_query& q) const {
  auto it = windows_.find(q.run_id);
  if (it == windows_.end())
    return std::nullopt;
  const window& w = it->second;
  int64_t from = q.include_output ? 0 : q.cursor; // the whole output, or from the cursor on
  if (q.cursor < w.delta_base || q.cursor > w.delta_count || q.event_cursor < w.event_base ||
      q.event_cursor > w.event_count || from < w.delta_base)
    return std::nullopt;
  if (q.max_bytes > 0 && w.bytes > static_cast<size_t>(q.max_bytes))
    return std::nullopt; // a bounded read would stop early: the log says where
  storage::run_snapshot run;
  run.run_id = q.run_id;
  run.session_id = w.session_id;
  run.status = "running";
  run.delta_from = from;
  run.event_from = q.event_cursor;
  run.delta_count = w.delta_count;
  run.event_count = w.event_count;
  int64_t delta = w.delta_base, event = w.event_base;
  for (const auto& item : w.items) {
    if (item.delta && delta++ >= from)
      run.deltas.push_back(item.text);
    if (event++ >= q.event_cursor) {
      if (item.delta)
        storage::stream_delta_body(run.events.emplace_back(), item.text);
      else
        run.events.push_back(item.text);
    }
  }
  bool news = w.delta_count > q.cursor || w.event_count > q.event_cursor;
  return output_reply{get_output_line(run, q.cursor, q.include_output), news, w.delta_count, w.event_count,
                      false, false};
}

} // namespace hb::actors

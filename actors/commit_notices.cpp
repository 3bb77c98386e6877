#include "actors/commit_notices.hpp"

#include <utility>

namespace hb::actors {

commit_notices::touched_run* commit_notices::entry(const std::string& run_id) {
  if (auto found = touched_.find(run_id); found != touched_.end())
    return &found->second;
  auto it = session_of_run_.find(run_id);
  if (it == session_of_run_.end())
    return nullptr;
  auto& added = touched_[run_id];
  added.session = it->second;
  return &added;
}

void commit_notices::ended(const std::string& run_id, std::optional<storage::log_writer::run_counts> counts,
                           const std::string& status, const std::optional<std::string>& result,
                           const std::optional<std::string>& error) {
  auto* touched = entry(run_id);
  session_of_run_.erase(run_id); // its entry in touched_ carries the session
  if (!touched)
    return;
  size_t size = (result ? result->size() : 0) + (error ? error->size() : 0);
  if (!touched->whole || !counts || size > max_tail_bytes)
    return untold(run_id);
  run_ending& out = touched->ending.emplace();
  out.run_id = run_id;
  out.delta_count = counts->deltas;
  out.event_count = counts->events;
  out.status = status;
  if ((out.has_result = result.has_value()))
    out.result = *result;
  if ((out.has_error = error.has_value()))
    out.error = *error;
}

void commit_notices::tell(const std::string& run_id, char kind, std::string_view text) {
  auto* touched = entry(run_id);
  // After its end the log drops what still comes for the run (a question
  // settled late): so does the notice.
  if (!touched || !touched->whole || touched->ending)
    return;
  touched->tail_bytes += text.size();
  if (touched->tail_bytes > max_tail_bytes)
    return untold(run_id);
  touched->tail.add(kind, text);
}

void commit_notices::untold(const std::string& run_id) {
  if (auto* touched = entry(run_id)) {
    touched->whole = false;
    touched->tail = run_tail{};
    touched->ending.reset();
  }
}

void commit_notices::untold_all() {
  for (auto& [_, touched] : touched_) {
    touched.whole = false;
    touched.tail = run_tail{};
    touched.ending.reset();
  }
}

run_landings commit_notices::landings(const counts_of_run& counts) const {
  run_landings out;
  out.reserve(touched_.size());
  for (const auto& [run, touched] : touched_) {
    run_landing landing;
    if (touched.ending) {
      landing = {true, touched.ending->delta_count, touched.ending->event_count};
    } else if (auto now = counts(run)) {
      landing = {true, now->deltas, now->events};
    }
    out.emplace_back(run, landing);
  }
  return out;
}

std::optional<log_committed>
commit_notices::take(const counts_of_run& counts) {
  if (touched_.empty())
    return std::nullopt;
  log_committed notice;
  notice.runs.reserve(touched_.size());
  notice.sessions.reserve(touched_.size());
  for (auto& [run, touched] : touched_) {
    notice.runs.push_back(run);
    notice.sessions.push_back(std::move(touched.session));
    if (!touched.whole)
      continue;
    std::optional<storage::log_writer::run_counts> now;
    if (touched.ending)
      now = storage::log_writer::run_counts{touched.ending->delta_count, touched.ending->event_count};
    else
      now = counts(run);
    if (!now)
      continue;
    touched.tail.run_id = run;
    touched.tail.delta_count = now->deltas;
    touched.tail.event_count = now->events;
    if (touched.tail.items() > 0 && touched.tail.delta_from() >= 0 && touched.tail.event_from() >= 0)
      notice.tails.push_back(std::move(touched.tail));
    if (touched.ending)
      notice.endings.push_back(std::move(*touched.ending));
  }
  touched_.clear();
  return notice;
}

} // namespace hb::actors

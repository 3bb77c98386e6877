#include "storage/finished_runs.hpp"

#include "protocol/json_text.hpp"

#include <algorithm>

namespace hb::storage {

std::shared_ptr<const finished_run> finished_run::from(const run_snapshot& run) {
  auto out = std::make_shared<finished_run>();
  static_cast<run_row&>(*out) = run; // the row; the streamed parts follow
  size_t size = 0;
  for (const auto& d : run.deltas)
    size += d.size();
  out->text.reserve(size);
  out->delta_ends.reserve(run.deltas.size());
  for (const auto& d : run.deltas) {
    out->text += d;
    out->delta_ends.push_back(out->text.size());
  }
  protocol::append_quoted(out->quoted_text, out->text);
  size = 0;
  for (const auto& e : run.events)
    size += e.size() + 2;
  out->events.reserve(size);
  out->event_starts.reserve(run.events.size());
  for (const auto& e : run.events) {
    if (!out->event_starts.empty())
      out->events += ", ";
    out->event_starts.push_back(out->events.size());
    out->events += e;
  }
  return out;
}

std::string finished_run::events_from(int64_t cursor) const {
  int64_t at = std::clamp<int64_t>(cursor, 0, event_count());
  if (at == event_count())
    return "[]";
  size_t offset = event_starts[static_cast<size_t>(at)];
  std::string out;
  out.reserve(events.size() - offset + 2);
  out += '[';
  out.append(events, offset, std::string::npos);
  out += ']';
  return out;
}

std::string finished_run::text_from(int64_t cursor) const {
  int64_t at = std::clamp<int64_t>(cursor, 0, delta_count());
  size_t offset = at == 0 ? 0 : delta_ends[static_cast<size_t>(at - 1)];
  return text.substr(offset);
}

size_t finished_run::bytes() const {
  return sizeof(*this) + run_id.size() + session_id.size() + status.size() +
         (result ? result->size() : 0) + (error ? error->size() : 0) + text.size() +
         quoted_text.size() + delta_ends.size() * sizeof(size_t) + events.size() +
         event_starts.size() * sizeof(size_t);
}

std::shared_ptr<const finished_run> finished_run_cache::find(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(run_id);
  if (it == index_.end())
    return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return *it->second;
}

bool finished_run_cache::read_again(const std::string& run_id) {
  constexpr size_t remembered = 4096;
  std::lock_guard<std::mutex> lock(mu_);
  if (read_once_.count(run_id))
    return true;
  read_once_.insert(run_id);
  read_once_order_.push_back(run_id);
  if (read_once_order_.size() > remembered) {
    read_once_.erase(read_once_order_.front());
    read_once_order_.pop_front();
  }
  return false;
}

void finished_run_cache::put(std::shared_ptr<const finished_run> run) {
  size_t size = run->bytes();
  if (!would_keep(size))
    return; // it would push out everything else
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.count(run->run_id) || forgotten_.count(run->run_id))
    return; // another reader got there first (the runs are equal), or it was pruned
  while (!order_.empty() && bytes_ + size > max_bytes_) {
    bytes_ -= order_.back()->bytes();
    index_.erase(order_.back()->run_id);
    order_.pop_back();
  }
  order_.push_front(std::move(run));
  index_.emplace(order_.front()->run_id, order_.begin());
  bytes_ += size;
}

void finished_run_cache::forget(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  forgotten_.insert(run_id);
  auto it = index_.find(run_id);
  if (it == index_.end())
    return;
  bytes_ -= (*it->second)->bytes();
  order_.erase(it->second);
  index_.erase(it);
}

size_t finished_run_cache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t finished_run_cache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.size();
}

} // namespace hb::storage

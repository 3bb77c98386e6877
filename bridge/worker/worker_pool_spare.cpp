// The automatic worker count (worker_pool.hpp): sessions go only to warm
// workers, and a spare is warmed ahead of need. The real agent imports for
// seconds; a session placed on a worker still importing it waits for that
// (a 1 s turn took 5 s), while one placed on a warm but busy worker shares
// its GIL for a while and waits for nothing.
#include "bridge/worker/worker_pool.hpp"

#include "bridge/worker/worker_pool_slot.hpp"

#include <thread>
#include <tuple>

namespace hb::bridge::worker {

size_t worker_pool::live_workers() const {
  size_t live = starting_;
  for (const auto& [_, slots] : slots_)
    for (const auto& s : slots)
      live += s->proc && s->proc->alive() ? 1 : 0;
  return live;
}

std::shared_ptr<worker_pool::slot> worker_pool::empty_slot(std::vector<std::shared_ptr<slot>>& slots,
                                                           const std::string& profile) {
  for (auto& s : slots)
    if (!s->starting && (!s->proc || !s->proc->alive()))
      return s; // the lowest free index, so that keys ("default#1") stay few and stable
  auto s = std::make_shared<slot>();
  s->profile = profile;
  s->index = slots.size();
  slots.push_back(s);
  return s;
}

std::shared_ptr<worker_pool::slot> worker_pool::pick_warm(std::vector<std::shared_ptr<slot>>& slots,
                                                          const std::string& profile) {
  std::shared_ptr<slot> best;
  std::tuple<size_t, size_t> best_load;
  for (auto& s : slots) {
    if (!s->proc || !s->proc->accepting() || !s->proc->warm())
      continue;
    std::tuple<size_t, size_t> load{s->proc->live_turns(), s->sessions};
    if (!best || load < best_load)
      best = s, best_load = load;
  }
  if (best)
    return best;
  for (auto& s : slots) // none warm: the one on its way is the soonest there is
    if (s->starting || (s->proc && s->proc->accepting()))
      return s;
  return empty_slot(slots, profile);
}

std::shared_ptr<worker_process> worker_pool::take_spare_for_room() {
  if (options_.per_profile > 0)
    return nullptr; // a fixed count keeps its workers until they are idle
  // A spare: a worker with no session in a profile that keeps another one
  // (a profile's only worker stays, as it would without spares).
  for (auto& [_, slots] : slots_) {
    size_t serving = 0;
    for (const auto& s : slots)
      serving += s->proc && s->proc->accepting() ? 1 : 0;
    for (auto& s : slots)
      if (serving > 1 && s->sessions == 0 && s->proc && s->proc->accepting() && s->proc->retire_if_idle()) {
        s->recycled++;
        auto proc = std::move(s->proc);
        s->proc.reset();
        return proc;
      }
  }
  return nullptr;
}

std::shared_ptr<worker_pool::slot> worker_pool::spare_on_its_way(const slot& needing) {
  std::lock_guard<std::mutex> lock(mu_);
  // Only a start with a session to serve waits (two spares waiting for each
  // other would wait forever).
  if (needing.sessions == 0 || options_.per_profile > 0 || options_.max_workers == 0 ||
      live_workers() < options_.max_workers)
    return nullptr;
  for (auto& [_, slots] : slots_)
    for (auto& s : slots)
      if (s.get() != &needing && s->starting && s->sessions == 0 && slots.size() > 1)
        return s;
  return nullptr;
}

void worker_pool::turn_starting(const std::string& profile, const worker_process* busy) {
  if (options_.per_profile > 0 || !options_.unavailable.empty())
    return;
  std::shared_ptr<slot> spare;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slots = slots_[profile];
    size_t workers = 0;
    for (const auto& s : slots) {
      if (s->starting)
        return; // a spare is on its way
      if (!s->proc || !s->proc->accepting())
        continue;
      workers++;
      if (!s->proc->warm() || (s->proc.get() != busy && s->proc->live_turns() == 0))
        return; // one is warming, or one is free
    }
    if (workers >= options_.auto_cap || (options_.max_workers > 0 && live_workers() >= options_.max_workers))
      return;
    spare = empty_slot(slots, profile);
    spare->starting = true; // reserved: a second turn starting now does not start another
  }
  auto self = shared_from_this();
  std::thread([self, spare] {
    try {
      self->running(*spare, true);
    } catch (const std::exception&) {
      // No room or a start that failed: sessions stay on the warm workers.
    }
  }).detach();
}

} // namespace hb::bridge::worker

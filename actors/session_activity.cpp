#include "actors/session_activity.hpp"

#include <utility>

namespace hb::actors {

void session_activity::put(caf::actor_id who, entry now) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[who] = std::move(now);
}

void session_activity::drop(caf::actor_id who) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(who);
}

std::vector<std::pair<caf::actor_id, session_activity::entry>> session_activity::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {entries_.begin(), entries_.end()};
}

session_activity_slot::~session_activity_slot() {
  if (table_)
    table_->drop(who_);
}

void session_activity_slot::put(const std::shared_ptr<session_activity>& table, caf::actor_id who,
                                session_activity::entry now) {
  table_ = table;
  who_ = who;
  table->put(who, std::move(now));
}

} // namespace hb::actors

// Each session's profile and whether a turn of it runs: what the broker
// counts for `ping` and `worker_ping` and what `destroy_profile` looks up.
//
// The sessions write it and the broker reads it, under a lock, rather than
// a message to the broker at every change: the broker runs on CAF's I/O
// thread, and each message sent to it from another thread is a write to
// CAF's wake-up pipe, a read and a wake-up of that thread, twice a turn
// (its start and its end), for nothing a client waits on.
#pragma once

#include <caf/fwd.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace hb::actors {

class session_activity {
public:
  struct entry {
    std::string session_id;
    std::string profile;
    bool running = false;
  };

  // What session actor `who` is now (replaced whole).
  void put(caf::actor_id who, entry now);
  // Actor `who` is gone.
  void drop(caf::actor_id who);
  // Every actor's entry, copied under the lock.
  std::vector<std::pair<caf::actor_id, entry>> all() const;

private:
  mutable std::mutex mu_;
  std::unordered_map<caf::actor_id, entry> entries_;
};

// A session actor's own entry, dropped when the actor's state goes (any
// way it ends).
class session_activity_slot {
public:
  session_activity_slot() = default;
  session_activity_slot(const session_activity_slot&) = delete;
  session_activity_slot& operator=(const session_activity_slot&) = delete;
  ~session_activity_slot();

  void put(const std::shared_ptr<session_activity>& table, caf::actor_id who, session_activity::entry now);

private:
  std::shared_ptr<session_activity> table_;
  caf::actor_id who_ = 0;
};

} // namespace hb::actors

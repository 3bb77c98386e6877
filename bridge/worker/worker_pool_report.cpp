// What the pool tells health and ping about its workers (worker_pool.hpp).
#include "bridge/worker/worker_pool.hpp"

#include "bridge/worker/worker_pool_slot.hpp"
#include "protocol/json_text.hpp"

#include <cmath>

namespace hb::bridge::worker {

std::string worker_pool::health_json() const {
  // Copied under the lock, read outside it: a worker's RSS comes from /proc,
  // and ping (on the broker's thread) takes the same lock.
  struct seen {
    std::string profile;
    size_t index;
    std::shared_ptr<worker_process> proc;
    size_t sessions;
    int64_t starts, retired, crashes;
    std::string last_death;
    bool starting;
  };
  std::vector<seen> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [profile, slots] : slots_)
      for (const auto& s : slots)
        all.push_back({profile, s->index, s->proc, s->sessions, s->restarts, s->recycled, s->crashes,
                       s->last_death, s->starting});
  }
  std::string workers = "[";
  for (const auto& s : all) {
    protocol::object_writer w;
    w.str("profile", s.profile).integer("slot", static_cast<int64_t>(s.index));
    bool alive = s.proc && s.proc->alive();
    w.boolean("alive", alive).boolean("unresponsive", alive && s.proc->unresponsive());
    w.boolean("warm", alive && s.proc->warm()); // the agent imported: new sessions may go to it
    w.boolean("starting", s.starting && !alive); // a process on its way (not yet up)
    if (s.proc) {
      w.integer("pid", s.proc->pid())
        .str("python", s.proc->info().python)
        .str("python_version", s.proc->info().python_version)
        .str("agent_version", s.proc->info().agent_version)
        .integer("live_turns", static_cast<int64_t>(s.proc->live_turns()))
        .boolean("adopted", s.proc->adopted()); // started by an earlier daemon, taken over at this one's start
      if (alive)
        w.number("rss_mb", std::round(s.proc->rss_mb() * 10) / 10)
          .integer("unacknowledged_frames", static_cast<int64_t>(s.proc->unacknowledged_frames()));
      if (!s.proc->info().error.empty())
        w.str("error", s.proc->info().error);
      if (!alive)
        w.str("exit", s.proc->death_reason());
    }
    w.integer("sessions", static_cast<int64_t>(s.sessions))
      .integer("starts", s.starts)
      .integer("retired", s.retired)
      .integer("crashes_in_a_row", s.crashes);
    if (!s.last_death.empty())
      w.str("last_death", s.last_death);
    workers += (workers.size() > 1 ? ", " : "") + w.finish();
  }
  return workers + "]";
}

std::string worker_pool::key_of(const slot& s) {
  return s.index == 0 ? s.profile : s.profile + "#" + std::to_string(s.index);
}

studio_worker_maps worker_pool::studio_workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  protocol::object_writer running, details;
  auto now = slot::clock::now();
  double epoch_now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const auto& [profile, slots] : slots_) {
    bool any = false;
    for (const auto& s : slots) {
      bool alive = s->proc && s->proc->alive();
      any = any || alive;
      bool in_use = s->sessions > 0 || (s->proc && s->proc->live_turns() > 0);
      double last_used = in_use ? epoch_now : epoch_now - std::chrono::duration<double>(now - s->idle_since).count();
      protocol::object_writer d;
      d.boolean("running", alive && !s->proc->unresponsive()); // a hung worker serves nobody
      if (alive)
        d.integer("pid", s->proc->pid());
      else
        d.null("pid");
      d.str("endpoint", "socketpair").str("profile", profile).number("last_used_at", last_used);
      details.raw(key_of(*s), d.finish());
    }
    running.boolean(profile, any);
  }
  return {running.finish(), details.finish()};
}

} // namespace hb::bridge::worker

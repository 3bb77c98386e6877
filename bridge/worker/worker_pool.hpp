// The daemon's agent workers: per profile, slots each holding at most one
// live process. With a fixed count (`per_profile` > 0) a profile has that
// many slots and a session is placed on the one with the fewest sessions,
// starting its process if need be. Automatic (`per_profile` 0, the default)
// a session is placed only on a warm worker (its agent imported), the one
// with the fewest live turns, then sessions; when a turn starts and leaves
// its profile no warm worker without a turn, a spare is started in the
// background (up to `auto_cap` per profile and `max_workers` in all), so
// that the next session finds one ready instead of waiting seconds for the
// agent's imports; a profile's first worker (prestart) is followed by such a
// spare as soon as it is warm. A slot whose process died starts a new one on the next
// session that needs it, later and later if it keeps dying. This is the
// supervision the design asks of a "worker supervisor": the process's
// reading thread (worker_process) notices the death and settles its runs;
// the pool decides when a profile gets a worker again.
#pragma once

#include "bridge/agent_host.hpp"
#include "bridge/agent_hosting.hpp"
#include "bridge/worker/worker_attach.hpp"
#include "bridge/worker/worker_process.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace hb::bridge::worker {

struct pool_options {
  launch_options launch;
  std::string unavailable;      // no usable interpreter: every session fails with this
  size_t per_profile = 0;               // 0: automatic, up to auto_cap, with a warm spare
  size_t auto_cap = 2;                  // automatic: workers per profile at most (the cores, capped)
  std::chrono::seconds idle_timeout{0}; // 0: workers stay
  double max_rss_mb = 0;               // 0: no limit
  size_t max_workers = 16;             // processes in all, every profile and slot; 0: no limit
};

class worker_pool : public profile_host, public std::enable_shared_from_this<worker_pool> {
public:
  explicit worker_pool(pool_options options);

  // Builds a session's agent in a worker of its profile. Throws protocol::wire_error.
  std::shared_ptr<agent_host> create_session(const std::string& session_id, const std::string& profile,
                                             const std::string& model, const std::string& provider,
                                             std::string& config_json);
  // tools.approval.resolve_gateway_approval in the worker hosting `session_id`.
  int resolve_gateway(const std::string& session_id, const std::string& choice, const std::string& request_id,
                      const std::string& token,
                      const std::function<void(int, const std::string&)>& before_agent_runs);
  std::string call(const std::string& profile, const std::string& op, const std::string& args_json) override;
  std::string call_for_session(const std::string& session_id, const std::string& profile, const std::string& op,
                               const std::string& args_json) override;

  // Workers without sessions or live turns that were idle past idle_timeout
  // (or are over max_rss_mb) are stopped; called now and then.
  void collect_idle();
  // A thread of the pool's own calls collect_idle() every few seconds (when
  // there is an idle timeout or a memory limit), for as long as the pool lives.
  void start_housekeeping();
  // Starts a worker for `profile` in the background, so that the first chat
  // does not wait for the interpreter (and the agent's imports) to start;
  // automatic, a spare after it once it is warm.
  void prestart(const std::string& profile);
  // A turn is about to run in `busy` (automatic count): starts a spare for
  // its profile in the background when no other warm worker is free.
  void turn_starting(const std::string& profile, const worker_process* busy);
  // {"host": "worker", "workers": [...]} for health.
  std::string health_json() const;
  // ping's Studio-shaped maps (see agent_hosting.hpp): slot 0 of a profile
  // is keyed by the profile's name, as Studio keys its one worker per
  // profile; further slots by "<profile>#<slot>".
  studio_worker_maps studio_workers() const;
  void stop_all(std::chrono::milliseconds grace);

  // Takes over the workers a previous daemon left running (worker_pool_adopt.cpp):
  // each gets a slot of its profile; its agents of sessions in `known`
  // (session ids the event log serves) become those sessions' agents, each
  // with the turn it runs when that turn's run is in `continuing` (run id ->
  // session id: runs the log shows live); other agents are released and
  // other turns dropped. Returns the agents by session id.
  std::map<std::string, adopted_agent> adopt(std::vector<found_worker> found,
                                             const std::map<std::string, std::string>& continuing,
                                             const std::set<std::string>& known);

  struct slot;
  // A slot's name in ping and status: "<profile>" for slot 0, "<profile>#<n>".
  static std::string key_of(const slot& s);

private:
  std::shared_ptr<slot> pick(const std::string& profile);
  std::shared_ptr<slot> pick_warm(std::vector<std::shared_ptr<slot>>& slots, const std::string& profile);
  std::shared_ptr<slot> empty_slot(std::vector<std::shared_ptr<slot>>& slots, const std::string& profile);
  size_t live_workers() const; // under mu_: processes alive or being started
  std::shared_ptr<worker_process> take_spare_for_room(); // under mu_
  // At the cap, for a start with a session to serve: a slot other than
  // `needing` starting a spare, to wait for.
  std::shared_ptr<slot> spare_on_its_way(const slot& needing);
  // A spare warms up nicer (launch_options::warm_nice): it is started
  // because turns are running, and is not needed until they end.
  static constexpr int spare_warm_nice = 10;
  std::shared_ptr<worker_process> running(slot& s, bool spare = false);
  // The op that `op`, having answered `value`, is repeated as in the
  // profile's other workers, or "".
  static std::string followed_by(const std::string& op, const std::string& value);
  void tell_the_others(const std::string& profile, const worker_process* done, const std::string& op,
                       const std::string& args_json);
  void forget(const std::string& session_id, const worker_process* proc, slot& s);
  std::shared_ptr<worker_process> worker_of(const std::string& session_id) const; // null: none (any more)
  friend class worker_session;

  pool_options options_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<slot>>> slots_;
  std::map<std::string, std::weak_ptr<worker_process>> sessions_; // session id -> its worker
  size_t starting_ = 0; // processes being started, counted against max_workers
};

} // namespace hb::bridge::worker

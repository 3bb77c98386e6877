// Workers a previous daemon left running, taken into the pool at start
// (worker_pool.hpp, adopt()): each keeps the agents of sessions the event
// log still serves, and the turns of runs the log shows live; the rest is
// let go, so that nothing runs that no session will ever see.
#include "bridge/worker/worker_pool.hpp"

#include "bridge/worker/worker_events.hpp"
#include "bridge/worker/worker_pool_slot.hpp"
#include "bridge/worker/worker_session.hpp"

namespace hb::bridge::worker {

std::map<std::string, adopted_agent> worker_pool::adopt(std::vector<found_worker> found,
                                                        const std::map<std::string, std::string>& continuing,
                                                        const std::set<std::string>& known) {
  std::map<std::string, adopted_agent> agents;
  for (auto& one : found) {
    auto held = one.held;
    auto proc = worker_process::adopt(one, options_.launch);
    auto s = std::make_shared<slot>();
    s->profile = proc->profile();
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& slots = slots_[s->profile];
      s->index = slots.size();
      s->proc = proc;
      slots.push_back(s);
    }
    // A session's latest agent (a rebuilt one's predecessor may not be released yet).
    std::map<std::string, uint64_t> agent_of;
    for (const auto& h : held.sessions)
      if (known.count(h.session_id) && !agents.count(h.session_id))
        agent_of[h.session_id] = std::max(agent_of[h.session_id], h.handle);
    std::map<uint64_t, std::string> session_of;
    for (const auto& [session, handle] : agent_of)
      session_of[handle] = session;
    std::map<uint64_t, held_turn> turn_of; // handle -> the turn it runs that goes on
    size_t dropped = 0;
    for (const auto& t : held.turns) {
      auto session = session_of.find(t.handle);
      auto run = continuing.find(t.run);
      bool follows = session != session_of.end() && run != continuing.end() && run->second == session->second &&
                     !turn_of.count(t.handle);
      if (follows) {
        turn_of[t.handle] = t;
      } else {
        proc->drop_turn(t.turn);
        ++dropped;
      }
    }
    for (const auto& h : held.sessions)
      if (!session_of.count(h.handle) || agent_of[session_of[h.handle]] != h.handle)
        proc->post(release_session{h.handle});
    for (const auto& [handle, session] : session_of) {
      auto turn = turn_of.find(handle);
      uint64_t live = turn == turn_of.end() ? 0 : turn->second.turn;
      {
        std::lock_guard<std::mutex> lock(mu_);
        s->sessions++;
        sessions_[session] = proc;
      }
      agents[session] = adopted_agent{
        std::make_shared<worker_session>(shared_from_this(), s, proc, handle, session, live),
        turn == turn_of.end() ? std::string() : turn->second.run};
    }
    report_worker_event({false, "worker.adopted", "took over a worker an earlier hermes-bridge started",
                         {{"profile", proc->profile()},
                          {"pid", std::to_string(proc->pid())},
                          {"sessions", std::to_string(session_of.size())},
                          {"turns_continued", std::to_string(turn_of.size())},
                          {"turns_dropped", std::to_string(dropped)}}});
  }
  return agents;
}

} // namespace hb::bridge::worker

// The session actor's phases (session_state.hpp), each a behaviour that
// takes only the messages valid in it; what a phase does not take gets its
// answer from refusals(), the one place for "already running", "unknown
// session" and the like. What every phase answers alike is in common().
#include "actors/session.hpp"
#include "actors/session_state.hpp"

#include "actors/blocking_call.hpp"
#include "actors/daemon_log.hpp"
#include "actors/errors.hpp"
#include "actors/log_messages.hpp"
#include "actors/responses.hpp"
#include "actors/run.hpp"
#include "bridge/agent_hosting.hpp"
#include "bridge/tmux/native_session.hpp"

namespace hb::actors {

session_hosting daemon_hosting(std::shared_ptr<const bridge::native_options> native) {
  session_hosting hosting;
  hosting.make_agent = [native](const std::string& id, const agent_recipe& recipe,
                                std::string& config) -> std::shared_ptr<bridge::agent_host> {
    if (recipe.harness == "native")
      return bridge::native_session::create(id, recipe.workspace, *native, config);
    return bridge::create_agent(id, recipe.profile, recipe.model, recipe.provider, config);
  };
  hosting.start_run = spawn_run;
  hosting.adopt = bridge::take_adopted_agent;
  return hosting;
}

namespace session_parts {

const char* to_string(phase p) {
  switch (p) {
    case phase::fresh: return "fresh";
    case phase::dormant: return "dormant";
    case phase::idle: return "idle";
    case phase::starting: return "starting";
    case phase::running: return "running";
    case phase::destroyed: return "destroyed";
  }
  return "unknown";
}

session_view view_of(const session_state& st) {
  session_view v;
  v.created = st.listed;
  v.session_id = st.id;
  v.running = st.listed && (st.busy() || !st.finishing_run.empty());
  v.current_run_id = st.run_id.empty() ? st.finishing_run : st.run_id;
  v.created_at = st.created_at;
  v.last_used_at = st.last_used_at;
  v.message_count = st.message_count;
  v.config = st.config;
  v.profile = st.profile.empty() ? "default" : st.profile;
  v.harness = st.harness;
  if (st.agent)
    v.native = st.agent->live_status();
  if (st.harness != "native")
    v.agent = bridge::agent_status_json(st.agent.get());
  return v;
}

std::shared_ptr<const std::string> no_history() {
  static const auto empty = std::make_shared<const std::string>("[]");
  return empty;
}

void persist(session_actor* self) {
  announce(self);
  save_row(self);
}

void announce(session_actor* self) {
  auto& st = self->state;
  if (st.listed && st.links->activity)
    st.activity.put(st.links->activity, self->id(),
                    {st.id, st.profile.empty() ? "default" : st.profile, st.busy() && st.now != phase::destroyed});
}

void save_row(session_actor* self) {
  auto& st = self->state;
  if (!st.listed)
    return;
  bool destroyed = st.now == phase::destroyed;
  bool with_history = st.history && st.history_unsaved;
  st.history_unsaved = false;
  // The history goes beside the row, shared (session_put); the row's own is not read.
  storage::session_row row{st.id, st.created_at, st.last_used_at, st.config, "[]", with_history, st.message_count,
                           destroyed};
  self->send(st.links->writer, session_put{std::move(row), with_history ? st.history : nullptr});
}

void finish_destroy(session_actor* self) {
  release_agent(self, true);
  for (auto& rp : self->state.draining)
    rp.deliver(true);
  self->quit();
}

void settle(session_actor* self) {
  auto& st = self->state;
  if (st.now == phase::destroyed) {
    st.before = phase::idle; // nothing left in flight: its run's end lets it go
    return;
  }
  if (!st.listed)
    return enter(self, phase::fresh);
  enter(self, !st.agent && st.before == phase::dormant ? phase::dormant : phase::idle);
}

namespace {

// Answers that wait for the agent or the log go through a promise.
template <class F, class... Ts>
caf::response_promise later(session_actor* self, F on, Ts&&... args) {
  auto rp = self->make_response_promise();
  on(self, std::forward<Ts>(args)..., rp);
  return rp;
}

// What a phase that does not take a message answers, the same in every
// phase that refuses it.
namespace refuse {

void chat(const session_state& st, caf::response_promise& rp) {
  rp.deliver(make_error(errc::failed, "session " + st.id + " is already running"));
}

void unknown(const session_state& st, caf::response_promise& rp) {
  rp.deliver(make_error(errc::not_found, "unknown session: " + st.id));
}

// Nothing runs, nothing to stop; a session nobody built is unknown.
void interrupt(const session_state& st, caf::response_promise& rp) {
  if (!st.listed)
    return unknown(st, rp);
  rp.deliver(interrupt_reply{st.id, true});
}

// A dormant session has no turn to steer; one without an agent is unknown.
void steer(const session_state& st, const std::string& text, caf::response_promise& rp) {
  if (st.now == phase::dormant)
    return rp.deliver(steer_reply{false, text});
  unknown(st, rp);
}

} // namespace refuse

// Answers at once, through a promise like the answers that wait.
template <class F, class... Ts>
caf::response_promise answer(session_actor* self, F how, Ts&&... args) {
  auto rp = self->make_response_promise();
  how(self->state, std::forward<Ts>(args)..., rp);
  return rp;
}

caf::message_handler refusals(session_actor* self) {
  return {
    [=](chat_request&) { return answer(self, refuse::chat); },
    [=](const interrupt_turn&) { return answer(self, refuse::interrupt); },
    [=](const steer_turn& msg) { return answer(self, refuse::steer, msg.text); },
    [=](const collect_idle&) { return false; },
    [=](drain_session) { return true; },
  };
}

// The same in every phase.
caf::message_handler common(session_actor* self) {
  return {
    [=](const session_query&) { return view_of(self->state); },
    [=](const profile_of&) {
      auto& st = self->state;
      return std::make_tuple(st.listed, st.profile.empty() ? std::string("default") : st.profile);
    },
    [=](history_of) { return later(self, on_history); },
    [=](const run_armed& armed) { on_armed(self, armed.run_id); },
    [=](run_closing& closing) { on_closing(self, closing); },
    [=](const run_finished& done) { on_run_done(self, done.run_id); },
    [=](const wait_due& due) { answer_waiting(self, due.run_id); },
    [=](const sync_due& due) {
      uint64_t ticket = due.ticket;
      auto& st = self->state;
      if (auto it = st.syncing.find(ticket); it != st.syncing.end()) {
        it->second.deliver(interrupt_reply{st.id, false});
        st.syncing.erase(it);
      }
    },
    [=](estimate_context& msg) { return later(self, on_estimate, std::move(msg)); },
    [=](switch_model& msg) { return later(self, on_switch_model, std::move(msg)); },
  };
}

// destroy: the broker has dropped the session. An idle one goes now; a busy
// one ends its turn first (answered: whether it was a session at all).
bool on_destroy(session_actor* self) {
  auto& st = self->state;
  bool existed = st.listed;
  bool busy = st.busy();
  if (st.now != phase::destroyed) {
    st.before = st.now;
    enter(self, phase::destroyed);
  }
  persist(self);
  if (busy)
    stop_turn(self, "Session destroyed");
  else
    finish_destroy(self);
  return existed;
}

// Collecting frees the agent; the session stays listed and resumes on its
// next chat, exactly as after a restart.
bool collect_if_idle(session_actor* self, int64_t idle_seconds) {
  auto& st = self->state;
  if (!st.agent || now_seconds() - st.last_used_at < static_cast<double>(idle_seconds))
    return false;
  release_agent(self);
  st.before = phase::dormant;
  enter(self, phase::dormant);
  return true;
}

void on_drain(session_actor* self, caf::response_promise rp) {
  if (!self->state.busy()) // a destroyed session whose run is over
    return rp.deliver(true);
  self->state.draining.push_back(rp);
  stop_turn(self, "hermes-bridge is shutting down", true);
}

// The handlers a phase takes, before common() and refusals().
caf::message_handler takes(session_actor* self, phase p) {
  auto chat = [=](chat_request& chat) { return later(self, on_chat, std::move(chat)); };
  auto destroy = [=](destroy_session) { return on_destroy(self); };
  // Only with an agent to ask; without one, the phase's refusal.
  auto interrupt = [=](const interrupt_turn& msg) {
    if (!self->state.agent && !self->state.replay_stop)
      return answer(self, refuse::interrupt);
    return later(self, on_interrupt, msg.message);
  };
  auto steer = [=](const steer_turn& msg) {
    if (!self->state.agent)
      return answer(self, refuse::steer, msg.text);
    return later(self, on_steer, msg.text);
  };
  auto drain = [=](drain_session) { return later(self, on_drain); };
  switch (p) {
    case phase::fresh:
    case phase::dormant:
      return {chat, destroy};
    case phase::idle:
      return {chat, destroy, interrupt, steer,
              [=](const collect_idle& msg) { return collect_if_idle(self, msg.idle_seconds); }};
    case phase::starting:
    case phase::running:
    case phase::destroyed:
      return {destroy, interrupt, steer, drain};
  }
  return {};
}

void init_state(session_state& st, std::string id, session_links_ptr links, const storage::session_row* dormant) {
  st.id = std::move(id);
  st.links = std::move(links);
  if (dormant) {
    st.listed = true;
    st.now = st.before = phase::dormant;
    st.history.reset(); // read from the log when someone needs it
    st.history_unsaved = false;
    st.created_at = dormant->created_at;
    st.last_used_at = dormant->last_used_at;
    st.message_count = dormant->message_count;
    adopt_config(st, dormant->config);
  }
}

caf::behavior session_behavior(session_actor* self, std::string id, session_links_ptr links,
                               std::shared_ptr<const storage::session_row> dormant) {
  init_state(self->state, std::move(id), std::move(links), dormant.get());
  if (dormant)
    announce(self); // its entry is its own from now on: gone with it
  if (dormant && self->state.links->hosting.adopt)
    if (auto adopted = self->state.links->hosting.adopt(self->state.id))
      take_adopted(self, std::move(*adopted));
  return takes(self, self->state.now).or_else(common(self)).or_else(refusals(self));
}

} // namespace

void enter(session_actor* self, phase p) {
  self->state.now = p;
  self->become(takes(self, p).or_else(common(self)).or_else(refusals(self)));
}

} // namespace session_parts

caf::actor spawn_session(caf::actor_system& sys, const std::string& session_id, session_links_ptr links) {
  return sys.spawn(session_parts::session_behavior, session_id, std::move(links),
                   std::shared_ptr<const storage::session_row>());
}

caf::actor spawn_dormant_session(caf::actor_system& sys, const storage::session_row& row,
                                 session_links_ptr links) {
  return sys.spawn(session_parts::session_behavior, row.session_id, std::move(links),
                   std::make_shared<const storage::session_row>(row));
}

} // namespace hb::actors

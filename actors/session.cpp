#include "actors/session.hpp"
#include "actors/session_parts.hpp"

#include "actors/blocking_call.hpp"
#include "actors/chat_request.hpp"
#include "actors/daemon_log.hpp"
#include "actors/errors.hpp"
#include "actors/log_messages.hpp"
#include "actors/question_messages.hpp"
#include "actors/responses.hpp"
#include "actors/run.hpp"
#include "actors/session_messages.hpp"
#include "actors/studio_messages.hpp"
#include "bridge/agent_hosting.hpp"
#include "bridge/tmux/native_session.hpp"
#include "protocol/json_text.hpp"
#include "protocol/names.hpp"
#include "protocol/request.hpp"

#include <caf/all.hpp>
#include <iostream>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

namespace hb::actors {

namespace session_parts {

using protocol::error_line;
using actors::error_line; // for caf::error (actors/errors.hpp): both overloads here
using protocol::json;
using protocol::object_writer;

constexpr std::chrono::seconds interrupt_sync_limit{10};

// The session as `list` shows it; `status` adds "exists" after the id.
std::string session_entry(const session_state& st, bool with_exists) {
  object_writer w;
  w.str("session_id", st.id);
  if (with_exists)
    w.boolean("exists", true);
  w.boolean("running", st.busy && st.created);
  if (st.run_id.empty())
    w.null("current_run_id");
  else
    w.str("current_run_id", st.run_id);
  w.number("created_at", st.created_at)
    .number("last_used_at", st.last_used_at)
    .integer("message_count", st.message_count)
    .raw("config", st.config);
  // Native sessions only: embedded ones answer exactly as the seed does.
  if (std::string live = st.agent ? st.agent->live_status() : std::string(); !live.empty())
    w.raw("native", live);
  if (with_exists && st.harness != "native")
    w.raw("agent", bridge::agent_status_json(st.agent.get()));
  if (!with_exists) { // list entries, as Hermes Studio's bridge lists them
    std::string profile = st.profile.empty() ? "default" : st.profile;
    w.str("profile", profile).str("worker_key", profile);
  }
  return w.finish();
}

void persist(session_actor* self) {
  auto& st = self->state;
  if (!st.created)
    return;
  self->send(st.links.broker, session_activity{st.id, st.profile.empty() ? "default" : st.profile,
                                               st.busy && !st.destroyed});
  self->send(st.links.writer, session_put{{st.id, st.created_at, st.last_used_at, st.config, st.history,
                                           st.history_loaded, st.message_count, st.destroyed}});
}

// `close` also ends what the agent runs outside the daemon (a native
// session's tmux server): on destroy and replacement, not on idle collection.
void release_agent(session_actor* self, bool close = false) {
  if (auto agent = std::move(self->state.agent))
    blocking_detach(self, [agent, close]() mutable {
      if (close)
        agent->close();
      agent.reset();
    });
}

void finish_destroy(session_actor* self) {
  release_agent(self, true);
  for (auto& rp : self->state.draining)
    rp.deliver(true);
  self->quit();
}

void deliver_result(session_actor* self, const std::string& run_id, caf::response_promise rp) {
  self->request(self->state.links.reader, caf::infinite, result_query{run_id})
    .then([=](std::string& line) mutable { rp.deliver(std::move(line), true); },
          [=](caf::error& err) mutable {
            rp.deliver(error_line("RuntimeError", "event log read failed: " + caf::to_string(err)),
                       true);
          });
}

void start_run(session_actor* self, chat_plan plan, caf::response_promise rp) {
  std::string run_id = new_id();
  double started = now_seconds();
  self->request(self->state.links.writer, caf::infinite,
                run_opening{run_id, self->state.id, started, plan.user_message})
    .then(
      [=](bool) mutable {
        auto& st = self->state;
        st.run_id = run_id;
        st.last_used_at = started;
        persist(self);
        if (plan.wait) {
          st.waiting.emplace(run_id, rp);
          if (plan.timeout > 0)
            self->delayed_send(self, std::chrono::microseconds(static_cast<int64_t>(plan.timeout * 1e6)),
                               wait_due_atom::value, run_id);
        } else {
          st.starting.emplace(run_id, rp);
        }
        run_spec spec{run_id, st.id, plan.request, std::move(st.idle_steer), st.agent,
                      caf::actor_cast<caf::actor>(self), st.links.broker, st.links.writer, {}};
        st.idle_steer.clear();
        st.replay_stop.reset();
        if (!plan.replay.empty()) {
          st.replay_stop = std::make_shared<std::atomic<bool>>(false);
          spec.replay = replay_spec{plan.replay, plan.replay_speed, st.links.db_path, st.replay_stop};
        }
        spawn_run(self->system(), std::move(spec));
      },
      [=](caf::error& err) mutable {
        self->state.busy = false;
        rp.deliver(error_line("RuntimeError", "event log unavailable: " + caf::to_string(err)),
                   self->state.created);
      });
}

void adopt_config(session_state& st, const std::string& config) {
  st.config = config;
  auto doc = json::parse(config, nullptr, false);
  auto text = [&](const char* key) {
    return doc.is_object() && doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>()
                                                                        : std::string();
  };
  st.profile = text("profile");
  st.model = text("model");
  st.provider = text("provider");
  st.harness = text("harness") == "native" ? "native" : "embedded";
  st.workspace = text("workspace");
}

// A resumed session continues its stored conversation unless the client
// sends its own history (Hermes Studio always does and keeps control).
void start_with_history(session_actor* self, chat_plan plan, caf::response_promise rp) {
  auto& st = self->state;
  json req = json::parse(plan.request);
  if (!protocol::field(req, "conversation_history").is_null() || st.message_count == 0)
    return start_run(self, std::move(plan), rp);
  auto inject = [self, req](const std::string& history, chat_plan plan, caf::response_promise rp) mutable {
    req["conversation_history"] = json::parse(history, nullptr, false);
    if (!req["conversation_history"].is_array())
      req["conversation_history"] = json::array();
    plan.request = protocol::dumps(req);
    start_run(self, std::move(plan), rp);
  };
  if (st.history_loaded)
    return inject(st.history, std::move(plan), rp);
  self->request(st.links.reader, caf::infinite, history_query{st.id})
    .then(
      [=](std::string& history) mutable {
        self->state.history = history;
        self->state.history_loaded = true;
        inject(history, plan, rp);
      },
      [=](caf::error& err) mutable {
        self->state.busy = false;
        rp.deliver(error_line("RuntimeError", "event log read failed: " + caf::to_string(err)), true);
      });
}

// Sets one key of the session's config object (kept as JSON text).
void set_config_field(session_state& st, const char* key, const std::string& value) {
  auto doc = json::parse(st.config, nullptr, false);
  if (!doc.is_object())
    doc = json::object();
  doc[key] = value;
  st.config = protocol::dumps(doc);
}

void build_agent(session_actor* self, agent_recipe recipe, caf::response_promise rp,
                 after_build then) {
  auto built = std::make_shared<agent_ptr>();
  std::string id = self->state.id;
  // An agent whose worker died resumes like a dormant session (a native TUI
  // that exited starts afresh, as before).
  const auto& st0 = self->state;
  bool resume = st0.dormant || (st0.created && st0.agent && !st0.agent->usable() && st0.harness != "native" &&
                                recipe.harness == st0.harness && recipe.profile == st0.profile &&
                                recipe.model == st0.model && recipe.provider == st0.provider);
  auto native = self->state.links.native;
  // Like the seed, a session whose config changed is replaced: the old agent
  // goes whether or not the new one can be built, and before it is built (a
  // native TUI's tmux socket is reused by its replacement).
  auto old = std::move(self->state.agent);
  auto fail = [=](const caf::error& why) mutable {
    auto& st = self->state;
    st.busy = false;
    if (!resume)
      st.created = false; // a dormant session stays listed and resumable
    if (auto agent = std::move(*built))
      blocking_detach(self, [agent]() mutable {
        agent->close();
        agent.reset();
      });
    rp.deliver(error_line(why), st.created);
    if (st.destroyed)
      finish_destroy(self);
  };
  blocking_call(self,
                [=]() mutable -> expected<std::string> {
                  if (old) {
                    old->close();
                    old.reset();
                  }
                  return catch_wire([&] {
                    std::string config;
                    if (recipe.harness == "native")
                      *built = bridge::native_session::create(id, recipe.workspace, *native, config);
                    else
                      *built = bridge::create_agent(id, recipe.profile, recipe.model, recipe.provider, config);
                    return config;
                  });
                })
    .then(
      [=](std::string& config) mutable {
        auto& st = self->state;
        if (st.destroyed)
          return fail(make_error(errc::failed, "session " + id + " was destroyed"));
        st.agent = std::move(*built);
        st.created = true;
        st.dormant = false;
        st.last_used_at = now_seconds();
        if (resume) {
          adopt_config(st, resumed_config(config, st.message_count));
        } else {
          st.created_at = st.last_used_at;
          adopt_config(st, config);
          st.history = "[]";
          st.history_loaded = true;
          st.message_count = 0;
        }
        if (recipe.harness != "native" && !recipe.workspace.empty()) {
          st.workspace = recipe.workspace;
          set_config_field(st, "workspace", st.workspace);
        }
        persist(self);
        then(self, resume, rp);
      },
      [=](caf::error& err) mutable {
        fail(err.category() == error_category
               ? err
               : make_error(errc::failed, "agent construction failed: " + caf::to_string(err)));
      });
}

// The request as the agent reads it, with the session's workspace in it.
std::string with_workspace(const std::string& request, const std::string& workspace) {
  if (workspace.empty())
    return request;
  json req = json::parse(request);
  if (protocol::field_str(req, "workspace") == workspace)
    return request;
  req["workspace"] = workspace;
  return protocol::dumps(req);
}

void on_chat(session_actor* self, const std::string& request, caf::response_promise rp) {
  auto& st = self->state;
  if (st.busy) {
    rp.deliver(error_line(protocol::runtime_error("session " + st.id + " is already running")),
               st.created);
    return;
  }
  chat_request chat;
  try {
    chat = read_chat(request, st.created ? st.harness : st.links.default_harness);
  } catch (const protocol::wire_error& e) {
    rp.deliver(error_line(e), st.created);
    return;
  }
  auto& [recipe, plan] = chat;
  auto& [profile, model, provider, harness, workspace] = recipe;
  if (!plan.replay.empty()) {
    // A replay needs no agent: the session exists for it as it is.
    if (!st.created) {
      st.created = true;
      st.created_at = st.last_used_at = now_seconds();
      adopt_config(st, replay_session_config(st.id));
      persist(self);
    }
    st.busy = true;
    return start_run(self, std::move(plan), rp);
  }
  bool changed = st.created && harness != st.harness;
  if (harness == "native") // the TUI has its own model and profile
    changed = changed || (!workspace.empty() && workspace != st.workspace);
  else
    changed = changed || (!profile.empty() && profile != st.profile) || (!model.empty() && model != st.model) ||
              (!provider.empty() && provider != st.provider);
  if (st.created && !changed) {
    // Rebuilt (after a restart, idle collection or a TUI that exited) as it was.
    if (st.dormant || !st.agent || !st.agent->usable()) {
      profile = st.profile;
      model = st.model;
      provider = st.provider;
    }
    if (harness == "native")
      workspace = st.workspace;
  }
  if (harness != "native") { // the workspace sticks to the session; it needs no new agent
    if (workspace.empty())
      workspace = st.workspace;
    else if (st.created && workspace != st.workspace) {
      st.workspace = workspace;
      set_config_field(st, "workspace", workspace);
    }
    plan.request = with_workspace(plan.request, workspace);
  }
  try {
    protocol::check_profile_name(profile); // a stored one too: the log may predate the check
  } catch (const protocol::wire_error& e) {
    rp.deliver(error_line(e), st.created);
    return;
  }
  st.busy = true;
  auto then = [plan](session_actor* self, bool resumed, caf::response_promise& rp) {
    if (resumed)
      start_with_history(self, plan, rp);
    else
      start_run(self, plan, rp);
  };
  bool live = st.agent && st.agent->usable() && !st.dormant;
  // Like Hermes Studio's bridge, a new model or provider for a live agent of
  // the same profile is switched in place (the agent keeps what it knows);
  // only if the agent cannot switch is it rebuilt.
  if (live && changed && harness == "embedded" && st.harness == "embedded" &&
      (profile.empty() || profile == st.profile)) {
    switch_model want{model.empty() ? st.model : model, provider.empty() ? st.provider : provider};
    return apply_switch(self, std::move(want), false,
                        [recipe, plan, rp, then](session_actor* self, const caf::error& why) mutable {
                          if (!why)
                            start_run(self, plan, rp);
                          else
                            build_agent(self, recipe, rp, then);
                        });
  }
  if (!live || changed)
    build_agent(self, std::move(recipe), rp, then);
  else
    start_run(self, std::move(plan), rp);
}


void on_closing(session_actor* self, run_closing& closing) {
  auto& st = self->state;
  const std::string& run_id = closing.run_id;
  if (run_id != st.run_id)
    return;
  st.busy = false;
  st.run_id.clear();
  st.last_used_at = now_seconds();
  if (closing.has_history) {
    st.history = std::move(closing.history); // the message is this actor's: no copy of a long conversation
    st.message_count = closing.message_count;
  }
  persist(self);
  if (auto it = st.starting.find(run_id); it != st.starting.end()) {
    it->second.deliver(chat_started_line(run_id, st.id), true);
    st.starting.erase(it);
  }
  for (auto& [_, rp] : st.syncing)
    rp.deliver(interrupted_line(st.id, true));
  st.syncing.clear();
  if (auto want = std::move(st.pending_switch); want && st.agent) {
    st.pending_switch.reset();
    apply_switch(self, std::move(*want), true, [](session_actor*, const caf::error&) {});
  }
}

// Runs `op` (a Python call on the session's agent, returning a string) on a
// thread of its own; answers KeyError when the session has no agent and the
// Python error when the call raises, else hands the string to `on_done`.
template <class Op, class OnDone>
void with_agent(session_actor* self, caf::response_promise rp, Op op, OnDone on_done) {
  auto& st = self->state;
  if (!st.created || !st.agent) {
    rp.deliver(make_error(errc::not_found, "unknown session: " + st.id));
    return;
  }
  auto agent = st.agent;
  blocking_call(self, [agent, op]() -> expected<std::string> { return catch_wire([&] { return op(*agent); }); })
    .then([=](std::string& payload) mutable { on_done(payload, rp); },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); }); // the broker encodes it
}

void on_interrupt(session_actor* self, const std::string& message, caf::response_promise rp) {
  auto& st = self->state;
  if (st.busy && st.replay_stop) { // a replay stops at its next event
    *st.replay_stop = true;
    self->send(st.links.broker, session_questions_cancelled{st.id, "interrupted"});
    uint64_t ticket = ++st.next_sync;
    st.syncing.emplace(ticket, rp);
    self->delayed_send(self, interrupt_sync_limit, sync_due_atom::value, ticket);
    return;
  }
  if (st.dormant || (st.created && !st.agent)) // nothing runs, nothing to stop
    return rp.deliver(interrupted_line(st.id, true));
  with_agent(
    self, rp,
    [message](bridge::agent_host& agent) {
      agent.interrupt(message);
      return std::string();
    },
    [self](const std::string&, caf::response_promise& rp) {
      auto& st = self->state;
      if (!st.busy)
        return rp.deliver(interrupted_line(st.id, true));
      // A turn blocked on a client's answer would not notice the interrupt.
      self->send(st.links.broker, session_questions_cancelled{st.id, "interrupted"});
      uint64_t ticket = ++st.next_sync;
      st.syncing.emplace(ticket, rp);
      self->delayed_send(self, interrupt_sync_limit, sync_due_atom::value, ticket);
    });
}

void on_steer(session_actor* self, const std::string& text, caf::response_promise rp) {
  if (self->state.dormant) // no turn to steer
    return rp.deliver(steer_line(false, text));
  with_agent(
    self, rp,
    [text](bridge::agent_host& agent) { return std::string(agent.steer(text) ? "yes" : ""); },
    [self, text](const std::string& accepted, caf::response_promise& rp) {
      auto& st = self->state;
      if (!accepted.empty() && !st.busy)
        st.idle_steer += (st.idle_steer.empty() ? "" : "\n") + text;
      rp.deliver(steer_line(!accepted.empty(), text));
    });
}

// Stops the live turn, if any, on the agent's own terms and the broker's.
void stop_turn(session_actor* self, const std::string& why, bool daemon_stops = false) {
  auto& st = self->state;
  if (st.busy && st.replay_stop) {
    *st.replay_stop = true;
    self->send(st.links.broker, session_questions_cancelled{st.id, why});
    return;
  }
  if (!st.busy || !st.agent)
    return;
  auto agent = st.agent;
  std::string message = protocol::dumps(json(why));
  blocking_detach(self, [agent, message, daemon_stops, broker = st.links.broker, id = st.id, why] {
    try {
      if (daemon_stops)
        agent->let_go(message);
      else
        agent->interrupt(message);
    } catch (const protocol::wire_error&) {
      // An agent that cannot be interrupted finishes its turn on its own.
    }
    // Its questions are settled only now: an approval denied before the
    // agent knew of the interrupt let it go on with the rest of its turn.
    caf::anon_send(broker, session_questions_cancelled{id, why});
  });
}

void init_state(session_state& st, std::string id, session_links links, const storage::session_row* dormant) {
  st.id = std::move(id);
  st.links = std::move(links);
  if (dormant) {
    st.created = st.dormant = true;
    st.history_loaded = false;
    st.created_at = dormant->created_at;
    st.last_used_at = dormant->last_used_at;
    st.message_count = dormant->message_count;
    adopt_config(st, dormant->config);
  }
}

void on_armed(session_actor* self, const std::string& run_id) {
  auto& st = self->state;
  if (auto it = st.starting.find(run_id); it != st.starting.end()) {
    it->second.deliver(chat_started_line(run_id, st.id), true);
    st.starting.erase(it);
  }
}

// A chat {wait: true} gets the run's result: at its end, or at its timeout.
void answer_waiting(session_actor* self, const std::string& run_id) {
  auto& st = self->state;
  if (auto it = st.waiting.find(run_id); it != st.waiting.end()) {
    deliver_result(self, run_id, it->second);
    st.waiting.erase(it);
  }
}

void on_run_done(session_actor* self, const std::string& run_id) {
  answer_waiting(self, run_id);
  auto& st = self->state;
  if (st.busy)
    return;
  for (auto& rp : st.draining)
    rp.deliver(true);
  st.draining.clear();
  if (st.destroyed)
    finish_destroy(self);
}

void on_sync_due(session_state& st, uint64_t ticket) {
  if (auto it = st.syncing.find(ticket); it != st.syncing.end()) {
    it->second.deliver(interrupted_line(st.id, false));
    st.syncing.erase(it);
  }
}

std::tuple<bool, std::string> profile_answer(const session_state& st) {
  return {st.created, st.profile.empty() ? std::string("default") : st.profile};
}

std::tuple<bool, double, std::string, std::string> status_answer(const session_state& st) {
  return {st.created, st.created_at, session_entry(st, false), session_entry(st, true)};
}

void on_history(session_actor* self, caf::response_promise rp) {
  auto& st = self->state;
  auto answer = [id = st.id](const std::string& history) {
    return object_writer{}.boolean("ok", true).str("session_id", id).raw("history", history).finish();
  };
  if (!st.created)
    return rp.deliver(error_line(protocol::key_error("unknown session: " + st.id)));
  if (st.history_loaded)
    return rp.deliver(answer(st.history));
  self->request(st.links.reader, caf::infinite, history_query{st.id})
    .then([=](std::string& history) mutable { rp.deliver(answer(history)); },
          [=](caf::error& err) mutable {
            rp.deliver(error_line("RuntimeError", "event log read failed: " + caf::to_string(err)));
          });
}

bool on_destroy(session_actor* self) {
  auto& st = self->state;
  bool existed = st.created;
  st.destroyed = true;
  persist(self);
  if (st.busy)
    stop_turn(self, "Session destroyed");
  else
    finish_destroy(self);
  return existed;
}

// Collecting frees the agent; the session stays listed and resumes on its
// next chat, exactly as after a restart.
bool collect_if_idle(session_actor* self, int64_t idle_seconds) {
  auto& st = self->state;
  if (st.busy || st.dormant || !st.agent ||
      now_seconds() - st.last_used_at < static_cast<double>(idle_seconds))
    return false;
  release_agent(self);
  st.dormant = true;
  return true;
}

void on_drain(session_actor* self, caf::response_promise rp) {
  auto& st = self->state;
  if (!st.busy)
    return rp.deliver(true);
  st.draining.push_back(rp);
  stop_turn(self, "hermes-bridge is shutting down", true);
}

caf::behavior session_behavior(session_actor* self, std::string id, session_links links,
                               std::shared_ptr<const storage::session_row> dormant) {
  init_state(self->state, std::move(id), std::move(links), dormant.get());
  // Answers that wait for the agent or the log go through a promise.
  auto later = [self](auto on, auto&&... args) {
    auto rp = self->make_response_promise();
    on(self, std::forward<decltype(args)>(args)..., rp);
    return rp;
  };
  return {
    [=](chat_atom, const std::string& request) { return later(on_chat, request); },
    [=](const run_armed& armed) { on_armed(self, armed.run_id); },
    [=](run_closing& closing) { on_closing(self, closing); },
    [=](const run_finished& done) { on_run_done(self, done.run_id); },
    [=](wait_due_atom, const std::string& run_id) { answer_waiting(self, run_id); },
    [=](const interrupt_turn& msg) { return later(on_interrupt, msg.message); },
    [=](sync_due_atom, uint64_t ticket) { on_sync_due(self->state, ticket); },
    [=](const steer_turn& msg) { return later(on_steer, msg.text); },
    [=](estimate_context& msg) { return later(on_estimate, std::move(msg)); },
    [=](switch_model& msg) { return later(on_switch_model, std::move(msg)); },
    [=](const profile_of&) { return profile_answer(self->state); },
    [=](history_atom) { return later(on_history); },
    [=](status_atom) { return status_answer(self->state); },
    [=](destroy_atom) { return on_destroy(self); },
    [=](const collect_idle& msg) { return collect_if_idle(self, msg.idle_seconds); },
    [=](drain_atom) { return later(on_drain); },
  };
}

} // namespace session_parts

caf::actor spawn_session(caf::actor_system& sys, const std::string& session_id,
                         const session_links& links) {
  return sys.spawn(session_parts::session_behavior, session_id, links, std::shared_ptr<const storage::session_row>());
}

caf::actor spawn_dormant_session(caf::actor_system& sys, const storage::session_row& row,
                                 const session_links& links) {
  return sys.spawn(session_parts::session_behavior, row.session_id, links,
                   std::make_shared<const storage::session_row>(row));
}

} // namespace hb::actors

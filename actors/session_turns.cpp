// A session's turns: a chat decides which agent it needs (kept, switched in
// place, rebuilt or resumed), the run's row is written, the run actor is
// started, and its end comes back as run_armed, run_closing, run_finished.
// (Interrupt, steer and history: session_calls.cpp.)
#include "actors/session_state.hpp"

#include "actors/blocking_call.hpp"
#include "actors/errors.hpp"
#include "actors/log_messages.hpp"
#include "actors/question_messages.hpp"
#include "actors/responses.hpp"
#include "actors/run.hpp"
#include "bridge/tmux/tui_command.hpp"
#include "protocol/names.hpp"

namespace hb::actors::session_parts {

using protocol::json;
using protocol::object_writer;

namespace {

void deliver_result(session_actor* self, const std::string& run_id, caf::response_promise rp) {
  self->request(self->state.links->reader, caf::infinite, result_query{run_id})
    .then([=](std::string& line) mutable { rp.deliver(chat_reply{run_id, self->state.id, std::move(line)}); },
          [=](caf::error& err) mutable {
            rp.deliver(err.category() == error_category ? err : log_failure("read failed", err));
          });
}

// `request`: what the agent reads for its turn (agent_request()).
void start_run(session_actor* self, chat_plan plan, std::string request, caf::response_promise rp) {
  std::string run_id = new_id();
  double started = now_seconds();
  // The row goes ahead of the opening: most often both share a commit.
  self->state.last_used_at = started;
  save_row(self);
  self->request(self->state.links->writer, caf::infinite,
                run_opening{run_id, self->state.id, started, plan.user_message})
    .then(
      [=](bool) mutable {
        auto& st = self->state;
        st.run_id = run_id;
        if (st.now == phase::destroyed)
          st.before = phase::running; // it ends the run it began, then goes
        else
          enter(self, phase::running);
        announce(self);
        if (plan.wait) {
          st.waiting.emplace(run_id, rp);
          if (plan.timeout > 0)
            self->delayed_send(self, std::chrono::microseconds(static_cast<int64_t>(plan.timeout * 1e6)),
                               wait_due{run_id});
        } else {
          st.starting.emplace(run_id, rp);
        }
        run_spec spec{run_id, st.id, std::move(request), std::move(st.idle_steer), st.agent,
                      caf::actor_cast<caf::actor>(self), st.links->broker, st.links->writer, {}};
        st.idle_steer.clear();
        st.replay_stop.reset();
        if (!plan.replay.empty()) {
          st.replay_stop = std::make_shared<std::atomic<bool>>(false);
          spec.replay = replay_spec{plan.replay, plan.replay_speed, st.links->db_path, st.replay_stop};
        }
        st.links->hosting.start_run(self->system(), std::move(spec));
      },
      [=](caf::error& err) mutable { fail_start(self, rp, log_failure("unavailable", err)); });
}

// A resumed session continues its stored conversation unless the client
// sends its own history (Hermes Studio always does and keeps control).
void start_with_history(session_actor* self, chat_plan plan, turn_input turn, caf::response_promise rp) {
  auto& st = self->state;
  if (!turn.history.empty() || st.message_count == 0)
    return start_run(self, std::move(plan), agent_request(turn, st.workspace, turn.history), rp);
  auto inject = [self, turn](const std::string& history, chat_plan plan, caf::response_promise rp) mutable {
    // The log keeps a JSON array; anything else is no history to give.
    bool array = !history.empty() && history.front() == '[';
    start_run(self, std::move(plan), agent_request(turn, self->state.workspace, array ? history : "[]"), rp);
  };
  if (st.history)
    return inject(*st.history, std::move(plan), rp);
  self->request(st.links->reader, caf::infinite, history_query{st.id})
    .then(
      [=](std::string& history) mutable {
        auto read = std::make_shared<const std::string>(std::move(history));
        self->state.history = read;
        inject(*read, plan, rp);
      },
      [=](caf::error& err) mutable { fail_start(self, rp, log_failure("read failed", err)); });
}

// Sets one key of the session's config object (kept as JSON text).
void set_config_field(session_state& st, const char* key, const std::string& value) {
  auto doc = json::parse(st.config, nullptr, false);
  if (!doc.is_object())
    doc = json::object();
  doc[key] = value;
  st.config = protocol::dumps(doc);
}

// A replay needs no agent: the session exists for it as it is.
void start_replay(session_actor* self, chat_request& chat, caf::response_promise rp) {
  auto& st = self->state;
  if (!st.listed) {
    st.listed = true;
    st.created_at = st.last_used_at = now_seconds();
    adopt_config(st, replay_session_config(st.id));
    persist(self);
  }
  st.before = st.now;
  enter(self, phase::starting);
  start_run(self, std::move(chat.plan), agent_request(chat.turn, "", ""), rp);
}

} // namespace

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

void fail_start(session_actor* self, caf::response_promise& rp, const caf::error& why) {
  auto& st = self->state;
  rp.deliver(why);
  if (!st.listed) // nothing to keep: the broker lets it go
    self->send(st.links->broker, session_unlisted{st.id});
  if (st.now == phase::destroyed)
    return finish_destroy(self);
  settle(self);
}

void build_agent(session_actor* self, agent_recipe recipe, caf::response_promise rp, after_build then) {
  auto built = std::make_shared<agent_ptr>();
  auto& st0 = self->state;
  std::string id = st0.id;
  // An agent whose worker died resumes like a dormant session (a native TUI
  // that exited starts afresh, as before).
  bool resume = st0.before == phase::dormant ||
                (st0.listed && st0.agent && !st0.agent->usable() && st0.harness != "native" &&
                 recipe.harness == st0.harness && recipe.profile == st0.profile && recipe.model == st0.model &&
                 recipe.provider == st0.provider);
  // Like the seed, a session whose config changed is replaced: the old agent
  // goes whether or not the new one can be built, and before it is built (a
  // native TUI's tmux socket is reused by its replacement).
  auto old = std::move(st0.agent);
  auto make_agent = st0.links->hosting.make_agent;
  auto fail = [=](const caf::error& why) mutable {
    auto& st = self->state;
    if (!resume)
      st.listed = false; // a dormant session stays listed and resumable
    if (auto agent = std::move(*built))
      blocking_detach(self, [agent]() mutable {
        agent->close();
        agent.reset();
      });
    fail_start(self, rp, why);
  };
  blocking_call(self,
                [=]() mutable -> expected<std::string> {
                  if (old) {
                    old->close();
                    old.reset();
                  }
                  return catch_wire([&] {
                    std::string config;
                    *built = make_agent(id, recipe, config);
                    return config;
                  });
                })
    .then(
      [=](std::string& config) mutable {
        auto& st = self->state;
        if (st.now == phase::destroyed)
          return fail(make_error(errc::failed, "session " + id + " was destroyed"));
        st.agent = std::move(*built);
        st.listed = true;
        st.last_used_at = now_seconds();
        if (resume) {
          adopt_config(st, resumed_config(config, st.message_count));
        } else {
          st.created_at = st.last_used_at;
          adopt_config(st, config);
          st.history = no_history();
          st.history_unsaved = true;
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

// Only in fresh, dormant and idle sessions (the others refuse a chat).
void on_chat(session_actor* self, chat_request chat, caf::response_promise rp) {
  auto& st = self->state;
  if (chat.invalid)
    return rp.deliver(chat.invalid);
  auto& [session_id, recipe, plan, turn, invalid] = chat;
  auto& [profile, model, provider, harness, workspace] = recipe;
  if (harness.empty())
    harness = st.listed ? st.harness : st.links->default_harness;
  if (!plan.replay.empty())
    return start_replay(self, chat, rp);
  bool changed = st.listed && harness != st.harness;
  if (harness == "native") // the TUI has its own model and profile
    changed = changed || (!workspace.empty() && workspace != st.workspace);
  else
    changed = changed || (!profile.empty() && profile != st.profile) || (!model.empty() && model != st.model) ||
              (!provider.empty() && provider != st.provider);
  if (st.listed && !changed) {
    // Rebuilt (after a restart, idle collection or a TUI that exited) as it was.
    if (!st.has_live_agent()) {
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
    else if (st.listed && workspace != st.workspace) {
      st.workspace = workspace;
      set_config_field(st, "workspace", workspace);
    }
  }
  try {
    protocol::check_profile_name(profile); // a stored one too: the log may predate the check
    if (harness == "native") // `!cmd`, `/yolo`: the TUI's own commands, typed only when asked for as such
      bridge::check_native_text(turn.message_text, turn.tui_command);
  } catch (const protocol::wire_error& e) {
    return rp.deliver(to_error(e));
  }
  bool live = st.has_live_agent();
  st.before = st.now;
  enter(self, phase::starting);
  auto then = [plan, turn](session_actor* self, bool resumed, caf::response_promise& rp) {
    if (resumed)
      start_with_history(self, plan, turn, rp);
    else
      start_run(self, plan, agent_request(turn, self->state.workspace, turn.history), rp);
  };
  // Like Hermes Studio's bridge, a new model or provider for a live agent of
  // the same profile is switched in place (the agent keeps what it knows);
  // only if the agent cannot switch is it rebuilt.
  if (live && changed && harness == "embedded" && st.harness == "embedded" &&
      (profile.empty() || profile == st.profile)) {
    switch_model want{model.empty() ? st.model : model, provider.empty() ? st.provider : provider};
    return apply_switch(self, std::move(want), false,
                        [recipe, rp, then](session_actor* self, const caf::error& why) mutable {
                          if (!why)
                            then(self, false, rp);
                          else
                            build_agent(self, recipe, rp, then);
                        });
  }
  if (!live || changed)
    build_agent(self, std::move(recipe), rp, then);
  else
    then(self, false, rp);
}

void take_adopted(session_actor* self, bridge::adopted_agent adopted) {
  auto& st = self->state;
  st.agent = std::move(adopted.agent);
  st.before = phase::idle;
  st.now = phase::idle;
  if (!adopted.live_run.empty()) {
    st.now = phase::running;
    st.run_id = adopted.live_run;
    run_spec spec{st.run_id, st.id, {}, {}, st.agent, caf::actor_cast<caf::actor>(self), st.links->broker,
                  st.links->writer, {}};
    spec.continuing = true;
    st.links->hosting.start_run(self->system(), std::move(spec));
  }
  persist(self); // the broker learns it is running; the log row is unchanged
}

void on_armed(session_actor* self, const std::string& run_id) {
  auto& st = self->state;
  if (auto it = st.starting.find(run_id); it != st.starting.end()) {
    it->second.deliver(chat_reply{run_id, st.id, {}});
    st.starting.erase(it);
  }
}

void on_closing(session_actor* self, run_closing& closing) {
  auto& st = self->state;
  const std::string& run_id = closing.run_id;
  if (run_id != st.run_id)
    return;
  st.finishing_run = std::exchange(st.run_id, std::string());
  st.last_used_at = now_seconds();
  if (closing.has_history) {
    // The message is this actor's: its text moves, and the log writer's row shares it.
    st.history = std::make_shared<const std::string>(std::move(closing.history));
    st.history_unsaved = true;
    st.message_count = closing.message_count;
  }
  settle(self);
  persist(self);
  on_armed(self, run_id); // a run that ended before it was armed
  for (auto& [_, rp] : st.syncing)
    rp.deliver(interrupt_reply{st.id, true});
  st.syncing.clear();
  if (auto want = std::move(st.pending_switch); want && st.agent)
    apply_switch(self, std::move(*want), true, [](session_actor*, const caf::error&) {});
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
  if (st.finishing_run == run_id)
    st.finishing_run.clear();
  if (st.busy())
    return;
  for (auto& rp : st.draining)
    rp.deliver(true);
  st.draining.clear();
  if (st.now == phase::destroyed)
    finish_destroy(self);
}

} // namespace hb::actors::session_parts

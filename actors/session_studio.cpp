// What Hermes Studio asks of a session besides chat: switching the live
// agent's model in place, and estimating the context of the next turn.
#include "actors/session_state.hpp"

#include "actors/blocking_call.hpp"
#include "actors/daemon_log.hpp"
#include "actors/errors.hpp"
#include "protocol/json_text.hpp"
#include "protocol/request.hpp"

namespace hb::actors::session_parts {

using protocol::json;
using protocol::object_writer;

namespace {

// A named operation on the agent (agent_host::call) on a thread of its own:
// its JSON answer, or the agent's error.
auto call_agent(session_actor* self, std::string op, std::string args) {
  return blocking_call(self, [agent = self->state.agent, op = std::move(op), args = std::move(args)]() {
    return catch_wire([&] { return agent->call(op, args); });
  });
}

void log_switch_failure(const std::string& id, const std::string& why) {
  log_event(log_level::warn, "session.model_switch_failed", why, {{"session", id}});
}

switch_reply switch_answer(const std::string& id, const switch_model& want, bool loaded, bool switched,
                           const char* reason = "", bool deferred = false) {
  return switch_reply{id, want.model, want.provider, loaded, switched, deferred, reason};
}

} // namespace

// The agent switches model in place (its conversation stays); the config
// follows, and (`announce`) the next turn is told by the adapter.
void apply_switch(session_actor* self, switch_model want, bool announce, switch_done done) {
  std::string args = protocol::object_writer{}
                       .str("model", want.model)
                       .str("provider", want.provider)
                       .boolean("announce", announce)
                       .finish();
  call_agent(self, "switch_model", std::move(args))
    .then(
      [=](std::string& payload) {
        auto& st = self->state;
        auto got = json::parse(payload, nullptr, false);
        auto text = [&](const char* key) {
          return got.is_object() && got[key].is_string() ? got[key].get<std::string>() : std::string();
        };
        st.model = text("model");
        st.provider = text("provider");
        auto doc = json::parse(st.config, nullptr, false);
        if (doc.is_object() && got.is_object()) {
          for (const char* key : {"model", "provider", "base_url", "api_mode"})
            doc[key] = got[key];
          st.config = protocol::dumps(doc);
        }
        persist(self);
        done(self, caf::error{});
      },
      [=](caf::error& err) {
        log_switch_failure(self->state.id, error_message(err));
        done(self, err);
      });
}

void on_switch_model(session_actor* self, switch_model want, caf::response_promise rp) {
  auto& st = self->state;
  if (!st.listed || st.now == phase::dormant || !st.agent || st.harness == "native")
    return rp.deliver(switch_answer(st.id, want, false, false, "session_not_loaded"));
  if (st.busy()) {
    st.pending_switch = std::make_unique<switch_model>(want);
    return rp.deliver(switch_answer(st.id, want, true, false, "session_running", true));
  }
  apply_switch(self, std::move(want), true, [rp](session_actor* self, const caf::error& why) mutable {
    auto& st = self->state;
    if (why)
      rp.deliver(why); // the broker encodes it
    else
      rp.deliver(switch_answer(st.id, switch_model{st.model, st.provider}, true, true));
  });
}

// The estimate runs beside a live turn (it only reads the agent); a session
// without an agent gets one first, as a chat would build it.
void on_estimate(session_actor* self, estimate_context msg, caf::response_promise rp) {
  auto& st = self->state;
  auto estimate = [args = msg.args](session_actor* self, caf::response_promise& rp) {
    auto& st = self->state;
    estimate_reply base{st.id, st.profile.empty() ? "default" : st.profile, st.model, st.provider, {}};
    call_agent(self, "context_estimate", args)
      .then(
        [=](std::string& payload) mutable {
          base.estimate = std::move(payload);
          rp.deliver(std::move(base));
        },
        [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  };
  if (st.harness == "native" && st.listed)
    return rp.deliver(
      make_error(errc::failed, "context_estimate is not available for native sessions (the TUI keeps its own)"));
  if (st.has_live_agent())
    return estimate(self, rp);
  if (st.busy())
    return rp.deliver(make_error(errc::failed, "session " + st.id + " is already running"));
  auto recipe = std::move(msg.recipe);
  if (st.listed) { // rebuilt as it was
    recipe.profile = st.profile;
    recipe.model = st.model;
    recipe.provider = st.provider;
  }
  recipe.harness = "embedded";
  if (recipe.workspace.empty())
    recipe.workspace = st.workspace;
  st.before = st.now;
  enter(self, phase::starting);
  build_agent(self, std::move(recipe), rp, [estimate](session_actor* self, bool, caf::response_promise& rp) {
    settle(self); // built for the estimate alone: no turn follows
    persist(self);
    estimate(self, rp);
  });
}

} // namespace hb::actors::session_parts

#define CAF_SUITE session_fixture
#include "tests/actors/session_fixture.hpp"

#include "actors/errors.hpp"
#include "actors/log_messages.hpp"
#include "actors/question_messages.hpp"
#include "actors/run.hpp"
#include "actors/session_messages.hpp"
#include "actors/studio_messages.hpp"

namespace hb::test {

using namespace hb::actors;

namespace {

// The test lets held run openings through (a promise is the writer's to keep).
using release_atom = caf::atom_constant<caf::atom("release")>;

caf::behavior fake_broker(caf::event_based_actor*, std::shared_ptr<session_world> w) {
  return {
    [=](const session_questions_cancelled& c) { w->cancelled.push_back(c.reason); },
    [=](const session_unlisted& u) { w->unlisted.push_back(u.session_id); },
  };
}

caf::behavior fake_writer(caf::event_based_actor* self, std::shared_ptr<session_world> w) {
  return {
    [=](const run_opening& o) {
      w->opened_runs.push_back(o.run_id);
      w->puts_at_opening.push_back(w->puts.size());
      auto rp = self->make_response_promise();
      if (w->hold_openings)
        w->held_openings.push_back(rp);
      else
        rp.deliver(true);
      return rp;
    },
    [=](session_put& p) {
      p.row.history = p.history_text();
      w->puts.push_back(std::move(p.row));
      w->put_histories.push_back(std::move(p.history));
    },
    [=](release_atom) {
      for (auto& rp : std::exchange(w->held_openings, {}))
        rp.deliver(true);
    },
  };
}

caf::behavior fake_reader(caf::event_based_actor*, std::shared_ptr<session_world> w) {
  return {
    [=](const history_query&) { return w->stored_history; },
    [=](const result_query& q) {
      return protocol::object_writer{}.boolean("ok", true).str("run_id", q.run_id).str("status", "complete").finish();
    },
  };
}

} // namespace

session_fixture::session_fixture() {
  broker = keep(sys.spawn(fake_broker, world));
  writer = keep(sys.spawn(fake_writer, world));
  reader = keep(sys.spawn(fake_reader, world));
}

namespace {

session_links_ptr links_of(const caf::actor& broker, const caf::actor& writer, const caf::actor& reader,
                       std::shared_ptr<session_world> w) {
  session_links links{broker, writer, reader, "", "embedded", {}, w->activity};
  links.hosting.make_agent = [w](const std::string& id, const agent_recipe& recipe,
                                 std::string& config) -> std::shared_ptr<bridge::agent_host> {
    w->built.push_back(recipe);
    if (!w->build_fails_with.empty())
      throw protocol::value_error(std::exchange(w->build_fails_with, std::string()));
    config = protocol::object_writer{}
               .str("requested_session_id", id)
               .str("profile", recipe.profile.empty() ? "default" : recipe.profile)
               .str("model", recipe.model.empty() ? "m0" : recipe.model)
               .str("provider", recipe.provider)
               .str("harness", recipe.harness)
               .finish();
    auto agent = std::make_shared<counting_agent>();
    w->agents.push_back(agent);
    return agent;
  };
  links.hosting.start_run = [w](caf::actor_system&, run_spec spec) { w->runs.push_back(std::move(spec)); };
  links.hosting.adopt = [w](const std::string& id) -> std::optional<bridge::adopted_agent> {
    auto it = w->survivors.find(id);
    if (it == w->survivors.end())
      return std::nullopt;
    auto found = std::move(it->second);
    w->survivors.erase(it);
    return found;
  };
  return std::make_shared<const session_links>(std::move(links));
}

} // namespace

caf::actor session_fixture::session(const std::string& id) {
  auto s = keep(spawn_session(sys, id, links_of(broker, writer, reader, world)));
  deliver();
  return s;
}

caf::actor session_fixture::dormant(const std::string& id, int64_t message_count) {
  storage::session_row row;
  row.session_id = id;
  row.created_at = 10;
  row.last_used_at = 20;
  row.config = R"({"profile": "work", "model": "m1", "provider": "p1", "harness": "embedded"})";
  row.message_count = message_count;
  auto s = keep(spawn_dormant_session(sys, row, links_of(broker, writer, reader, world)));
  deliver();
  return s;
}

void session_fixture::arm(const caf::actor& s, const std::string& run_id) {
  caf::anon_send(s, run_armed{run_id});
  deliver();
}

void session_fixture::close(const caf::actor& s, const std::string& run_id, const std::string& history) {
  caf::anon_send(s, run_closing{run_id, !history.empty(), history, history.empty() ? 0 : 1});
  deliver();
}

void session_fixture::finish(const caf::actor& s, const std::string& run_id) {
  caf::anon_send(s, run_finished{run_id});
  deliver();
}

std::string session_fixture::run_chat(const caf::actor& s, const std::string& line) {
  size_t before = world->runs.size();
  auto answer = chat(s, line);
  CAF_REQUIRE_EQUAL(world->runs.size(), before + 1);
  std::string run_id = world->runs.back().run_id;
  arm(s, run_id);
  CAF_REQUIRE(answer->has_value() && **answer);
  return run_id;
}

session_view session_fixture::view(const caf::actor& s) {
  auto v = ask<session_view>(s, session_query{});
  CAF_REQUIRE(v);
  return *v;
}

std::optional<session_activity::entry> session_fixture::activity_of(const caf::actor& s) {
  for (auto& [who, entry] : world->activity->all())
    if (who == s.id())
      return entry;
  return std::nullopt;
}

bool session_fixture::alive(const caf::actor& s) {
  auto v = ask_later<session_view>(s, session_query{});
  deliver();
  return v->has_value() && bool(**v);
}

void session_fixture::release_openings() {
  caf::anon_send(writer, release_atom::value);
  deliver();
}

std::string error_line_of(const std::optional<caf::expected<std::string>>& answer) {
  if (!answer || *answer)
    return "no error";
  return actors::error_line(answer->error());
}

} // namespace hb::test

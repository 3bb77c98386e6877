// The broker's session registry: one session actor per id, made on a first
// chat (or known from the log), asked what it is for list, status and
// health, and destroyed on request.
#include "actors/broker_state.hpp"

#include "actors/log_messages.hpp"
#include "actors/responses.hpp"
#include "actors/session.hpp"
#include "actors/session_messages.hpp"
#include "bridge/agent_hosting.hpp"

#include <algorithm>
#include <filesystem>

namespace hb::actors {

using protocol::object_writer;

session_links links_for_sessions(broker_actor* self) {
  const auto& settings = *self->state.settings;
  return session_links{caf::actor_cast<caf::actor>(self), self->state.links.writer,
                       self->state.links.readers.front(), settings.db_path,
                       settings.default_harness, daemon_hosting(settings.native)};
}

caf::actor session_actor_for(broker_actor* self, const std::string& id) {
  auto& st = self->state;
  if (auto it = st.sessions.find(id); it != st.sessions.end())
    return it->second;
  size_t max_sessions = st.settings->max_sessions;
  if (st.sessions.size() >= max_sessions)
    throw protocol::runtime_error("too many sessions (--max-sessions " + std::to_string(max_sessions) +
                                  "): destroy sessions that are no longer needed, or raise the limit");
  auto session = spawn_session(self->system(), id, links_for_sessions(self));
  st.sessions.emplace(id, session);
  return session;
}

const caf::actor* known_session(broker_actor* self, const std::string& id) {
  auto it = self->state.sessions.find(id);
  return it == self->state.sessions.end() ? nullptr : &it->second;
}

const caf::actor& existing_session(broker_actor* self, const std::string& id) {
  const caf::actor* session = known_session(self, id);
  if (!session)
    throw protocol::key_error("unknown session: " + id);
  return *session;
}

void forget_session_actor(broker_actor* self, const std::string& id, const caf::actor& which) {
  auto it = self->state.sessions.find(id);
  if (it != self->state.sessions.end() && it->second == which) {
    self->state.sessions.erase(it);
    self->state.activity.erase(id);
  }
}

void destroy_sessions(broker_actor* self, std::vector<caf::actor> sessions,
                      std::function<void(int64_t destroyed)> finish) {
  if (sessions.empty())
    return finish(0);
  auto left = std::make_shared<size_t>(sessions.size());
  auto count = std::make_shared<int64_t>(0);
  for (auto& session : sessions)
    self->request(session, session_reply_limit, destroy_session{})
      .then(
        [=](bool existed) {
          *count += existed ? 1 : 0;
          if (--*left == 0)
            finish(*count);
        },
        [=](caf::error&) {
          if (--*left == 0)
            finish(*count);
        });
}

namespace {

// Asks every session what it is and hands the created ones to `finish`
// once all have replied.
void survey_sessions(broker_actor* self, std::function<void(std::vector<session_view>&)> finish) {
  struct tally {
    size_t left;
    std::vector<session_view> views;
  };
  auto& sessions = self->state.sessions;
  auto t = std::make_shared<tally>(tally{sessions.size(), {}});
  if (sessions.empty())
    return finish(t->views);
  for (auto& [id, session] : sessions)
    self->request(session, session_reply_limit, session_query{})
      .then(
        [=](session_view& view) {
          if (view.created)
            t->views.push_back(std::move(view));
          if (--t->left == 0)
            finish(t->views);
        },
        [=](caf::error&) {
          if (--t->left == 0)
            finish(t->views);
        });
}

// Asks one session what it is; `finish` gets nothing for an unknown one.
void view_session(broker_actor* self, const reply_to& to, const std::string& id,
                  std::function<void(const session_view*)> finish) {
  const caf::actor* session = known_session(self, id);
  if (!session)
    return finish(nullptr);
  self->request(*session, session_reply_limit, session_query{})
    .then([=](session_view& view) { finish(view.created ? &view : nullptr); },
          [=](caf::error& err) { respond_failure(self, to, err); });
}

std::string destroyed_line(const std::string& id, bool destroyed) {
  return object_writer{}.boolean("ok", true).str("session_id", id).boolean("destroyed", destroyed).finish();
}

int64_t file_bytes(const std::string& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  return ec ? int64_t{0} : static_cast<int64_t>(size);
}

} // namespace

void on_request(broker_actor* self, const reply_to& to, requests::list&) {
  survey_sessions(self, [=](std::vector<session_view>& views) {
    std::stable_sort(views.begin(), views.end(),
                     [](const auto& a, const auto& b) { return a.created_at < b.created_at; });
    std::string items = "[";
    for (size_t i = 0; i < views.size(); ++i)
      items += (i ? ", " : "") + list_entry(views[i]);
    items += ']';
    respond(self, to, object_writer{}.boolean("ok", true).raw("sessions", items).finish());
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::status& r) {
  view_session(self, to, r.session_id, [=, id = r.session_id](const session_view* view) {
    respond(self, to, view ? status_line(*view) : unknown_session_status_line(id));
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::status_if_loaded& r) {
  view_session(self, to, r.session_id, [=, id = r.session_id](const session_view* view) {
    if (view)
      return respond(self, to, status_line(*view, true));
    respond(self, to, object_writer{}
                        .boolean("ok", true)
                        .str("session_id", id)
                        .boolean("exists", false)
                        .boolean("running", false)
                        .boolean("loaded", false)
                        .finish());
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::destroy& r) {
  std::string id = r.session_id;
  auto it = self->state.sessions.find(id);
  if (it == self->state.sessions.end())
    return respond(self, to, destroyed_line(id, false));
  caf::actor session = it->second;
  self->state.sessions.erase(it);
  self->state.activity.erase(id);
  self->request(session, session_reply_limit, destroy_session{})
    .then([=](bool existed) { respond(self, to, destroyed_line(id, existed)); },
          [=](caf::error&) { respond(self, to, destroyed_line(id, false)); });
}

void on_request(broker_actor* self, const reply_to& to, requests::destroy_all&) {
  std::vector<caf::actor> sessions;
  for (auto& [id, session] : self->state.sessions)
    sessions.push_back(session);
  self->state.sessions.clear();
  self->state.activity.clear();
  destroy_sessions(self, std::move(sessions), [=](int64_t count) {
    respond(self, to, object_writer{}.boolean("ok", true).integer("destroyed", count).finish());
  });
}

// What an operator (or a monitor) wants to know about a daemon that has been
// running for weeks.
void on_request(broker_actor* self, const reply_to& to, requests::health&) {
  survey_sessions(self, [=](std::vector<session_view>& views) {
    auto running = std::count_if(views.begin(), views.end(), [](const session_view& v) { return v.running; });
    auto& st = self->state;
    auto count = [](size_t n) { return static_cast<int64_t>(n); };
    std::vector<std::pair<const char*, int64_t>> counts = {
      {"sessions", count(views.size())},
      {"running", static_cast<int64_t>(running)},
      {"pending_questions", count(st.questions.size())},
      {"connections", count(st.connections.size())},
      {"subscribers", count(st.hub->size())},
      {"pending_request_bytes", static_cast<int64_t>(st.held_bytes)},
      {"queued_answer_bytes", static_cast<int64_t>(st.queued_bytes)},
      {"log_bytes", file_bytes(st.settings->db_path) + file_bytes(st.settings->db_path + "-wal")},
    };
    self->request(st.links.writer, session_reply_limit, log_health_query{})
      .then(
        [=](log_health& log) {
          // "degraded": the log takes no output now; what it holds and what
          // it had to give up on, so an operator sees it before a client does.
          object_writer state;
          state.str("state", log.degraded ? "degraded" : "ok");
          if (log.degraded)
            state.str("reason", log.reason).number("since", log.degraded_since);
          state.integer("held_operations", log.held_operations)
            .integer("held_bytes", log.held_bytes)
            .integer("failed_runs", log.failed_runs);
          object_writer w;
          w.boolean("ok", true)
            .str("status", log.degraded || !bridge::agents_available() ? "degraded" : "ok")
            .raw("log", state.finish());
          for (const auto& [name, value] : counts)
            w.integer(name, value);
          respond(self, to, w.integer("commits", log.commits)
                              .integer("committed_rows", log.rows)
                              .number("last_commit_ms", log.last_commit_ms)
                              .number("max_commit_ms", log.max_commit_ms)
                              .raw("agent", bridge::agents_json())
                              .raw("version", self->state.settings->version_json)
                              .finish());
        },
        [=](caf::error& err) { respond_failure(self, to, err); });
  });
}

} // namespace hb::actors

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

session_links_ptr links_for_sessions(broker_actor* self) {
  auto& st = self->state;
  if (!st.session_links) {
    const auto& settings = *st.settings;
    st.session_links = std::make_shared<const session_links>(
      session_links{caf::actor_cast<caf::actor>(self), st.links.writer, st.links.readers.front(), settings.db_path,
                    settings.default_harness, daemon_hosting(settings.native), st.activity});
  }
  return st.session_links;
}

caf::actor session_actor_for(broker_actor* self, const std::string& id) {
  auto& st = self->state;
  if (auto it = st.sessions.find(id); it != st.sessions.end())
    return it->second;
  size_t max_sessions = st.settings->max_sessions;
  if (st.sessions.size() >= max_sessions)
    throw protocol::runtime_error("too many sessions (--max-sessions " + std::to_string(max_sessions) +
                                  "): destroy sessions that are no longer needed, or raise the limit");
  auto session = new_session(self, id);
  st.sessions.emplace(id, session);
  return session;
}

caf::actor new_session(broker_actor* self, const std::string& id, const storage::session_row* dormant) {
  auto& spawn = self->state.links.spawn_session;
  if (spawn)
    return spawn(self->system(), id, links_for_sessions(self), dormant);
  if (dormant)
    return spawn_dormant_session(self->system(), *dormant, links_for_sessions(self));
  return spawn_session(self->system(), id, links_for_sessions(self));
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
  if (it != self->state.sessions.end() && it->second == which)
    self->state.sessions.erase(it);
}

std::vector<session_activity::entry> live_activity(broker_actor* self) {
  std::vector<session_activity::entry> live;
  for (auto& [who, entry] : self->state.activity->all()) {
    auto it = self->state.sessions.find(entry.session_id);
    if (it != self->state.sessions.end() && it->second.id() == who)
      live.push_back(std::move(entry));
  }
  return live;
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
    respond(self, to, encode(session_list_reply{std::move(views)}));
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::status& r) {
  view_session(self, to, r.session_id, [=, id = r.session_id](const session_view* view) {
    respond(self, to, encode(status_reply{id, view ? std::optional(*view) : std::nullopt, false}));
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::status_if_loaded& r) {
  view_session(self, to, r.session_id, [=, id = r.session_id](const session_view* view) {
    respond(self, to, encode(status_reply{id, view ? std::optional(*view) : std::nullopt, true}));
  });
}

void on_request(broker_actor* self, const reply_to& to, requests::destroy& r) {
  std::string id = r.session_id;
  auto it = self->state.sessions.find(id);
  if (it == self->state.sessions.end())
    return respond(self, to, encode(destroy_reply{id, false}));
  caf::actor session = it->second;
  self->state.sessions.erase(it);
  self->request(session, session_reply_limit, destroy_session{})
    .then([=](bool existed) { respond(self, to, encode(destroy_reply{id, existed})); },
          [=](caf::error&) { respond(self, to, encode(destroy_reply{id, false})); });
}

void on_request(broker_actor* self, const reply_to& to, requests::destroy_all&) {
  std::vector<caf::actor> sessions;
  for (auto& [id, session] : self->state.sessions)
    sessions.push_back(session);
  self->state.sessions.clear();
  destroy_sessions(self, std::move(sessions), [=](int64_t count) {
    respond(self, to, encode(destroyed_count_reply{std::nullopt, count}));
  });
}

// What an operator (or a monitor) wants to know about a daemon that has been
// running for weeks.
void on_request(broker_actor* self, const reply_to& to, requests::health&) {
  survey_sessions(self, [=](std::vector<session_view>& views) {
    auto& st = self->state;
    auto count = [](size_t n) { return static_cast<int64_t>(n); };
    health_reply health;
    health.agents_available = bridge::agents_available();
    health.sessions = count(views.size());
    health.running = std::count_if(views.begin(), views.end(), [](const session_view& v) { return v.running; });
    health.pending_questions = static_cast<int64_t>(st.open_questions);
    health.connections = count(st.connections.size());
    health.subscribers = count(st.hub->size());
    auto windows = st.links.windows->size();
    health.window_runs = count(windows.live_runs);
    health.window_ended_runs = count(windows.ended_runs);
    health.window_bytes = count(windows.bytes);
    health.pending_request_bytes = static_cast<int64_t>(st.held_bytes);
    health.queued_answer_bytes = static_cast<int64_t>(st.queued_bytes);
    health.log_bytes = file_bytes(st.settings->db_path) + file_bytes(st.settings->db_path + "-wal");
    health.agent = bridge::agents_json();
    health.version = st.settings->version_json;
    self->request(st.links.writer, session_reply_limit, log_health_query{})
      .then(
        [=](log_health& log) mutable {
          health.log = std::move(log);
          respond(self, to, encode(health));
        },
        [=](caf::error& err) { respond_failure(self, to, err); });
  });
}

} // namespace hb::actors

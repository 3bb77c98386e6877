#include "actors/broker.hpp"

#include "actors/broker_state.hpp"
#include "actors/daemon_log.hpp"
#include "actors/log_messages.hpp"
#include "actors/responses.hpp"
#include "actors/session.hpp"
#include "actors/session_messages.hpp"
#include "actors/studio_messages.hpp"
#include "actors/test_faults.hpp"
#include "bridge/agent_hosting.hpp"
#include "protocol/request.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace hb::actors {

using protocol::error_line;
using protocol::json;
using protocol::object_writer;

namespace {

// Sends a request to an actor that answers with a complete response line.
template <class... Ts>
void forward(broker_actor* self, const reply_to& to, const caf::actor& dest, Ts&&... xs) {
  self->request(dest, caf::infinite, std::forward<Ts>(xs)...)
    .then([=](std::string& line) { respond(self, to, std::move(line)); },
          [=](caf::error& err) { respond_failure(self, to, err); });
}

session_links links_for_sessions(broker_actor* self) {
  const auto& settings = *self->state.settings;
  return session_links{caf::actor_cast<caf::actor>(self), self->state.links.writer,
                       self->state.links.readers.front(), settings.db_path,
                       settings.default_harness, settings.native};
}

} // namespace

caf::actor session_actor_for(broker_actor* self, const std::string& id) {
  auto& st = self->state;
  auto it = st.sessions.find(id);
  if (it != st.sessions.end())
    return it->second;
  size_t max_sessions = st.settings->max_sessions;
  if (st.sessions.size() >= max_sessions)
    throw protocol::runtime_error("too many sessions (--max-sessions " + std::to_string(max_sessions) +
                                  "): destroy sessions that are no longer needed, or raise the limit");
  auto session = spawn_session(self->system(), id, links_for_sessions(self));
  st.sessions.emplace(id, session);
  return session;
}

void destroy_sessions(broker_actor* self, std::vector<caf::actor> sessions,
                      std::function<void(int64_t destroyed)> finish) {
  if (sessions.empty())
    return finish(0);
  auto left = std::make_shared<size_t>(sessions.size());
  auto count = std::make_shared<int64_t>(0);
  for (auto& session : sessions)
    self->request(session, session_reply_limit, destroy_atom::value)
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

void forget_session_actor(broker_actor* self, const std::string& id, const caf::actor& which) {
  auto it = self->state.sessions.find(id);
  if (it != self->state.sessions.end() && it->second == which) {
    self->state.sessions.erase(it);
    self->state.activity.erase(id);
  }
}

namespace {

const caf::actor* known_session(broker_actor* self, const std::string& id) {
  auto it = self->state.sessions.find(id);
  return it == self->state.sessions.end() ? nullptr : &it->second;
}

void chat(broker_actor* self, const reply_to& to, const json& req) {
  // Types the agent would only choke on later, inside a run: refused now.
  const json& history = protocol::field(req, "conversation_history");
  if (!history.is_null() && !history.is_array())
    throw protocol::value_error("conversation_history must be a list of messages");
  const json& message = protocol::has_field(req, "message") ? protocol::field(req, "message")
                                                            : protocol::field(req, "input");
  if (!message.is_null() && !message.is_string() && !message.is_array())
    throw protocol::value_error("message must be a string or a list of content blocks");
  std::string id = protocol::py_strip(protocol::field_str(req, "session_id"));
  if (id.empty())
    id = new_id();
  caf::actor session = session_actor_for(self, id);
  self->request(session, caf::infinite, chat_atom::value, protocol::dumps(req))
    .then(
      [=](std::string& line, bool created) {
        if (!created)
          forget_session_actor(self, id, session); // its agent could not be built
        respond(self, to, std::move(line));
      },
      [=](caf::error& err) { respond_failure(self, to, err); });
}

// Asks every session for its entry and answers once all have replied.
template <class Finish>
void survey_sessions(broker_actor* self, Finish finish) {
  struct tally {
    size_t left;
    std::vector<std::pair<double, std::string>> entries;
  };
  auto& sessions = self->state.sessions;
  auto t = std::make_shared<tally>(tally{sessions.size(), {}});
  if (sessions.empty())
    return finish(t->entries);
  for (auto& [id, session] : sessions) {
    self->request(session, session_reply_limit, status_atom::value)
      .then(
        [=](bool created, double created_at, std::string& entry, std::string&) {
          if (created)
            t->entries.emplace_back(created_at, std::move(entry));
          if (--t->left == 0)
            finish(t->entries);
        },
        [=](caf::error&) {
          if (--t->left == 0)
            finish(t->entries);
        });
  }
}

void list_sessions(broker_actor* self, const reply_to& to) {
  survey_sessions(self, [=](std::vector<std::pair<double, std::string>>& entries) {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string items = "[";
    for (size_t i = 0; i < entries.size(); ++i)
      items += (i ? ", " : "") + entries[i].second;
    items += ']';
    respond(self, to, object_writer{}.boolean("ok", true).raw("sessions", items).finish());
  });
}

void session_status(broker_actor* self, const reply_to& to, const json& req) {
  std::string id = protocol::field_str(req, "session_id");
  const caf::actor* session = known_session(self, id);
  if (!session)
    return respond(self, to, unknown_session_status_line(id));
  self->request(*session, session_reply_limit, status_atom::value)
    .then(
      [=](bool created, double, std::string&, std::string& status) {
        respond(self, to, created ? "{\"ok\": true, " + status.substr(1) : unknown_session_status_line(id));
      },
      [=](caf::error& err) { respond_failure(self, to, err); });
}

std::string destroyed_line(const std::string& id, bool destroyed) {
  return object_writer{}.boolean("ok", true).str("session_id", id).boolean("destroyed", destroyed).finish();
}

void destroy(broker_actor* self, const reply_to& to, const json& req) {
  std::string id = protocol::field_str(req, "session_id");
  auto it = self->state.sessions.find(id);
  if (it == self->state.sessions.end())
    return respond(self, to, destroyed_line(id, false));
  caf::actor session = it->second;
  self->state.sessions.erase(it);
  self->state.activity.erase(id);
  self->request(session, session_reply_limit, destroy_atom::value)
    .then([=](bool existed) { respond(self, to, destroyed_line(id, existed)); },
          [=](caf::error&) { respond(self, to, destroyed_line(id, false)); });
}

void destroy_all(broker_actor* self, const reply_to& to) {
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
void health(broker_actor* self, const reply_to& to) {
  survey_sessions(self, [=](std::vector<std::pair<double, std::string>>& entries) {
    int64_t running = 0;
    for (const auto& entry : entries)
      running += entry.second.find("\"running\": true") != std::string::npos;
    auto& st = self->state;
    int64_t sessions = static_cast<int64_t>(entries.size());
    int64_t questions = static_cast<int64_t>(st.questions.size());
    int64_t connections = static_cast<int64_t>(st.connections.size());
    int64_t watchers = static_cast<int64_t>(st.watchers.size());
    int64_t held = static_cast<int64_t>(st.held_bytes), queued = static_cast<int64_t>(st.queued_bytes);
    std::error_code ec;
    auto bytes = [&](const std::string& path) {
      auto size = std::filesystem::file_size(path, ec);
      return ec ? int64_t{0} : static_cast<int64_t>(size);
    };
    int64_t log_bytes = bytes(st.settings->db_path) + bytes(st.settings->db_path + "-wal");
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
          respond(self, to, object_writer{}
                              .boolean("ok", true)
                              .str("status", log.degraded || !bridge::agents_available() ? "degraded" : "ok")
                              .raw("log", state.finish())
                              .integer("sessions", sessions)
                              .integer("running", running)
                              .integer("pending_questions", questions)
                              .integer("connections", connections)
                              .integer("subscribers", watchers)
                              .integer("pending_request_bytes", held).integer("queued_answer_bytes", queued)
                              .integer("log_bytes", log_bytes)
                              .integer("commits", log.commits)
                              .integer("committed_rows", log.rows)
                              .number("last_commit_ms", log.last_commit_ms)
                              .number("max_commit_ms", log.max_commit_ms)
                              .raw("agent", bridge::agents_json()).raw("version", self->state.settings->version_json)
                              .finish());
        },
        [=](caf::error& err) { respond_failure(self, to, err); });
  });
}

void route(broker_actor* self, const reply_to& to, const json& req) {
  std::string action = protocol::py_strip(protocol::field_str(req, "action"));
  if (action.empty())
    throw protocol::value_error("action is required");
  auto& st = self->state;
  if (action == "ping") {
    object_writer w;
    w.boolean("ok", true).boolean("pong", true).number("time", now_seconds()).str("agent_root",
                                                                                  st.settings->agent_root);
    add_ping_fields(self, w);
    respond(self, to, w.finish());
  } else if (route_studio(self, to, action, req)) {
    // answered there
  } else if (action == "chat") {
    chat(self, to, req);
  } else if (action == "get_result") {
    forward(self, to, next_reader(self), result_query{protocol::field_str(req, "run_id")});
  } else if (action == "get_output") {
    get_output(self, to, req);
  } else if (action == "subscribe") {
    subscribe(self, to, req);
  } else if (action == "interrupt") {
    std::string id = protocol::field_str(req, "session_id");
    const caf::actor* session = known_session(self, id);
    if (!session)
      throw protocol::key_error("unknown session: " + id);
    forward(self, to, *session, interrupt_turn{protocol::dumps(protocol::field(req, "message"))});
  } else if (action == "steer") {
    std::string text = protocol::field_truthy(req, "text") ? protocol::field_str(req, "text")
                                                           : protocol::field_str(req, "message");
    text = protocol::py_strip(text);
    if (text.empty())
      throw protocol::value_error("text is required");
    std::string id = protocol::field_str(req, "session_id");
    const caf::actor* session = known_session(self, id);
    if (!session)
      throw protocol::key_error("unknown session: " + id);
    forward(self, to, *session, steer_turn{text});
  } else if (action == "approval_respond") {
    approval_respond(self, to, req);
  } else if (action == "compression_respond") {
    compression_respond(self, to, req);
  } else if (action == "get_history") {
    std::string id = protocol::field_str(req, "session_id");
    const caf::actor* session = known_session(self, id);
    if (!session)
      throw protocol::key_error("unknown session: " + id);
    forward(self, to, *session, history_atom::value);
  } else if (action == "destroy") {
    destroy(self, to, req);
  } else if (action == "destroy_all") {
    destroy_all(self, to);
  } else if (action == "list") {
    list_sessions(self, to);
  } else if (action == "health") {
    health(self, to);
  } else if (action == "status") {
    session_status(self, to, req);
  } else if (action == "shutdown") {
    respond(self, to, object_writer{}.boolean("ok", true).str("status", "shutting_down").finish());
    if (st.links.request_stop)
      st.links.request_stop();
  } else if (action == "test_fault" && test_fault_enabled("actions")) {
    std::string fault = protocol::field_str(req, "fault");
    auto why = caf::make_error(caf::sec::runtime_error, "killed by test_fault");
    if (fault == "kill_writer") {
      self->send_exit(st.links.writer, why);
    } else if (fault == "kill_broker") {
      self->quit(why);
      return;
    } else {
      throw protocol::value_error("unknown fault: " + fault);
    }
    respond(self, to, object_writer{}.boolean("ok", true).finish());
  } else {
    throw protocol::value_error("unknown action: " + action);
  }
}

} // namespace

// Same time whatever prefix matches, so the comparison leaks nothing.
bool token_matches(const std::string& expected, const json& given) {
  if (!given.is_string())
    return false;
  const std::string& text = given.get_ref<const std::string&>();
  unsigned char differs = text.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i)
    differs |= static_cast<unsigned char>(expected[i] ^ (i < text.size() ? text[i] : 0));
  return differs == 0;
}

// One request line: its place in the connection's order, keepalive and id.
void handle_line(broker_actor* self, handle h, const std::string& line) {
  auto& conn = self->state.connections.at(h.id());
  reply_to to{h, conn.next_request++, ""};
  json req;
  try {
    req = protocol::decode_request(line);
    const std::string& token = self->state.settings->token;
    if (!token.empty() && !conn.authenticated) {
      if (!token_matches(token, protocol::field(req, "token"))) {
        // A rejected client learns nothing but the rejection.
        conn.keepalive = false;
        conn.one_shot_taken = true;
        return respond(self, to, error_line("PermissionError", "unauthorized"));
      }
      authenticate(self, conn);
    }
    req.erase("token"); // never passed on, stored or logged
    // Every request says whether the connection stays: one without
    // "keepalive": true is the client's last, answered and then closed.
    conn.keepalive = protocol::field_truthy(req, "keepalive");
    if (protocol::has_field(req, "id"))
      to.id = protocol::dumps(protocol::field(req, "id"));
  } catch (const std::exception&) {
    conn.keepalive = false; // a line that is no request cannot ask to keep the connection
  }
  if (!self->state.settings->token.empty() && !conn.authenticated) {
    conn.keepalive = false;
    conn.one_shot_taken = true;
    return respond(self, to, error_line("PermissionError", "unauthorized"));
  }
  if (!conn.keepalive)
    conn.one_shot_taken = true; // like the seed: one request, then the answer, then close
  try {
    if (req.is_null())
      req = protocol::decode_request(line); // throws the decoding error again
    route(self, to, req);
  } catch (const protocol::wire_error& e) {
    respond_error(self, to, e);
  } catch (const std::exception& e) {
    respond(self, to, error_line("RuntimeError", e.what()));
  }
}

namespace {

void stop_serving(broker_actor* self) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  self->close(st.acceptor);
  if (!st.settings->socket_path.empty())
    ::unlink(st.settings->socket_path.c_str());
}

void collect_idle_sessions(broker_actor* self) {
  auto idle = static_cast<int64_t>(self->state.settings->idle_timeout.count());
  for (auto& [id, session] : self->state.sessions) {
    std::string sid = id;
    caf::actor which = session;
    self->request(which, session_reply_limit, collect_idle{idle})
      .then([=](bool collected) {
              if (collected)
                log_event(log_level::info, "session.idle_released", "", {{"session", sid}});
            },
            [](caf::error&) {});
  }
  self->delayed_send(self, self->state.settings->gc_interval, tick_atom::value);
}

caf::behavior broker_behavior(broker_actor* self, int listen_fd,
                              std::shared_ptr<const daemon_settings> settings, broker_links links,
                              std::shared_ptr<const known_sessions> dormant) {
  auto& st = self->state;
  st.settings = std::move(settings);
  st.links = std::move(links);
  for (const auto& row : *dormant) {
    st.sessions.emplace(row.session_id,
                        spawn_dormant_session(self->system(), row, links_for_sessions(self)));
    auto config = json::parse(row.config, nullptr, false);
    std::string profile = config.is_object() ? config.value("profile", "") : "";
    st.activity[row.session_id] = {profile.empty() ? "default" : profile, false};
  }
  st.acceptor = listen_on_fd(self, listen_fd);
  self->send(st.links.writer, log_watch{}); // commits are reported back for pushes
  self->delayed_send(self, st.settings->gc_interval, tick_atom::value);
  return {
    [=](const caf::io::new_connection_msg& msg) { on_new_connection(self, msg.handle); },
    [=](const caf::io::new_data_msg& msg) { on_data(self, msg); },
    [=](const caf::io::connection_closed_msg& msg) { on_connection_closed(self, msg.handle); },
    [=](const caf::io::data_transferred_msg& msg) { on_transferred(self, msg); },
    [=](const caf::io::acceptor_closed_msg&) {},
    [=](read_due_atom) {
      auto& st = self->state;
      st.sweep_armed = false;
      sweep_connections(self);
      if (!st.connections.empty() || !st.watchers.empty())
        arm_sweep(self);
    },
    [=](const log_committed& touched) { on_committed(self, touched); },
    [=](wait_due_atom, uint64_t key) { on_wait_due(self, key); },
    [=](question_asked& asked) { return open_question(self, asked); },
    [=](session_activity& a) {
      auto& st = self->state;
      if (st.sessions.count(a.session_id))
        st.activity[a.session_id] = {std::move(a.profile), a.running};
    },
    [=](gateway_approval_asked& asked) { open_gateway_question(self, asked); },
    [=](const question_due& due) { question_deadline(self, due); },
    [=](const session_questions_cancelled& cancelled) { cancel_questions(self, cancelled); },
    [=](const questions_withdrawn& gone) { withdraw_questions(self, gone); },
    [=](const run_questions_end& end) { return end_run_questions(self, end); },
    [=](tick_atom) { collect_idle_sessions(self); },
    [=](stop_atom) {
      stop_serving(self);
      auto rp = self->make_response_promise();
      auto& sessions = self->state.sessions;
      auto left = std::make_shared<size_t>(sessions.size());
      if (sessions.empty()) {
        rp.deliver(true);
        return rp;
      }
      for (auto& [id, session] : sessions)
        self->request(session, self->state.settings->drain_timeout, drain_atom::value)
          .then([=](bool) mutable { if (--*left == 0) rp.deliver(true); },
                [=](caf::error&) mutable { if (--*left == 0) rp.deliver(true); });
      return rp;
    },
  };
}

} // namespace

const caf::actor& next_reader(broker_actor* self) {
  auto& st = self->state;
  return st.links.readers[st.next_reader++ % st.links.readers.size()];
}

caf::actor spawn_broker(caf::actor_system& sys, int listen_fd,
                        std::shared_ptr<const daemon_settings> settings, broker_links links,
                        const known_sessions& dormant) {
  return sys.middleman().spawn_broker(broker_behavior, listen_fd, std::move(settings), std::move(links),
                                      std::make_shared<const known_sessions>(dormant));
}

} // namespace hb::actors

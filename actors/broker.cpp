#include "actors/broker.hpp"

#include "actors/blocking_call.hpp"
#include "actors/question_table.hpp"
#include "actors/session.hpp"
#include "bridge/python/embedded_agent.hpp"
#include "protocol/json_text.hpp"
#include "protocol/line_reader.hpp"
#include "protocol/request.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <unordered_map>

namespace hb::actors {

using protocol::error_line;
using protocol::json;
using protocol::object_writer;
using handle = caf::io::connection_handle;

namespace {

constexpr std::chrono::seconds session_reply_limit{5};

std::chrono::milliseconds read_sweep_period(std::chrono::milliseconds read_timeout) {
  return std::clamp(read_timeout / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

struct connection {
  protocol::line_reader reader;
  std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();
  bool answered = false; // one request per connection: later bytes are ignored
};

struct broker_state {
  std::shared_ptr<const daemon_settings> settings;
  broker_links links;
  size_t next_reader = 0;
  std::map<std::string, caf::actor> sessions;
  question_table questions;
  std::unordered_map<int64_t, connection> connections;
  caf::io::accept_handle acceptor;
  bool stopping = false;
  static inline const char* name = "broker";
};

using broker_actor = caf::stateful_actor<broker_state, caf::io::broker>;

// -- writing answers ----------------------------------------------------------

void respond(broker_actor* self, handle h, std::string line) {
  auto& conns = self->state.connections;
  if (conns.erase(h.id()) == 0)
    return; // the client left before its answer was ready
  line += '\n';
  self->write(h, line.size(), line.data());
  self->flush(h);
  self->close(h); // graceful: the answer is sent before the FIN
}

void respond_error(broker_actor* self, handle h, const protocol::wire_error& e) {
  respond(self, h, error_line(e));
}

void respond_failure(broker_actor* self, handle h, const caf::error& err) {
  respond(self, h, error_line("RuntimeError", "hermes-bridge internal error: " + caf::to_string(err)));
}

// Sends a request to an actor that answers with a complete response line.
template <class... Ts>
void forward(broker_actor* self, handle h, const caf::actor& dest, Ts&&... xs) {
  self->request(dest, caf::infinite, std::forward<Ts>(xs)...)
    .then([=](std::string& line) { respond(self, h, std::move(line)); },
          [=](caf::error& err) { respond_failure(self, h, err); });
}

const caf::actor& next_reader(broker_actor* self) {
  auto& st = self->state;
  return st.links.readers[st.next_reader++ % st.links.readers.size()];
}

// -- events the broker itself writes into a run's log -------------------------

void emit(broker_actor* self, const std::string& run_id, const json& event) {
  self->send(self->state.links.writer, event_atom::value, run_id, protocol::dumps(event),
             now_seconds());
}

json question_event(const char* name, const char* id_key, const std::string& id,
                    const std::string& request_json) {
  json event;
  event["event"] = name;
  event[id_key] = id;
  auto request = json::parse(request_json, nullptr, false);
  if (request.is_object())
    for (auto it = request.begin(); it != request.end(); ++it)
      event[it.key()] = it.value();
  return event;
}

json resolved_event(const std::string& approval_id, const std::string& choice,
                    const std::string& reason = {}) {
  json event;
  event["event"] = "approval.resolved";
  event["approval_id"] = approval_id;
  event["choice"] = choice;
  if (!reason.empty())
    event["reason"] = reason;
  return event;
}

std::string compression_failure(const std::string& request_id, const std::string& why) {
  json reply;
  reply["request_id"] = request_id;
  reply["failure"] = why;
  return protocol::dumps(reply);
}

// Answers a question nobody answered: approvals are denied (fail closed),
// compression fails. The log says why.
void settle_unanswered(broker_actor* self, question& q, const std::string& reason, bool timed_out) {
  switch (q.what) {
    case question::kind::terminal_approval:
      emit(self, q.run_id, resolved_event(q.id, "deny", reason));
      q.answer.deliver(std::string("deny"));
      break;
    case question::kind::gateway_approval:
      emit(self, q.run_id, resolved_event(q.id, "deny", reason));
      break;
    case question::kind::compression:
      q.answer.deliver(compression_failure(
        q.id, timed_out ? "bridge compression timed out" : "bridge compression cancelled: " + reason));
      break;
  }
}

caf::response_promise open_question(broker_actor* self, question::kind what,
                                    const std::string& run_id, const std::string& session_id,
                                    const std::string& request_json, int64_t timeout_ms) {
  auto rp = self->make_response_promise();
  std::string id = new_id();
  bool compression = what == question::kind::compression;
  emit(self, run_id,
       question_event(compression ? "bridge.compression.requested" : "approval.requested",
                      compression ? "request_id" : "approval_id", id, request_json));
  self->state.questions.add(question{what, id, run_id, session_id, rp});
  self->delayed_send(self, std::chrono::milliseconds(timeout_ms), deadline_atom::value, id);
  return rp;
}

// -- actions ------------------------------------------------------------------

std::string approval_line(const std::string& id, bool resolved, const std::string& choice) {
  return object_writer{}
    .boolean("ok", true)
    .str("approval_id", id)
    .boolean("resolved", resolved)
    .str("choice", choice)
    .finish();
}

void approval_respond(broker_actor* self, handle h, const json& req) {
  std::string id = protocol::py_strip(protocol::field_str(req, "approval_id"));
  if (id.empty())
    throw protocol::value_error("approval_id is required");
  std::string raw = protocol::field_truthy(req, "choice") ? protocol::py_str(protocol::field(req, "choice"))
                                                          : std::string("deny");
  std::string choice = protocol::py_lower(protocol::py_strip(raw));
  if (choice != "once" && choice != "session" && choice != "always" && choice != "deny")
    choice = "deny";
  const question* open = self->state.questions.find(id);
  if (!open || open->what == question::kind::compression)
    return respond(self, h, approval_line(id, false, choice));
  question q;
  self->state.questions.take(id, q);
  if (q.what == question::kind::terminal_approval) {
    // Logged before the agent gets the answer, so it precedes what it does next.
    emit(self, q.run_id, resolved_event(id, choice));
    q.answer.deliver(choice);
    return respond(self, h, approval_line(id, true, choice));
  }
  // hermes-agent waits for gateway answers itself and may have given up
  // already; only its own verdict says whether this answer counted. The
  // verdict is logged while the GIL still holds the woken agent back.
  std::string session_id = q.session_id, run_id = q.run_id;
  caf::actor writer = self->state.links.writer;
  blocking_call(self, [=] {
    return bridge::resolve_gateway_approval(session_id, choice, [&](int released) {
      auto event = released > 0 ? resolved_event(id, choice) : resolved_event(id, "deny", "timeout");
      caf::anon_send(writer, event_atom::value, run_id, protocol::dumps(event), now_seconds());
    }) > 0;
  }).then([=](bool resolved) { respond(self, h, approval_line(id, resolved, choice)); },
          [=](caf::error& err) { respond_failure(self, h, err); });
}

void compression_respond(broker_actor* self, handle h, const json& req) {
  std::string id = protocol::py_strip(protocol::field_str(req, "request_id"));
  if (id.empty())
    throw protocol::value_error("request_id is required");
  const json& messages = protocol::field(req, "messages");
  if (!messages.is_null() && !messages.is_array())
    throw protocol::value_error("messages must be a list");
  const question* open = self->state.questions.find(id);
  if (!open || open->what != question::kind::compression)
    throw protocol::runtime_error("compression request " + id + " not found");
  question q;
  self->state.questions.take(id, q);
  json reply;
  reply["request_id"] = id;
  reply["messages"] = messages;
  reply["system_message"] = protocol::field(req, "system_message");
  reply["error"] = protocol::field(req, "error");
  q.answer.deliver(protocol::dumps(reply));
  respond(self, h, object_writer{}.boolean("ok", true).str("request_id", id).boolean("handled", true).finish());
}

session_links links_for_sessions(broker_actor* self) {
  return session_links{caf::actor_cast<caf::actor>(self), self->state.links.writer,
                       self->state.links.readers.front()};
}

caf::actor session_for(broker_actor* self, const std::string& id) {
  auto& st = self->state;
  auto it = st.sessions.find(id);
  if (it != st.sessions.end())
    return it->second;
  auto session = spawn_session(self->system(), id, links_for_sessions(self));
  st.sessions.emplace(id, session);
  return session;
}

const caf::actor* known_session(broker_actor* self, const std::string& id) {
  auto it = self->state.sessions.find(id);
  return it == self->state.sessions.end() ? nullptr : &it->second;
}

void forget_session(broker_actor* self, const std::string& id, const caf::actor& which) {
  auto it = self->state.sessions.find(id);
  if (it != self->state.sessions.end() && it->second == which)
    self->state.sessions.erase(it);
}

void chat(broker_actor* self, handle h, const json& req) {
  std::string id = protocol::py_strip(protocol::field_str(req, "session_id"));
  if (id.empty())
    id = new_id();
  caf::actor session = session_for(self, id);
  self->request(session, caf::infinite, chat_atom::value, protocol::dumps(req))
    .then(
      [=](std::string& line, bool created) {
        if (!created)
          forget_session(self, id, session); // its agent could not be built
        respond(self, h, std::move(line));
      },
      [=](caf::error& err) { respond_failure(self, h, err); });
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

void list_sessions(broker_actor* self, handle h) {
  survey_sessions(self, [=](std::vector<std::pair<double, std::string>>& entries) {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string items = "[";
    for (size_t i = 0; i < entries.size(); ++i)
      items += (i ? ", " : "") + entries[i].second;
    items += ']';
    respond(self, h, object_writer{}.boolean("ok", true).raw("sessions", items).finish());
  });
}

void session_status(broker_actor* self, handle h, const json& req) {
  std::string id = protocol::field_str(req, "session_id");
  const caf::actor* session = known_session(self, id);
  if (!session)
    return respond(self, h, unknown_session_status_line(id));
  self->request(*session, session_reply_limit, status_atom::value)
    .then(
      [=](bool created, double, std::string&, std::string& status) {
        respond(self, h, created ? "{\"ok\": true, " + status.substr(1) : unknown_session_status_line(id));
      },
      [=](caf::error& err) { respond_failure(self, h, err); });
}

std::string destroyed_line(const std::string& id, bool destroyed) {
  return object_writer{}.boolean("ok", true).str("session_id", id).boolean("destroyed", destroyed).finish();
}

void destroy(broker_actor* self, handle h, const json& req) {
  std::string id = protocol::field_str(req, "session_id");
  auto it = self->state.sessions.find(id);
  if (it == self->state.sessions.end())
    return respond(self, h, destroyed_line(id, false));
  caf::actor session = it->second;
  self->state.sessions.erase(it);
  self->request(session, session_reply_limit, destroy_atom::value)
    .then([=](bool existed) { respond(self, h, destroyed_line(id, existed)); },
          [=](caf::error&) { respond(self, h, destroyed_line(id, false)); });
}

void destroy_all(broker_actor* self, handle h) {
  auto sessions = std::move(self->state.sessions);
  self->state.sessions.clear();
  auto left = std::make_shared<size_t>(sessions.size());
  auto count = std::make_shared<int64_t>(0);
  auto finish = [=] {
    respond(self, h, object_writer{}.boolean("ok", true).integer("destroyed", *count).finish());
  };
  if (sessions.empty())
    return finish();
  for (auto& [id, session] : sessions)
    self->request(session, session_reply_limit, destroy_atom::value)
      .then(
        [=](bool existed) {
          *count += existed ? 1 : 0;
          if (--*left == 0)
            finish();
        },
        [=](caf::error&) {
          if (--*left == 0)
            finish();
        });
}

void dispatch(broker_actor* self, handle h, const std::string& line) {
  json req;
  try {
    req = protocol::decode_request(line);
    std::string action = protocol::py_strip(protocol::field_str(req, "action"));
    if (action.empty())
      throw protocol::value_error("action is required");
    auto& st = self->state;
    if (action == "ping") {
      respond(self, h, object_writer{}
                         .boolean("ok", true)
                         .boolean("pong", true)
                         .number("time", now_seconds())
                         .str("agent_root", st.settings->agent_root)
                         .finish());
    } else if (action == "chat") {
      chat(self, h, req);
    } else if (action == "get_result") {
      forward(self, h, next_reader(self), result_atom::value, protocol::field_str(req, "run_id"));
    } else if (action == "get_output") {
      std::string run_id = protocol::field_str(req, "run_id");
      int64_t cursor = std::max<int64_t>(0, protocol::field_int(req, "cursor"));
      int64_t event_cursor = std::max<int64_t>(0, protocol::field_int(req, "event_cursor"));
      forward(self, h, next_reader(self), output_atom::value, run_id, cursor, event_cursor);
    } else if (action == "interrupt") {
      std::string id = protocol::field_str(req, "session_id");
      const caf::actor* session = known_session(self, id);
      if (!session)
        throw protocol::key_error("unknown session: " + id);
      forward(self, h, *session, interrupt_atom::value, protocol::dumps(protocol::field(req, "message")));
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
      forward(self, h, *session, steer_atom::value, text);
    } else if (action == "approval_respond") {
      approval_respond(self, h, req);
    } else if (action == "compression_respond") {
      compression_respond(self, h, req);
    } else if (action == "get_history") {
      std::string id = protocol::field_str(req, "session_id");
      const caf::actor* session = known_session(self, id);
      if (!session)
        throw protocol::key_error("unknown session: " + id);
      forward(self, h, *session, history_atom::value);
    } else if (action == "destroy") {
      destroy(self, h, req);
    } else if (action == "destroy_all") {
      destroy_all(self, h);
    } else if (action == "list") {
      list_sessions(self, h);
    } else if (action == "status" || action == "status_if_loaded") {
      session_status(self, h, req);
    } else if (action == "shutdown") {
      respond(self, h, object_writer{}.boolean("ok", true).str("status", "shutting_down").finish());
      if (st.links.request_stop)
        st.links.request_stop();
    } else {
      throw protocol::value_error("unknown action: " + action);
    }
  } catch (const protocol::wire_error& e) {
    respond_error(self, h, e);
  } catch (const std::exception& e) {
    respond(self, h, error_line("RuntimeError", e.what()));
  }
}

// -- connections --------------------------------------------------------------

void on_data(broker_actor* self, const caf::io::new_data_msg& msg) {
  auto& st = self->state;
  auto it = st.connections.find(msg.handle.id());
  if (it == st.connections.end() || it->second.answered)
    return;
  auto& conn = it->second;
  conn.reader.feed(std::string_view(msg.buf.data(), msg.buf.size()));
  auto line = conn.reader.next_line();
  if (conn.reader.overflowed()) {
    conn.answered = true;
    return respond_error(self, msg.handle,
                         protocol::value_error("request line exceeds " +
                                               std::to_string(conn.reader.max_line_bytes()) +
                                               " bytes (--max-line-bytes)"));
  }
  if (line) {
    conn.answered = true;
    dispatch(self, msg.handle, *line);
  }
}

// A client that never completes its request line gets an error instead of
// holding a connection forever. One sweep per period, not a timer per
// connection, keeps the cost flat at high request rates.
void expire_silent_connections(broker_actor* self) {
  auto& st = self->state;
  auto limit = st.settings->read_timeout;
  auto now = std::chrono::steady_clock::now();
  std::vector<int64_t> expired;
  for (auto& [id, conn] : st.connections)
    if (!conn.answered && now - conn.opened >= limit)
      expired.push_back(id);
  for (int64_t id : expired) {
    st.connections.at(id).answered = true;
    respond(self, handle::from_int(id),
            error_line("RuntimeError",
                       "no complete request line within " + std::to_string(limit.count()) + " ms"));
  }
  self->delayed_send(self, read_sweep_period(limit), read_due_atom::value);
}

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
    self->request(which, session_reply_limit, gc_atom::value, idle)
      .then([=](bool collected) {
              if (collected)
                std::cerr << "hermes-bridge: idle session " << sid << " released its agent" << std::endl;
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
  for (const auto& row : *dormant)
    st.sessions.emplace(row.session_id,
                        spawn_dormant_session(self->system(), row, links_for_sessions(self)));
  st.acceptor = self->add_doorman(static_cast<caf::io::network::native_socket>(listen_fd));
  self->delayed_send(self, st.settings->gc_interval, tick_atom::value);
  self->delayed_send(self, read_sweep_period(st.settings->read_timeout), read_due_atom::value);
  return {
    [=](const caf::io::new_connection_msg& msg) {
      auto& st = self->state;
      st.connections.emplace(msg.handle.id(), connection{protocol::line_reader(st.settings->max_line_bytes)});
      self->configure_read(msg.handle, caf::io::receive_policy::at_most(65536));
    },
    [=](const caf::io::new_data_msg& msg) { on_data(self, msg); },
    [=](const caf::io::connection_closed_msg& msg) { self->state.connections.erase(msg.handle.id()); },
    [=](const caf::io::acceptor_closed_msg&) {},
    [=](read_due_atom) { expire_silent_connections(self); },
    [=](approval_atom, const std::string& run_id, const std::string& session_id,
        const std::string& request, int64_t timeout_ms) {
      return open_question(self, question::kind::terminal_approval, run_id,
                           session_id, request, timeout_ms);
    },
    [=](compress_atom, const std::string& run_id, const std::string& session_id,
        const std::string& request, int64_t timeout_ms) {
      return open_question(self, question::kind::compression, run_id,
                           session_id, request, timeout_ms);
    },
    [=](gateway_atom, const std::string& run_id, const std::string& session_id,
        const std::string& request, int64_t timeout_ms) {
      std::string id = new_id();
      emit(self, run_id, question_event("approval.requested", "approval_id", id, request));
      self->state.questions.add(question{question::kind::gateway_approval, id, run_id, session_id, {}});
      // hermes-agent gives up at timeout_ms by itself; the log says so then.
      self->delayed_send(self, std::chrono::milliseconds(timeout_ms), deadline_atom::value, id);
    },
    [=](deadline_atom, const std::string& id) {
      question q;
      if (self->state.questions.take(id, q))
        settle_unanswered(self, q, "timeout", true);
    },
    [=](cancel_atom, const std::string& session_id, const std::string& reason) {
      for (auto& q : self->state.questions.take_all([&](const question& q) { return q.session_id == session_id; }))
        settle_unanswered(self, q, reason, false);
    },
    [=](run_end_atom, const std::string& run_id) {
      for (auto& q : self->state.questions.take_all([&](const question& q) { return q.run_id == run_id; }))
        settle_unanswered(self, q, "run ended", false);
      return true;
    },
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

caf::actor spawn_broker(caf::actor_system& sys, int listen_fd,
                        std::shared_ptr<const daemon_settings> settings, broker_links links,
                        const known_sessions& dormant) {
  return sys.middleman().spawn_broker(broker_behavior, listen_fd, std::move(settings), std::move(links),
                                      std::make_shared<const known_sessions>(dormant));
}

} // namespace hb::actors

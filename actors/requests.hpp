// Every action a client may ask for, as one closed type: a request line is
// decoded into one of these structs once, at the connection's edge, with its
// fields checked there (types, names that become paths, limits). Everything
// after that takes these values; no actor reads a request's JSON again.
//
// Adding an action: a struct here, its name and decoder in requests.cpp, a
// handler overload in the broker's router (actors/broker_router.cpp).
#pragma once

#include "actors/chat_request.hpp"

#include <cstdint>
#include <string>
#include <variant>

namespace hb::actors::requests {

struct ping {};
struct health {};
struct list {};
struct destroy_all {};
struct shutdown {};

using chat = chat_request;

struct get_result {
  std::string run_id;
};

struct get_output {
  std::string run_id;
  int64_t cursor = 0;       // not below 0
  int64_t event_cursor = 0; // not below 0
  bool include_output = true;
  int64_t wait_ms = 0;      // 0 to max_wait_ms: a long-poll when positive
};

// A run's output from the cursors on, or (session_id) every run of a session.
struct subscribe {
  std::string run_id;
  std::string session_id; // one of the two is set
  int64_t cursor = 0;
  int64_t event_cursor = 0;
};

// The actions that name a session and ask nothing else of it.
struct get_history {
  std::string session_id;
};
struct status {
  std::string session_id;
};
struct status_if_loaded {
  std::string session_id;
};
struct destroy {
  std::string session_id;
};

struct interrupt {
  std::string session_id;
  std::string message; // the request's "message" as JSON text (null when absent)
};

struct steer {
  std::string session_id;
  std::string text; // stripped, not empty
};

struct approval_respond {
  std::string approval_id;
  std::string choice; // once, session, always or deny (anything else: deny)
};

struct clarify_respond {
  std::string clarify_id;
  std::string response; // stripped
};

struct compression_respond {
  std::string request_id;
  std::string reply; // what the agent is handed: request_id, messages, system_message, error
};

struct context_estimate {
  std::string session_id; // empty: a new session
  agent_recipe recipe;
  std::string args; // bridge_ops' context_estimate arguments (JSON object)
};

struct switch_session_model {
  std::string session_id;
  std::string model; // not empty
  std::string provider;
};

// A named operation in a profile's agent environment (bridge_ops.py):
// slash commands, goals, titles (session-scoped: `session_id` set, run in
// the session's profile), skills and MCP servers (the profile's).
struct profile_op {
  std::string op;
  std::string session_id;
  std::string profile;       // "default" when the request names none
  bool profile_named = false; // the request named one (a fallback for an unknown session)
  std::string args;          // the request's other fields, a JSON object
};

// An mcp_* action Studio's bridge does not know: answered ok:false, not raised.
struct unknown_mcp {
  std::string action;
};

struct destroy_profile {
  std::string profile;
};

struct worker_ping {
  std::string profile;
  std::string worker_key; // the profile when the request names none
};

// Only with HERMES_BRIDGE_TEST_FAULTS=actions (actors/test_faults.hpp).
struct test_fault {
  std::string fault;
};

using any = std::variant<ping, health, list, destroy_all, shutdown, chat, get_result, get_output, subscribe,
                         get_history, status, status_if_loaded, destroy, interrupt, steer, approval_respond,
                         clarify_respond, compression_respond, context_estimate, switch_session_model,
                         profile_op, unknown_mcp, destroy_profile, worker_ping, test_fault>;

// What a request says about its connection, read before its action (and
// read even from a request whose action is refused).
struct envelope {
  bool keepalive = false; // answer and keep reading; else this is the last request
  std::string id;         // the client's "id" (JSON text) to echo; empty when absent
};

envelope read_envelope(const protocol::json& req);

// Throws protocol::wire_error with the seed's error names and texts
// (ValueError "unknown action: x", ...).
any decode(const protocol::json& req);

constexpr int64_t max_wait_ms = 30'000;

} // namespace hb::actors::requests

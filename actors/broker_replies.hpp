// The answers the broker gives from what it knows itself (its session
// registry, its connections, the log writer's health): one struct each,
// filled by its handler, written for the client by one encoder. JSON members
// that come from elsewhere (the agent's summary, the build, stored configs)
// are JSON text and spliced as they are.
#pragma once

#include "actors/log_messages.hpp"
#include "actors/session_messages.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hb::actors {

// {"ok": true}, and shutdown's {"ok": true, "status": "shutting_down"}.
struct done_reply {
  std::string status; // empty: none
};

// Sessions and turns per profile, from the sessions' activity (live_activity()).
struct activity_counts {
  int64_t sessions = 0;
  int64_t running = 0;
  std::map<std::string, int64_t> by_profile;
  std::map<std::string, int64_t> running_by_profile;
};

struct ping_reply {
  double time = 0;
  std::string agent_root;
  int64_t pid = 0;
  std::string endpoint;
  std::string workers = "{}";        // Studio's worker map (JSON object)
  std::string worker_details = "{}"; // JSON object
  activity_counts activity;
  std::string agent = "{}";   // JSON object: the agent as found
  std::string version = "{}"; // JSON object: this build
};

// Studio's per-profile worker ping, answered as its own bridge's worker does.
struct worker_ping_reply {
  double time = 0;
  int64_t pid = 0;
  std::string agent_root;
  std::string profile;
  std::string hermes_home;
  int64_t session_count = 0;
  int64_t running_session_count = 0;
  std::string worker_key;
};

// list: the sessions in the order given.
struct session_list_reply {
  std::vector<session_view> sessions;
};

// status and status_if_loaded (`if_loaded`) of one session; no view: a
// session this daemon does not know.
struct status_reply {
  std::string session_id;
  std::optional<session_view> view;
  bool if_loaded = false;
};

struct destroy_reply {
  std::string session_id;
  bool destroyed = false;
};

// destroy_all, and destroy_profile (which names its profile).
struct destroyed_count_reply {
  std::optional<std::string> profile;
  int64_t destroyed = 0;
};

// A profile operation's result, {"ok": true} merged with it: a result may say
// "ok": false itself (an MCP server that does not exist), and then the answer does.
struct profile_op_reply {
  std::string result; // JSON object
};

// An MCP action this daemon does not know: an answer, not an error, as
// Studio's bridge gives it.
struct unknown_mcp_reply {
  std::string action;
};

struct health_reply {
  log_health log;
  bool agents_available = true;
  int64_t sessions = 0;
  int64_t running = 0;
  int64_t pending_questions = 0;
  int64_t connections = 0;
  int64_t subscribers = 0;
  int64_t window_runs = 0;       // live runs whose last stretch the output hub keeps
  int64_t window_ended_runs = 0; // and ended runs it keeps for the poll that sees them end
  int64_t window_bytes = 0;      // their text, in bytes (at most 16 MiB)
  int64_t pending_request_bytes = 0;
  int64_t queued_answer_bytes = 0;
  int64_t log_bytes = 0;
  std::string agent = "{}";   // JSON object
  std::string version = "{}"; // JSON object
};

std::string encode(const done_reply& r);
std::string encode(const ping_reply& r);
std::string encode(const worker_ping_reply& r);
std::string encode(const session_list_reply& r);
std::string encode(const status_reply& r);
std::string encode(const destroy_reply& r);
std::string encode(const destroyed_count_reply& r);
std::string encode(const profile_op_reply& r);
std::string encode(const unknown_mcp_reply& r);
std::string encode(const health_reply& r);

} // namespace hb::actors

// A session actor: one per session id. It owns the session's agent and
// config, allows one run at a time and answers chat, interrupt, steer,
// history, status, destroy and idle collection. Each chat starts a run
// actor (detached: the turn blocks in Python) that reports back to it.
#pragma once

#include "actors/chat_request.hpp"
#include "actors/session_activity.hpp"
#include "actors/vocabulary.hpp"
#include "storage/log_rows.hpp"

#include <caf/actor.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace hb::bridge {
class agent_host;
struct adopted_agent;
}

namespace hb::actors {

struct run_spec;

// How a session gets an agent and runs a turn: the daemon's hosts and run
// actors (daemon_hosting), or stand-ins in the actor tests.
struct session_hosting {
  // Builds the agent `recipe` asks for and fills in the session's config.
  // Blocks (it is called off the scheduler); throws protocol::wire_error.
  std::function<std::shared_ptr<bridge::agent_host>(const std::string& session_id, const agent_recipe& recipe,
                                                    std::string& config_json)>
    make_agent;
  std::function<void(caf::actor_system&, run_spec)> start_run;
  // The agent a session known from the log still has in a worker that
  // outlived the last daemon, if any (taken once); may be empty.
  std::function<std::optional<bridge::adopted_agent>(const std::string& session_id)> adopt;
};

// The agents of bridge/agent_hosting.hpp and bridge/tmux, run by actors/run.hpp.
session_hosting daemon_hosting(std::shared_ptr<const bridge::native_options> native);

struct session_links {
  caf::actor broker;
  caf::actor writer;
  caf::actor reader;
  std::string db_path; // replays read recorded runs from it
  std::string default_harness = "embedded"; // for new sessions that name none
  session_hosting hosting;
  std::shared_ptr<session_activity> activity; // what each session is, for the broker to count
};

// Every session of a daemon holds the same links: one copy, shared.
using session_links_ptr = std::shared_ptr<const session_links>;

caf::actor spawn_session(caf::actor_system& sys, const std::string& session_id, session_links_ptr links);

// A session known from the event log: listed, resumable, no agent until its
// next chat, which rebuilds it with the same profile, model and provider.
caf::actor spawn_dormant_session(caf::actor_system& sys, const storage::session_row& row,
                                 session_links_ptr links);

} // namespace hb::actors

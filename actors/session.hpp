// A session actor: one per session id. It owns the session's agent and
// config, allows one run at a time and answers chat, interrupt, steer,
// history, status, destroy and idle collection. Each chat spawns a run
// actor (detached: the turn blocks in Python) that reports back to it.
#pragma once

#include "actors/vocabulary.hpp"
#include "bridge/tmux/native_session.hpp"
#include "storage/log_writer.hpp"

#include <caf/actor.hpp>

#include <memory>
#include <string>

namespace hb::actors {

struct session_links {
  caf::actor broker;
  caf::actor writer;
  caf::actor reader;
  std::string db_path; // replays read recorded runs from it
  std::string default_harness = "embedded"; // for new sessions that name none
  std::shared_ptr<const bridge::native_options> native;
};

caf::actor spawn_session(caf::actor_system& sys, const std::string& session_id,
                         const session_links& links);

// A session known from the event log: listed, resumable, no agent until its
// next chat, which rebuilds it with the same profile, model and provider.
caf::actor spawn_dormant_session(caf::actor_system& sys, const storage::session_row& row,
                                 const session_links& links);

} // namespace hb::actors

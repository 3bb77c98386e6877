// A chat with "replay" streams a recorded run back through the daemon: an
// agent host whose turn is the recording, with its deltas and events at the
// recorded pace (scaled), approvals asked of the client again. The client's
// answer is what the replay's approval.resolved reports; what the recording
// did next (its tool results, its text, its status) is replayed as it was.
#pragma once

#include "actors/run.hpp"
#include "bridge/agent_host.hpp"

#include <memory>

namespace hb::actors {

std::shared_ptr<bridge::agent_host> recorded_run(const replay_spec& replay);

} // namespace hb::actors

// The questions actor: the table of questions an agent waits on (approvals
// through the terminal callback or hermes-agent's gateway queue, compression
// requests, clarify questions), between the run that asks and the client that
// answers. Runs and sessions reach it through the broker (which delegates);
// clients' answers arrive from the broker as approval_answer, clarify_answer
// and compression_answer.
//
// Each question is settled exactly once: by the client's answer, its
// deadline, an interrupt or cancelled session, the TUI withdrawing it, or the
// end of its run. Whatever settles it is logged (through the run's output, so
// it precedes what the agent does next), and an unanswered approval is a deny.
#pragma once

#include "actors/question_messages.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <chrono>
#include <functional>
#include <set>
#include <string>

namespace hb::actors {

// Hands a client's choice to hermes-agent's own gateway approval queue where
// the session's agent runs, and says how many waiting requests it released;
// `while_holding_gil` hears that count (and why 0, when the answer could not
// be routed) before the woken agent can act. Blocks: it is called off the
// scheduler. bridge::resolve_gateway_approval in the daemon, a stand-in in tests.
using gateway_resolver =
  std::function<int(const std::string& session_id, const std::string& choice, const std::string& agent_request_id,
                    const std::string& bridge_token,
                    const std::function<void(int released, const std::string& failure)>& while_holding_gil)>;

// How long an answer to a question that is to be opened again after a
// restart (questions_links::reopening) waits for it.
constexpr std::chrono::seconds reopen_window{20};

struct questions_links {
  caf::actor writer; // where the questions' events go, behind the run's output
  gateway_resolver resolve_gateway;
  // Open in the log, in runs that go on after a restart: their runs open
  // them again under these ids within moments of the start. An answer that
  // comes first waits for that (at most reopen_window) instead of finding
  // no such question.
  std::set<std::string> reopening;
};

caf::actor spawn_questions(caf::actor_system& sys, questions_links links);

} // namespace hb::actors

// The daemon's one error type between actors, in CAF's own shape (a code of
// one enum in a category of ours, the words for the client in its context):
// handlers deliver a caf::error, callers take a caf::expected<T>, and the
// error is encoded into a wire error line once, where the answer leaves.
#pragma once

#include "protocol/wire_error.hpp"

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <cstdint>
#include <string>

namespace hb::actors {

enum class errc : uint8_t {
  bad_request = 1, // the client asked for something malformed (ValueError)
  not_found,       // an unknown session, run or question (KeyError)
  failed,          // the daemon could not do it (RuntimeError)
  wrong_type,      // a field of the wrong type (TypeError)
  agent_raised,    // the agent raised; its Python class name travels along
  pruned,          // a run whose output retention removed (RunPruned)
};

std::string to_string(errc code);

constexpr caf::atom_value error_category = caf::atom("hbridge");

// `python_type` only for agent_raised: the exception's class name.
caf::error make_error(errc code, std::string message, std::string python_type = {});
// The wire's Python names mapped back to codes (unknown names: agent_raised).
caf::error to_error(const protocol::wire_error& e);

template <class T>
using expected = caf::expected<T>;

// Runs `f` (which may throw protocol::wire_error) and keeps its outcome.
template <class F>
auto catch_wire(F&& f) -> expected<decltype(f())> {
  try {
    return f();
  } catch (const protocol::wire_error& e) {
    return to_error(e);
  }
}

// The words of an error of ours (for logs), else CAF's rendering of it.
std::string error_message(const caf::error& err);

// {"ok": false, "error": ..., "error_type": ...}: the one encoder. An error
// of another category (a dead actor, a timeout) is the daemon's own failure.
std::string error_line(const caf::error& err);

} // namespace hb::actors

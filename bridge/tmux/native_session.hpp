// A native session: the real `hermes` TUI running in a private tmux server,
// driven the way a person would (paste, Enter, Ctrl-C, /steer, the digit of
// an approval choice), its output mirrored from Hermes' own state.db. The tmux
// server outlives this object and the daemon; only close() ends it.
#pragma once

#include "bridge/agent_host.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hb::bridge {

struct native_options {
  std::string hermes_bin = "hermes"; // a command line: a name looked up on PATH, or a path, then arguments
  std::string runtime_dir;           // owner-only root of the per-session tmux dirs
  std::string hermes_home;           // the TUI's HERMES_HOME
  std::string state_db;              // Hermes' state.db as the TUI will write it
  std::chrono::milliseconds confirm_timeout{12'000}; // per delivery, before re-delivering once
  std::chrono::milliseconds settle_timeout{30'000};  // waiting for a quiet pane before pasting
  std::chrono::milliseconds interrupt_grace{6'000};  // Ctrl-C sent, no stop seen: the run ends saying so
  double approval_timeout_s = 60;
  size_t max_native = 32; // live TUIs at once (--max-native)
  int width = 160;
  int height = 48;
};

// The per-user default root: $XDG_RUNTIME_DIR/hermes-bridge/native, else
// $TMPDIR (or /tmp)/hermes-bridge-<uid>/native.
std::string default_native_runtime_dir();

// A turn an earlier daemon was mirroring when it went away, as its session's
// directory remembers it: the run, and Hermes' row of the message it delivered.
struct native_live_turn {
  std::string session_id;
  std::string run_id;
  int64_t row = 0;
};

// The live turns remembered under `runtime_dir` whose TUI still runs.
std::vector<native_live_turn> find_live_native_turns(const native_options& options);

class native_session final : public agent_host {
public:
  // Launches the TUI in `workspace` (empty: $HOME), or re-attaches to the
  // session's tmux server when it still runs. Throws protocol::wire_error
  // (FileNotFoundError for a missing hermes or tmux, ValueError for a bad
  // workspace, RuntimeError when tmux fails). config_json receives the
  // session's config: harness, workspace, tmux socket and target.
  static std::shared_ptr<native_session> create(const std::string& session_id,
                                                const std::string& workspace,
                                                const native_options& options,
                                                std::string& config_json);
  // Re-attaches to a TUI that runs `turn` (found by find_live_native_turns)
  // so that continue_turn() mirrors the rest of it; nullptr when the TUI is
  // gone or no longer remembers that turn. `history`: the session's
  // conversation before the turn, as the event log holds it.
  static std::shared_ptr<native_session> adopt(const native_live_turn& turn, const native_options& options,
                                               const std::string& history_json);
  ~native_session() override;

  void prepare_turn() override;
  turn_outcome run_turn(const std::shared_ptr<turn_sink>& sink, const std::string& request_json) override;
  // The adopted turn: its rows are mirrored again from its first, and what
  // the log holds (numbered up to `logged_seq`) is not sent twice.
  turn_outcome continue_turn(const std::shared_ptr<turn_sink>& sink, uint64_t logged_seq) override;
  // The approval prompt the adopted turn's TUI shows, if any (asked again
  // under its old id by continue_turn).
  std::vector<waiting_question> waiting_questions() const override;
  void interrupt(const std::string& message_json) override;
  void let_go(const std::string& message_json) override;
  bool steer(const std::string& text) override;
  bool usable() const override;
  std::string live_status() const override;
  void close() override;

  struct impl;

private:
  explicit native_session(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace hb::bridge

// One private tmux server holding one session ("main") that runs the hermes
// TUI. Private: its own socket in an owner-only directory and `-f /dev/null`,
// so neither the user's tmux.conf nor their other sessions are involved.
// Every call runs the tmux client with a deadline and throws
// protocol::wire_error (RuntimeError) when tmux fails.
#pragma once

#include "bridge/tmux/subprocess.hpp"

#include <optional>
#include <string>
#include <vector>

namespace hb::bridge {

// What asking tmux about the session said: it runs, it is known gone (no
// server on the socket, or no such session), or tmux could not be asked
// (a timeout, EAGAIN, any other error): a live TUI must never be taken
// for gone on that.
struct tmux_presence {
  enum state { running, gone, unknown } seen = unknown;
  std::string detail; // tmux's own words, for errors
};

// How tmux's answer reads (has-session's exit code and stderr, and whether
// the socket file exists at all).
tmux_presence read_presence(int exit_code, bool timed_out, const std::string& err, bool socket_exists);

class tmux_server {
public:
  tmux_server(std::string tmux_bin, std::string socket_path, std::string target = "main");

  const std::string& socket_path() const { return socket_; }
  const std::string& target() const { return target_; }
  std::string attach_command() const; // what a person types to watch

  // Starts the server running `command` (argv) in `workspace`, at a fixed
  // size, with a long history.
  void launch(const std::string& workspace, const std::vector<std::string>& command,
              const process_env& env, int width, int height) const;
  tmux_presence presence() const;
  bool gone() const { return presence().seen == tmux_presence::gone; } // known gone, not merely unanswered
  std::string capture() const; // the visible pane as text, wrapped lines joined
  void send_keys(const std::vector<std::string>& keys) const;
  // `text` as typed keys (no paste): one key press per character. A piece
  // ending in ';' would lose it (tmux reads a trailing ';' of an argument
  // as a command separator): those go as hex keys.
  void type_text(const std::string& text) const;
  // Bracketed paste of `bytes` (see paste_payload) into the pane.
  void paste(const std::string& bytes) const;
  void kill() const noexcept;

private:
  process_result run(std::vector<std::string> args, const std::string& input = {},
                     const process_env& env = {}) const;
  process_result checked(std::vector<std::string> args, const std::string& input = {},
                         const process_env& env = {}) const;

  std::string tmux_;
  std::string socket_;
  std::string target_;
};

// Native harnesses break on tmux older than this (key and paste handling).
constexpr const char* minimum_tmux = "3.3";

// Why this tmux cannot host native sessions ("tmux 3.2a is too old ..."),
// or nullopt when it can. Asks `tmux -V` once per binary.
std::optional<std::string> tmux_version_problem(const std::string& tmux_bin);

// POSIX shell quoting, for the one command string tmux hands to sh.
std::string shell_quote(const std::string& word);

// The command the pane runs: `cd -- DIR && exec ARGV...`, every word quoted.
// The workspace goes here, not to `new-session -c`, which tmux expands as a
// format (a directory named `#(cmd)` would run cmd).
std::string pane_command(const std::string& workspace, const std::vector<std::string>& argv);

// ValueError for a workspace tmux, the shell or a terminal could misread:
// control characters (C0, DEL, C1).
void check_workspace_text(const std::string& workspace);

} // namespace hb::bridge

#include "bridge/tmux/tmux_server.hpp"

#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <regex>

namespace hb::bridge {

namespace {

constexpr std::chrono::seconds tmux_deadline{10};

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

} // namespace

std::optional<std::string> tmux_version_problem(const std::string& tmux_bin) {
  static std::mutex mu;
  static std::map<std::string, std::optional<std::string>> known;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(tmux_bin); it != known.end())
    return it->second;
  std::optional<std::string> problem;
  try {
    auto r = run_process({tmux_bin, "-V"}, {}, std::chrono::seconds(5));
    std::string out = trimmed(r.out);
    std::smatch m;
    static const std::regex version(R"((\d+)\.(\d+))");
    if (r.exit_code != 0)
      problem = "cannot tell the tmux version (" + tmux_bin + " -V failed): native sessions need tmux " +
                minimum_tmux + " or newer";
    else if (out.find("master") != std::string::npos || out.find("next") != std::string::npos)
      problem = std::nullopt; // a development build: newer than any release
    else if (!std::regex_search(out, m, version))
      problem = "cannot tell the tmux version from '" + out + "': native sessions need tmux " + minimum_tmux +
                " or newer";
    else if (std::stoi(m[1]) < 3 || (std::stoi(m[1]) == 3 && std::stoi(m[2]) < 3))
      problem = out + " is too old: native sessions need tmux " + minimum_tmux + " or newer (" + tmux_bin + ")";
  } catch (const std::exception& e) {
    problem = std::string("cannot run ") + tmux_bin + " -V: " + e.what();
  }
  known[tmux_bin] = problem;
  return problem;
}

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string pane_command(const std::string& workspace, const std::vector<std::string>& argv) {
  std::string command = "cd -- " + shell_quote(workspace) + " && exec";
  for (const auto& word : argv)
    command += " " + shell_quote(word);
  return command;
}

void check_workspace_text(const std::string& workspace) {
  for (size_t i = 0; i < workspace.size(); ++i) {
    auto c = static_cast<unsigned char>(workspace[i]);
    bool c1 = c == 0xC2 && i + 1 < workspace.size() && static_cast<unsigned char>(workspace[i + 1]) >= 0x80 &&
              static_cast<unsigned char>(workspace[i + 1]) <= 0x9F;
    if (c < 0x20 || c == 0x7F || c1)
      throw protocol::value_error("workspace must not contain control characters: " +
                                  protocol::py_repr_string(workspace));
  }
}

tmux_presence read_presence(int exit_code, bool timed_out, const std::string& err, bool socket_exists) {
  std::string said = trimmed(err);
  if (exit_code == 0 && !timed_out)
    return {tmux_presence::running, said};
  if (!socket_exists)
    return {tmux_presence::gone, "no tmux socket"};
  if (timed_out)
    return {tmux_presence::unknown, "tmux did not answer within 10s"};
  // tmux's words for "nobody there": no server on the socket, a stale socket
  // nobody listens on, a server without our session.
  for (const char* none : {"no server running", "No such file or directory", "Connection refused",
                           "can't find session", "session not found"})
    if (said.find(none) != std::string::npos)
      return {tmux_presence::gone, said};
  return {tmux_presence::unknown, said.empty() ? "tmux failed (rc=" + std::to_string(exit_code) + ")" : said};
}

tmux_server::tmux_server(std::string tmux_bin, std::string socket_path, std::string target)
  : tmux_(std::move(tmux_bin)), socket_(std::move(socket_path)), target_(std::move(target)) {}

std::string tmux_server::attach_command() const {
  return "tmux -S " + shell_quote(socket_) + " attach -t " + target_;
}

process_result tmux_server::run(std::vector<std::string> args, const std::string& input,
                                const process_env& env) const {
  std::vector<std::string> argv{tmux_, "-S", socket_, "-f", "/dev/null"};
  argv.insert(argv.end(), args.begin(), args.end());
  process_env with = env;
  with.unset.push_back("TMUX"); // a daemon started from inside tmux must not nest into it
  try {
    return run_process(argv, input, tmux_deadline, with);
  } catch (const std::exception& e) {
    throw protocol::runtime_error(std::string("cannot run tmux: ") + e.what());
  }
}

process_result tmux_server::checked(std::vector<std::string> args, const std::string& input,
                                    const process_env& env) const {
  auto result = run(std::move(args), input, env);
  if (result.timed_out)
    throw protocol::runtime_error("tmux command timed out after 10s");
  if (result.exit_code != 0)
    throw protocol::runtime_error("tmux command failed (rc=" + std::to_string(result.exit_code) +
                                  "): " + trimmed(result.err));
  return result;
}

void tmux_server::launch(const std::string& workspace, const std::vector<std::string>& command,
                         const process_env& env, int width, int height) const {
  check_workspace_text(workspace);
  std::string size = std::to_string(width) + "x" + std::to_string(height);
  // One client invocation. history-limit only applies to panes created
  // after it, so it comes first; window options need the session to exist.
  // The pane's command is for sh (shell_quote is POSIX quoting), whatever
  // the user's $SHELL. Key bindings stay tmux's own: what the daemon types
  // goes to the pane directly (send-keys, paste-buffer), and a person who
  // attached needs C-b d to leave again.
  checked({"set-option", "-g", "history-limit", "100000", ";",
           "set-option", "-g", "default-shell", "/bin/sh", ";",
           "new-session", "-d", "-s", target_, "-x", std::to_string(width), "-y",
           std::to_string(height), pane_command(workspace, command), ";",
           "set-option", "-g", "default-size", size, ";",
           "set-option", "-g", "window-size", "manual", ";",
           "set-option", "-sg", "escape-time", "0", ";",
           "set-option", "-g", "status", "off"},
          {}, env);
}

tmux_presence tmux_server::presence() const {
  struct stat st {};
  bool socket_exists = ::stat(socket_.c_str(), &st) == 0;
  if (!socket_exists)
    return {tmux_presence::gone, "no tmux socket"};
  try {
    auto result = run({"has-session", "-t", target_});
    return read_presence(result.exit_code, result.timed_out, result.err, ::stat(socket_.c_str(), &st) == 0);
  } catch (const protocol::wire_error& e) {
    return {tmux_presence::unknown, e.what()}; // tmux could not even be started
  }
}

std::string tmux_server::capture() const {
  return checked({"capture-pane", "-p", "-J", "-t", target_}).out;
}

void tmux_server::send_keys(const std::vector<std::string>& keys) const {
  std::vector<std::string> args{"send-keys", "-t", target_};
  args.insert(args.end(), keys.begin(), keys.end());
  checked(std::move(args));
}

void tmux_server::type_text(const std::string& text) const {
  // tmux caps one command's size (its messages hold 16 KiB): pieces, each
  // ending on a UTF-8 character boundary.
  constexpr size_t piece = 2048;
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.size(), at + piece);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
      --end;
    size_t literal_end = end;
    while (literal_end > at && text[literal_end - 1] == ';')
      --literal_end;
    if (literal_end > at)
      checked({"send-keys", "-t", target_, "-l", "--", text.substr(at, literal_end - at)});
    if (literal_end < end) {
      std::vector<std::string> semicolons{"send-keys", "-t", target_, "-H"};
      semicolons.insert(semicolons.end(), end - literal_end, "3b");
      checked(std::move(semicolons));
    }
    at = end;
  }
}

void tmux_server::paste(const std::string& bytes) const {
  // A buffer per paste: a steer and a turn's message may be pasted into
  // different sessions' servers at once, never share a name by accident.
  static std::atomic<uint64_t> counter{0};
  std::string buffer = "hermes-bridge-" + std::to_string(++counter);
  checked({"load-buffer", "-b", buffer, "-"}, bytes);
  checked({"paste-buffer", "-p", "-d", "-b", buffer, "-t", target_});
}

void tmux_server::kill() const noexcept {
  try {
    run({"kill-server"});
  } catch (...) {
    // Nothing left to stop.
  }
}

} // namespace hb::bridge

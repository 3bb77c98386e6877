#include "bridge/tmux/tmux_server.hpp"

#include "protocol/wire_error.hpp"

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
  std::string shell_command = "exec";
  for (const auto& word : command)
    shell_command += " " + shell_quote(word);
  std::string size = std::to_string(width) + "x" + std::to_string(height);
  // One client invocation. history-limit only applies to panes created
  // after it, so it comes first; window options need the session to exist.
  // Key bindings stay tmux's own: what the daemon types goes to the pane
  // directly (send-keys, paste-buffer), and a person who attached needs
  // C-b d to leave again.
  checked({"set-option", "-g", "history-limit", "100000", ";",
           "new-session", "-d", "-s", target_, "-x", std::to_string(width), "-y",
           std::to_string(height), "-c", workspace, shell_command, ";",
           "set-option", "-g", "default-size", size, ";",
           "set-option", "-g", "window-size", "manual", ";",
           "set-option", "-sg", "escape-time", "0", ";",
           "set-option", "-g", "status", "off"},
          {}, env);
}

bool tmux_server::alive() const {
  try {
    auto result = run({"has-session", "-t", target_});
    return result.exit_code == 0;
  } catch (const protocol::wire_error&) {
    return false;
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
    checked({"send-keys", "-t", target_, "-l", "--", text.substr(at, end - at)});
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

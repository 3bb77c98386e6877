// The terminal client: `hermes-bridge chat` runs a turn on a running daemon
// and streams it live (text, tool calls, approvals asked on the terminal;
// Ctrl-C interrupts the run, a second Ctrl-C quits); `hermes-bridge call`
// sends one raw request and prints the answer; `hermes-bridge attach` puts
// the terminal into a native session's TUI.
#include "app/access.hpp"
#include "app/daemon_client.hpp"
#include "app/replay_render.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"
#include "app/tool_text.hpp"
#include "protocol/json_text.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <cstring>
#include <vector>

namespace hb::app {

using protocol::json;

namespace {

std::atomic<int> interrupts{0};

double wall_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

extern "C" void on_sigint(int) { interrupts.fetch_add(1); }

struct client_flags {
  std::string endpoint, session, profile, approve, message, request, harness, workspace, token_file;
  bool print = false;
  std::string token; // read from token_file once the command runs
};

// A daemon started with --token-file serves only requests that carry it.
json with_token(const client_flags& f, json req) {
  if (!f.token.empty() && req.is_object())
    req["token"] = f.token;
  return req;
}

void load_token(client_flags& f) {
  if (f.token_file.empty())
    return;
  try {
    f.token = read_token_file(expand_user(f.token_file));
  } catch (const std::runtime_error& e) {
    throw tool_error(exit_usage, e.what());
  }
}

std::string read_stdin() {
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

json request(const client_flags& f, const std::string& endpoint, const json& req) {
  json answer = json::parse(call_daemon(endpoint, protocol::dumps(with_token(f, req))), nullptr, false);
  if (!answer.is_object())
    throw tool_error(exit_failure, "the daemon's answer is not JSON");
  if (!answer.value("ok", false)) // the error may carry an agent's text
    throw tool_error(exit_failure, visible_text(answer.value("error_type", std::string("error")) + ": " +
                                                answer.value("error", std::string())));
  return answer;
}

// once / session / always / deny, from --approve or asked on the terminal.
std::string approval_choice(const client_flags& f, const json& ev) {
  if (!f.approve.empty())
    return f.approve;
  std::ifstream tty("/dev/tty");
  if (!tty) {
    std::fprintf(stderr, "\n[no terminal to ask: denied; use --approve once|deny]\n");
    return "deny";
  }
  // Quoted on a line of its own, controls shown: what is approved is what is read.
  std::fprintf(stderr, "\nApprove this command?\n  %s\n[o]nce, [s]ession, [a]lways, [d]eny: ",
               shell_quoted(ev.value("command", std::string())).c_str());
  std::string answer;
  std::getline(tty, answer);
  switch (answer.empty() ? 'd' : answer[0]) {
    case 'o': return "once";
    case 's': return "session";
    case 'a': return "always";
    default: return "deny";
  }
}

int chat(const client_flags& f) {
  std::string message = f.message;
  if (message.empty() || message == "-")
    message = read_stdin();
  if (message.empty())
    throw tool_error(exit_usage, "what should the agent do? give a message (or pipe it in)");
  if (!f.approve.empty() && f.approve != "once" && f.approve != "deny")
    throw tool_error(exit_usage, "--approve is once or deny, not '" + f.approve + "'");
  std::string endpoint = endpoint_from(f.endpoint);
  json req{{"action", "chat"}, {"message", message}};
  if (!f.session.empty())
    req["session_id"] = f.session;
  if (!f.profile.empty())
    req["profile"] = f.profile;
  if (!f.harness.empty())
    req["harness"] = f.harness;
  if (!f.workspace.empty())
    req["workspace"] = f.workspace;
  // hermes-agent starts a turn given no history from an empty conversation:
  // like Hermes Studio, the client sends the session's conversation so far
  // (a native session's TUI keeps its own).
  if (!f.session.empty() && f.harness != "native") {
    json status = request(f, endpoint, json{{"action", "status"}, {"session_id", f.session}});
    if (status.value("exists", false) && !status.contains("native") && status.value("message_count", 0) > 0)
      req["conversation_history"] =
        request(f, endpoint, json{{"action", "get_history"}, {"session_id", f.session}}).value("history", json::array());
  }
  json started = request(f, endpoint, req);
  std::string run_id = started.value("run_id", ""), session_id = started.value("session_id", "");
  std::fprintf(stderr, "[session %s, run %s]\n", visible_text(session_id).c_str(), visible_text(run_id).c_str());

  struct sigaction sa {};
  sa.sa_handler = on_sigint; // no SA_RESTART: a read wakes up to look
  ::sigaction(SIGINT, &sa, nullptr);
  daemon_connection stream(endpoint);
  stream.send_line(protocol::dumps(with_token(f, json{{"action", "subscribe"}, {"run_id", run_id}})));
  replay_renderer render(render_options{::isatty(STDOUT_FILENO) == 1, false});
  int handled = 0;
  std::string status = "running";
  for (;;) {
    int seen = interrupts.load();
    if (seen >= 2)
      return exit_interrupted;
    if (seen > handled) {
      handled = seen;
      std::fprintf(stderr, "\n[interrupting; Ctrl-C again to quit]\n");
      request(f, endpoint, json{{"action", "interrupt"}, {"session_id", session_id}, {"message", "Interrupted from the terminal"}});
    }
    auto line = stream.read_line(100);
    if (!line) {
      if (stream.timed_out())
        continue;
      break;
    }
    json chunk = json::parse(*line, nullptr, false);
    if (!chunk.is_object() || !chunk.value("ok", false))
      throw tool_error(exit_failure, "stream ended: " + visible_text(*line));
    for (const auto& ev : chunk.value("events", json::array())) {
      std::string out = render.event(protocol::dumps(ev), wall_now());
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
      if (ev.value("event", "") == "approval.requested") {
        std::string choice = approval_choice(f, ev);
        request(f, endpoint, json{{"action", "approval_respond"},
                               {"approval_id", ev.value("approval_id", "")}, {"choice", choice}});
      }
    }
    status = chunk.value("status", status);
    if (chunk.value("done", false))
      break;
  }
  std::fprintf(stdout, "\n");
  std::fprintf(stderr, "[%s]\n", visible_text(status).c_str());
  return status == "complete" ? exit_ok : status == "interrupted" ? exit_interrupted : exit_failure;
}

int call(const client_flags& f) {
  std::string line = f.request.empty() || f.request == "-" ? read_stdin() : f.request;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
    line.pop_back();
  if (line.empty())
    throw tool_error(exit_usage, "give the request, e.g. '{\"action\": \"ping\"}'");
  if (!f.token.empty()) {
    // A line that is not a JSON object goes as it is: the daemon's answer says what is wrong with it.
    json req = json::parse(line, nullptr, false);
    if (req.is_object())
      line = protocol::dumps(with_token(f, std::move(req)));
  }
  std::string answer = call_daemon(endpoint_from(f.endpoint), line);
  std::printf("%s\n", answer.c_str());
  json parsed = json::parse(answer, nullptr, false);
  return parsed.is_object() && parsed.value("ok", false) ? exit_ok : exit_failure;
}

// The native session's TUI, in this terminal: the daemon says where its
// private tmux server listens.
int attach(const client_flags& f) {
  if (f.session.empty())
    throw tool_error(exit_usage, "which session? give its id");
  json status = request(f, endpoint_from(f.endpoint), json{{"action", "status"}, {"session_id", f.session}});
  if (!status.value("exists", false))
    throw tool_error(exit_unknown, "no session " + f.session);
  json config = status.value("config", json::object());
  if (config.value("harness", "") != "native" || !config.contains("tmux_socket"))
    throw tool_error(exit_failure, "session " + f.session + " is not a native session: it has no TUI to attach to");
  std::string socket = config.value("tmux_socket", ""), target = config.value("tmux_target", "main");
  if (f.print) {
    std::printf("%s\n", visible_text(config.value("attach", "")).c_str());
    return exit_ok;
  }
  ::unsetenv("TMUX"); // attaching from inside tmux is what the person asked for
  std::vector<const char*> argv{"tmux", "-S", socket.c_str(), "attach", "-t", target.c_str(), nullptr};
  ::execvp("tmux", const_cast<char* const*>(argv.data()));
  throw tool_error(exit_failure, std::string("cannot run tmux: ") + std::strerror(errno));
}

} // namespace

void add_client_commands(CLI::App& app, std::function<int()>& chosen) {
  auto flags = std::make_shared<client_flags>();
  const std::string token_help = "a 0600 file holding the token of a daemon started with --token-file "
                                 "(env HERMES_BRIDGE_TOKEN_FILE)";
  auto* chat_cmd = app.add_subcommand("chat", "Run a turn on a running daemon and stream it live.");
  add_value(chat_cmd, "--endpoint", flags->endpoint, "the daemon (default: as `serve` finds it)");
  add_value(chat_cmd, "--session", flags->session, "session id (default: a new session)");
  add_value(chat_cmd, "--profile", flags->profile, "hermes profile");
  add_value(chat_cmd, "--approve", flags->approve, "answer every approval: once or deny (default: ask)");
  add_value(chat_cmd, "--harness", flags->harness, "embedded or native (default: the daemon's)");
  add_value(chat_cmd, "--workspace", flags->workspace, "native sessions: the TUI's working directory");
  chat_cmd->add_option("message", flags->message, "the message; omitted or - reads stdin");
  chat_cmd->footer(std::string("Ctrl-C interrupts the run; a second Ctrl-C quits.\n") + exit_codes_footer);
  add_value(chat_cmd, "--token-file", flags->token_file, token_help)->envname("HERMES_BRIDGE_TOKEN_FILE");
  on_chosen(chat_cmd, chosen, "chat", [flags] { load_token(*flags); return chat(*flags); });
  auto* call_cmd = app.add_subcommand("call", "Send one raw request to a running daemon; print the answer.");
  add_value(call_cmd, "--endpoint", flags->endpoint, "the daemon (default: as `serve` finds it)");
  call_cmd->add_option("request", flags->request, "the request line (JSON); omitted or - reads stdin");
  call_cmd->footer(std::string("Exit code 1 when the answer says ok: false.\n") + exit_codes_footer);
  add_value(call_cmd, "--token-file", flags->token_file, token_help)->envname("HERMES_BRIDGE_TOKEN_FILE");
  on_chosen(call_cmd, chosen, "call", [flags] { load_token(*flags); return call(*flags); });
  auto* attach_cmd = app.add_subcommand("attach", "Watch or type along in a native session's hermes TUI (tmux).");
  add_value(attach_cmd, "--endpoint", flags->endpoint, "the daemon (default: as `serve` finds it)");
  attach_cmd->add_option("session", flags->session, "the native session's id")->required();
  attach_cmd->add_flag("--print", flags->print, "print the tmux command instead of running it");
  attach_cmd->footer(std::string("Leave with C-b d; the TUI goes on.\n") + exit_codes_footer);
  add_value(attach_cmd, "--token-file", flags->token_file, token_help)->envname("HERMES_BRIDGE_TOKEN_FILE");
  on_chosen(attach_cmd, chosen, "attach", [flags] { load_token(*flags); return attach(*flags); });
}

} // namespace hb::app

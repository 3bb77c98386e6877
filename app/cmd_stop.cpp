// `hermes-bridge stop [--all]`: a clean stop of the daemon (the `shutdown`
// action: its live runs drained, its log committed, its workers stopped);
// with --all, also every agent worker of this user that outlived its daemon
// and waits for a new one (docs/workers.md, "When the daemon dies").
#include "app/access.hpp"
#include "app/daemon_client.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"
#include "app/worker_hosting.hpp"
#include "bridge/worker/worker_attach.hpp"
#include "bridge/worker/worker_events.hpp"
#include "protocol/json_text.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

namespace hb::app {

namespace {

struct stop_flags {
  std::string endpoint, token_file;
  bool all = false;
};

using clock = std::chrono::steady_clock;

template <class Pred> bool wait_for(Pred done, std::chrono::milliseconds deadline) {
  auto until = clock::now() + deadline;
  while (!done()) {
    if (clock::now() >= until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// False when no daemon answers there.
bool stop_daemon(const stop_flags& f) {
  std::string endpoint = endpoint_from(f.endpoint);
  protocol::object_writer req;
  req.str("action", "shutdown");
  if (!f.token_file.empty())
    req.str("token", read_token_file(expand_user(f.token_file)));
  try {
    call_daemon(endpoint, req.finish());
  } catch (const tool_error& e) {
    if (e.code != exit_unreachable)
      throw;
    std::printf("no daemon answers at %s\n", endpoint.c_str());
    return false;
  }
  bool stopped = wait_for([&] {
    try {
      call_daemon(endpoint, R"({"action": "ping"})");
      return false;
    } catch (const tool_error&) {
      return true;
    }
  }, std::chrono::seconds(60));
  if (!stopped)
    throw tool_error(exit_failure, "the daemon at " + endpoint + " was told to stop and still answers after 60 s");
  std::printf("stopped the daemon at %s (its workers with it)\n", endpoint.c_str());
  return true;
}

// Every worker that waits for a daemon, told to stop as a daemon would tell
// it (its turns interrupted, its questions answered fail-closed), killed if
// it is still there a few seconds later.
int stop_orphans() {
  std::string dir = default_worker_dir();
  if (!std::filesystem::is_directory(dir)) {
    std::printf("no agent workers: %s does not exist\n", dir.c_str());
    return 0;
  }
  bridge::worker::set_worker_event_sink([](const bridge::worker::worker_event& e) {
    if (e.warning)
      std::fprintf(stderr, "hermes-bridge stop: %s\n", e.message.c_str());
  });
  auto found = bridge::worker::attach_to_live_workers(dir, "", std::chrono::seconds(5));
  for (auto& w : found) {
    std::string bye = bridge::worker::encode(bridge::worker::to_worker{bridge::worker::shutdown{}});
    [[maybe_unused]] auto n = ::send(w.fd, bye.data(), bye.size(), MSG_NOSIGNAL);
    bool left = wait_for([&] { return !bridge::worker::process_alive(w.record.pid); }, std::chrono::seconds(6));
    if (!left)
      ::kill(w.record.pid, SIGKILL); // the pid its socket's peer credentials named a moment ago
    ::close(w.fd);
    std::printf("stopped agent worker %d (profile %s)%s\n", static_cast<int>(w.record.pid), w.record.profile.c_str(),
                left ? "" : ": killed, it did not exit");
  }
  if (found.empty())
    std::printf("no agent worker waits for a daemon\n");
  return 0;
}

int stop(const stop_flags& f) {
  bool daemon = stop_daemon(f);
  if (f.all)
    return stop_orphans();
  return daemon ? 0 : exit_unreachable;
}

} // namespace

void add_stop_command(CLI::App& app, std::function<int()>& chosen) {
  auto flags = std::make_shared<stop_flags>();
  auto* sub = app.add_subcommand("stop", "Stop the daemon cleanly; with --all, also every agent worker "
                                         "that outlived its daemon.");
  add_value(sub, "--endpoint", flags->endpoint, "the daemon (default: as `serve` finds it)");
  add_value(sub, "--token-file", flags->token_file,
            "a 0600 file holding the token of a daemon started with --token-file (env HERMES_BRIDGE_TOKEN_FILE)")
    ->envname("HERMES_BRIDGE_TOKEN_FILE");
  sub->add_flag("--all", flags->all,
                "also stop this user's agent workers whose daemon is gone (they would wait for a new "
                "daemon until their orphan timeout)");
  on_chosen(sub, chosen, "stop", [flags] { return stop(*flags); });
}

} // namespace hb::app

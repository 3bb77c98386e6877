#include "app/worker_hosting.hpp"

#include "actors/daemon_log.hpp"
#include "bridge/agent_hosting.hpp"
#include "bridge/worker/module_dir.hpp"
#include "bridge/worker/worker_events.hpp"
#include "bridge/worker/worker_pool.hpp"
#include "protocol/trust.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace hb::app {

using actors::log_event;
using actors::log_level;

void add_worker_flags(CLI::App& serve, worker_flags& flags) {
  serve.add_option("--workers-per-profile", flags.per_profile,
                   "worker processes per profile: auto (sessions only on workers done importing the agent, "
                   "a spare warmed in the background while all are busy, up to the cores, at most 4), or a "
                   "fixed count its sessions are spread over")
    ->envname("HERMES_BRIDGE_WORKERS_PER_PROFILE")
    ->check(CLI::IsMember({"auto"}) | CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--max-workers", flags.max_workers,
                   "worker processes in all, over every profile; a chat that needs one more is refused "
                   "(0: no limit)")
    ->envname("HERMES_BRIDGE_MAX_WORKERS")
    ->capture_default_str();
  serve.add_option("--worker-idle-timeout", flags.idle_timeout_s,
                   "seconds a worker with no session left keeps running (0: forever)")
    ->envname("HERMES_BRIDGE_WORKER_IDLE_TIMEOUT")
    ->check(CLI::NonNegativeNumber)
    ->capture_default_str();
  serve.add_option("--worker-max-rss-mb", flags.max_rss_mb,
                   "a worker using more memory is restarted once no turn runs in it (its sessions "
                   "resume from the log; 0: no limit)")
    ->envname("HERMES_BRIDGE_WORKER_MAX_RSS_MB")
    ->check(CLI::NonNegativeNumber)
    ->capture_default_str();
  serve.add_option("--worker-heartbeat-s", flags.heartbeat_s, "seconds between heartbeats to each worker")
    ->envname("HERMES_BRIDGE_WORKER_HEARTBEAT_S")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  serve.add_option("--worker-orphan-timeout-s", flags.orphan_timeout_s,
                   "seconds a worker whose daemon died (no clean stop) keeps its turns running and waits "
                   "for a new daemon to take it over (0: it stops its turns and exits at once)")
    ->envname("HERMES_BRIDGE_WORKER_ORPHAN_TIMEOUT_S")
    ->check(CLI::NonNegativeNumber)
    ->capture_default_str();
  serve.add_option("--worker-unresponsive-s", flags.unresponsive_s,
                   "a worker silent this long (no heartbeat answered) or not answering an interrupt "
                   "within it is killed; its runs end, its sessions resume in a new one")
    ->envname("HERMES_BRIDGE_WORKER_UNRESPONSIVE_S")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
}

namespace {

// Automatic workers per profile stop here even on a big machine: each holds
// an agent's memory (about 100 MB for the real one), and a profile's turns
// rarely need more processes than this to use the cores.
constexpr size_t max_auto_workers = 4;

// How long a surviving worker may take to answer an attach before it is
// left alone (a busy worker answers from its reading thread at once).
constexpr std::chrono::seconds survivor_deadline{10};

size_t usable_cores() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    return std::max(1, CPU_COUNT(&set)); // a container's or taskset's share, not the machine's
  return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

std::string default_worker_dir() {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg)
    return std::string(xdg) + "/hermes-bridge/workers";
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/hermes-bridge-" + std::to_string(::getuid()) + "/workers";
}

std::vector<bridge::worker::found_worker> attach_to_surviving_workers(const std::string& db_path) {
  bridge::worker::set_worker_event_sink([](const bridge::worker::worker_event& e) {
    log_event(e.warning ? log_level::warn : log_level::info, e.name, e.message, e.fields);
  });
  std::string dir = default_worker_dir();
  // Before anything is served or believed: the workers import their code
  // from here, and their records hold their secrets.
  protocol::make_trusted_dir(dir, "agent worker directory");
  return bridge::worker::attach_to_live_workers(dir, db_path, survivor_deadline);
}

namespace {

// Takes the survivors into the pool and offers their agents to the sessions
// (runs the log left running that nobody took: run_serve recovers them).
void adopt_survivors(bridge::worker::worker_pool& pool, std::vector<bridge::worker::found_worker> survivors,
                     storage::opened_log& log) {
  if (survivors.empty() && log.continuing.empty())
    return;
  std::map<std::string, std::string> continuing;
  for (const auto& [run, kept] : log.continuing)
    continuing[run] = kept.session_id;
  std::set<std::string> known;
  for (const auto& row : log.sessions)
    known.insert(row.session_id);
  bridge::offer_adopted_agents(pool.adopt(std::move(survivors), continuing, known));
}

} // namespace

// Agents in worker processes on the agent's own interpreter. Without one the
// daemon still serves: chats fail with what was tried, health says so.
int host_in_workers(const worker_flags& flags, const std::string& home, const bridge::agent_env& env,
                    actors::daemon_settings& settings, std::vector<bridge::worker::found_worker> survivors,
                    storage::opened_log& log) {
  bridge::worker::pool_options options;
  options.launch.runtime_dir = default_worker_dir();
  auto chosen = bridge::choose_interpreter(env);
  // Each refusal on a line of its own, so that an operator learns at start
  // why an interpreter they expected was passed over.
  for (const auto& c : chosen.candidates)
    if (c.probed && !c.ok)
      log_event(chosen.python ? log_level::info : log_level::warn, "agent.python_refused", c.reason,
                {{"python", c.python.display()}, {"source", c.python.source}});
  if (chosen.python) {
    options.launch.python = *chosen.python;
    options.launch.safe_path = bridge::worker::version_has_safe_path(chosen.probe.version);
    log_event(log_level::info, "agent.environment", "",
              {{"python", chosen.python->display()},
               {"source", chosen.python->source},
               {"version", chosen.probe.version},
               {"agent_root", env.agent_root.value_or("")},
               {"agent_version", chosen.probe.agent_version}});
  } else {
    options.unavailable = chosen.error;
    log_event(log_level::warn, "agent.unavailable", chosen.error);
  }
  options.launch.agent_root = env.agent_root.value_or("");
  options.launch.hermes_home = home;
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  options.launch.heartbeat = ms(flags.heartbeat_s);
  options.launch.unresponsive_after = ms(flags.unresponsive_s);
  options.launch.orphan_timeout = ms(flags.orphan_timeout_s);
  options.launch.daemon_key = log.writer->database().getFilename();
  options.per_profile = flags.per_profile == "auto" ? 0 : std::stoul(flags.per_profile);
  options.auto_cap = std::min<size_t>(usable_cores(), max_auto_workers);
  options.max_workers = flags.max_workers;
  options.idle_timeout = std::chrono::seconds(static_cast<int64_t>(flags.idle_timeout_s));
  options.max_rss_mb = flags.max_rss_mb;
  auto pool = std::make_shared<bridge::worker::worker_pool>(options);
  adopt_survivors(*pool, std::move(survivors), log);
  pool->start_housekeeping();
  pool->prestart("default"); // most chats name no profile
  bridge::host_agents_in_workers(pool, chosen.agent_json(), home, chosen.python.has_value());
  settings.agent_root = env.agent_root.value_or("None");
  return 0;
}

} // namespace hb::app

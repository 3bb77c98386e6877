#include "actors/daemon.hpp"

#include "actors/broker.hpp"
#include "actors/daemon_log.hpp"
#include "actors/log_actors.hpp"
#include "actors/studio_messages.hpp"
#include "bridge/agent_hosting.hpp"
#include "storage/finished_runs.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

namespace hb::actors {

namespace {

int stop_pipe[2] = {-1, -1};

void request_stop() {
  char byte = 1;
  // Async-signal-safe; a full pipe already means "stop".
  [[maybe_unused]] auto n = ::write(stop_pipe[1], &byte, 1);
}

extern "C" void on_stop_signal(int) { request_stop(); }

// glibc raises its mmap threshold (up to 32 MiB) and its trim threshold
// (twice that) each time a large block is freed, so after one big run
// up to 64 MiB per arena stays mapped for good: a 100,000-delta run and three
// full reads of it left 111 MB against a 25 MB baseline. Pinned, both stop
// moving. The values trade memory against speed: blocks of 4 MiB and more
// (floods, results of huge runs) get their own mappings, given back on free;
// an arena's top is returned past 8 MiB free. Lower values (128 KiB / 1 MiB
// were tried) make every multi-megabyte answer fault its pages in afresh:
// the tail read of a 100,000-delta run took 2.4 ms instead of 0.5 ms.
// The checkpointer's malloc_trim after big runs does the rest. (A no-op
// under ASan.)
void pin_allocator_thresholds() {
  ::mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
  ::mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
}

// CAF's default work-stealing scheduler keeps its workers (at least four)
// polling when there is no work: each woke every 10 ms to look for jobs to
// steal, so an idle daemon woke ~400 times a second and used 1 % of a core,
// and after every burst each worker spun and nanoslept for tens of
// milliseconds more. Work-sharing workers wait on one queue's condition
// variable until a job arrives, which wakes one of them at once. Stealing
// buys little here: the actors that work (the log writer and readers, runs)
// are detached, the broker runs on the I/O thread, and what the workers run
// (sessions) is light and brief. (What the polling did buy: it kept the
// VM's vCPUs awake, so W1's keepalive pings ran about a fifth faster; see
// tests/bench/RESULTS.md, W0.)
void quiet_scheduler(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("sharing"));
}

void wait_for_stop() {
  char byte;
  while (::read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
}

} // namespace

int serve(const daemon_settings& settings, int listen_fd, std::shared_ptr<storage::log_writer> log,
          const std::vector<storage::session_row>& dormant, const std::function<void()>& announce_ready) {
  pin_allocator_thresholds();
  if (::pipe2(stop_pipe, O_CLOEXEC) != 0) {
    std::perror("hermes-bridge: pipe");
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  caf::actor_system_config cfg;
  quiet_scheduler(cfg);
  cfg.load<caf::io::middleman>();
  add_studio_message_types(cfg);
  cfg.add_message_type<run_opening>("run_opening");
  caf::actor_system sys{cfg};
  auto shared = std::make_shared<const daemon_settings>(settings);
  retention_settings retention;
  retention.policy.max_age_s = settings.retain_days * 24 * 3600;
  retention.policy.max_bytes = settings.retain_mb * 1024 * 1024;
  retention.interval = settings.prune_interval;
  auto finished = std::make_shared<storage::finished_run_cache>(settings.finished_cache_bytes);
  auto writer = spawn_log_writer(sys, std::move(log), retention, finished);
  // Held: between commits the checkpointer has no timer pending, and an actor
  // nobody references is gone (the next commit could not wake it).
  auto checkpointer = spawn_log_checkpointer(sys, settings.db_path, std::chrono::milliseconds(1000));
  broker_links links;
  links.writer = writer;
  for (size_t i = 0; i < std::max<size_t>(1, settings.readers); ++i)
    links.readers.push_back(spawn_log_reader(sys, settings.db_path, finished));
  links.finished = finished;
  links.request_stop = request_stop;
  auto broker = spawn_broker(sys, listen_fd, shared, links, dormant);
  announce_ready();

  wait_for_stop();
  log_event(log_level::info, "daemon.stopping", "draining live runs");
  {
    caf::scoped_actor self{sys};
    self->request(broker, settings.drain_timeout + std::chrono::seconds(2), stop_atom::value)
      .receive([](bool) {}, [](caf::error&) {});
    self->request(writer, std::chrono::seconds(10), flush_atom::value, true)
      .receive([](bool) {}, [](caf::error& err) {
        log_event(log_level::error, "log.final_flush_failed", caf::to_string(err));
      });
  }
  // Live runs are committed: workers may go (each interrupts what is left).
  bridge::stop_agents(std::chrono::seconds(2));
  log_event(log_level::info, "daemon.stopped", "");
  // Agent threads that ignore interrupts may still hold the GIL; finalizing
  // Python or joining every actor could then hang. Everything that matters is
  // committed, so leave now.
  std::fflush(nullptr);
  ::_exit(0);
}

} // namespace hb::actors

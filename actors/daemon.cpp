#include "actors/daemon.hpp"

#include "actors/broker.hpp"
#include "actors/daemon_log.hpp"
#include "actors/log_actors.hpp"
#include "actors/log_messages.hpp"
#include "actors/question_messages.hpp"
#include "actors/questions.hpp"
#include "actors/run.hpp"
#include "actors/session_messages.hpp"
#include "actors/shared_run_windows.hpp"
#include "actors/studio_messages.hpp"
#include "bridge/agent_hosting.hpp"
#include "storage/finished_runs.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <cstdio>
#include <iostream>

namespace hb::actors {

namespace {

int stop_pipe[2] = {-1, -1};

constexpr char stop_byte = 1;
constexpr char handover_byte = 2;
// Messages an actor handles before others (and, for the broker, the sockets) get a turn.
constexpr size_t max_throughput = 32;

void request_stop() {
  char byte = stop_byte;
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
// buys little here: the actors that work (the log writer and readers, a
// turn's Python) are detached, the broker runs on the I/O thread, and what
// the workers run (sessions, runs) is light and brief. W1 and W4, measured
// pair by pair against work-stealing, lost nothing (tests/bench/RESULTS.md,
// W0).
//
// An actor also yields after max_throughput messages. CAF's default is no
// limit, and the broker runs on the I/O thread: while commit notices kept
// arriving faster than it handled them (an ASan build at 1 ms each), it
// never returned to the event loop, so the write interest of a line it had
// flushed was never registered and the line sat in CAF's buffer until the
// subscriber was cut off as a slow reader. Yielding every few dozen
// messages lets the loop serve the sockets between them.
void quiet_scheduler(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-throughput", max_throughput);
}

// The broker and the log writer never stop on their own: if either goes,
// the daemon can no longer serve or no longer keep what it serves. It then
// stops with what it can still settle and exits non-zero, so that its
// supervisor (systemd, Hermes Studio's manager) starts a fresh one, which
// recovers from the log.
struct actor_death {
  std::mutex mu;
  std::string who;
  std::string reason;
  std::atomic<bool> broker_gone{false};
  std::atomic<bool> writer_gone{false};
};

caf::behavior watchdog(caf::event_based_actor* self, caf::actor broker, caf::actor writer,
                       std::shared_ptr<actor_death> death) {
  self->monitor(broker);
  self->monitor(writer);
  auto broker_addr = broker.address();
  self->set_down_handler([=](caf::down_msg& down) {
    bool is_broker = down.source == broker_addr;
    (is_broker ? death->broker_gone : death->writer_gone) = true;
    {
      std::lock_guard<std::mutex> lock(death->mu);
      if (death->who.empty()) {
        death->who = is_broker ? "broker" : "log_writer";
        death->reason = caf::to_string(down.reason);
      }
    }
    log_event(log_level::error, "daemon.actor_died", "an actor the daemon cannot run without is gone",
              {{"actor", is_broker ? "broker" : "log_writer"}, {"reason", caf::to_string(down.reason)}});
    request_stop();
  });
  return {[](broker_stop) {}}; // it only watches
}

// What ends serving: a stop, or a successor that took the listening socket.
char wait_for_stop() {
  char byte = stop_byte;
  while (::read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
  return byte;
}

// The successor accepts from now on (app/handover.hpp). What was asked here
// is answered and what was written is committed; the workers are left
// running, each becomes an orphan at this exit and the successor attaches to
// it, so no turn is cut. Open questions stay open in the log: the successor
// opens them again under their ids.
[[noreturn]] void leave_to_successor(caf::actor_system& sys, const caf::actor& broker, const caf::actor& writer,
                                     const daemon_settings& settings) {
  log_event(log_level::info, "daemon.handing_over",
            "a successor took the listening socket: answering what was asked here, then leaving it the log "
            "and the workers");
  int exit_code = 0;
  {
    caf::scoped_actor self{sys};
    self->request(broker, settings.drain_timeout + std::chrono::seconds(2), broker_hand_over{})
      .receive([](bool) {}, [](caf::error&) {});
    self->request(writer, std::chrono::seconds(10), final_flush{true})
      .receive([](bool) {}, [&](caf::error& err) {
        exit_code = 1;
        log_event(log_level::error, "log.final_flush_failed", caf::to_string(err));
      });
  }
  log_event(log_level::info, "daemon.handed_over", "");
  std::fflush(nullptr);
  ::_exit(exit_code);
}

} // namespace

void request_handover() {
  char byte = handover_byte;
  [[maybe_unused]] auto n = ::write(stop_pipe[1], &byte, 1);
}

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
  // A request is one short line: after a read, CAF would read again until
  // the socket is empty, a failed system call per request. The next
  // iteration of the loop reads what else came.
  cfg.set("middleman.max-consecutive-reads", 1);
  add_studio_message_types(cfg);
  add_question_message_types(cfg);
  add_run_message_types(cfg);
  add_session_message_types(cfg);
  add_log_message_types(cfg);
  add_broker_message_types(cfg);
  caf::actor_system sys{cfg};
  auto shared = std::make_shared<const daemon_settings>(settings);
  retention_settings retention;
  retention.policy.max_age_s = settings.retain_days * 24 * 3600;
  retention.policy.max_bytes = settings.retain_mb * 1024 * 1024;
  retention.interval = settings.prune_interval;
  auto finished = std::make_shared<storage::finished_run_cache>(settings.finished_cache_bytes);
  auto windows = std::make_shared<shared_run_windows>();
  auto writer = spawn_log_writer(sys, std::move(log), retention, finished, windows);
  // Held: between commits the checkpointer has no timer pending, and an actor
  // nobody references is gone (the next commit could not wake it).
  auto checkpointer = spawn_log_checkpointer(sys, settings.db_path, std::chrono::milliseconds(1000));
  broker_links links;
  links.writer = writer;
  links.questions =
    spawn_questions(sys, questions_links{writer, bridge::resolve_gateway_approval, settings.reopening_questions});
  for (size_t i = 0; i < std::max<size_t>(1, settings.readers); ++i)
    links.readers.push_back(spawn_log_reader(sys, settings.db_path, finished));
  links.finished = finished;
  links.windows = windows;
  links.request_stop = request_stop;
  auto broker = spawn_broker(sys, listen_on(listen_fd), shared, links, dormant);
  auto death = std::make_shared<actor_death>();
  auto watching = sys.spawn(watchdog, broker, writer, death); // held: an actor nobody refers to is gone
  announce_ready();

  if (wait_for_stop() == handover_byte)
    leave_to_successor(sys, broker, writer, settings);
  int exit_code = 0;
  {
    std::lock_guard<std::mutex> lock(death->mu);
    if (!death->who.empty()) {
      exit_code = 1;
      log_event(log_level::error, "daemon.failing", "stopping after losing an actor; the supervisor should restart it",
                {{"actor", death->who}, {"reason", death->reason}});
    }
  }
  log_event(log_level::info, "daemon.stopping", "draining live runs");
  {
    caf::scoped_actor self{sys};
    if (!death->broker_gone) // (its runs are then settled by the next start's recovery)
      self->request(broker, settings.drain_timeout + std::chrono::seconds(2), broker_stop{})
        .receive([](bool) {}, [](caf::error&) {});
    if (death->writer_gone) {
      log_event(log_level::error, "log.final_flush_failed", "the log writer is gone: output it had not committed is lost");
    } else {
      self->request(writer, std::chrono::seconds(10), final_flush{true})
        .receive([](bool) {}, [&](caf::error& err) {
          exit_code = 1;
          log_event(log_level::error, "log.final_flush_failed", caf::to_string(err));
        });
    }
  }
  // Live runs are committed: workers may go (each interrupts what is left).
  bridge::stop_agents(std::chrono::seconds(2));
  if (exit_code == 0)
    log_event(log_level::info, "daemon.stopped", "");
  else
    log_event(log_level::error, "daemon.stopped", "", {{"exit_code", std::to_string(exit_code)}});
  // Agent threads that ignore interrupts may still hold the GIL; finalizing
  // Python or joining every actor could then hang. Everything that matters is
  // committed, so leave now.
  std::fflush(nullptr);
  ::_exit(exit_code);
}

} // namespace hb::actors

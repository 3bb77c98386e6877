// Event log numbers (a benchmark, not a test): SQLite's raw bulk-insert rate
// for our rows, the log writer actor's committed rate with many concurrent
// runs, the delay until one streaming run's delta is visible to readers,
// and start-up work (integrity check, recovery) on a log of a million events.
#include "actors/log_actors.hpp"
#include "actors/log_messages.hpp"
#include "actors/run_output.hpp"
#include "actors/vocabulary.hpp"
#include "storage/log_reader.hpp"
#include "storage/log_writer.hpp"
#include "storage/recovery.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono;
namespace fs = std::filesystem;
using hb::actors::log_flush;
using hb::actors::run_opening;

namespace {

const std::string text = "a delta of ordinary length ";

double seconds_since(steady_clock::time_point t) {
  return duration<double>(steady_clock::now() - t).count();
}

std::string fresh(const std::string& dir, const std::string& name) {
  fs::remove(dir + "/" + name);
  fs::remove(dir + "/" + name + "-wal");
  fs::remove(dir + "/" + name + "-shm");
  return dir + "/" + name;
}

// Deltas per second SQLite takes in one transaction through one prepared
// statement: the ceiling for our writer (a delta is one row, its event none).
double raw_bulk_rate(const std::string& dir, int deltas) {
  hb::storage::log_writer w(fresh(dir, "raw.db"));
  w.open_run("r", "s", 0);
  auto t = steady_clock::now();
  for (int i = 0; i < deltas; ++i)
    w.append_delta("r", text, 1.0);
  w.commit();
  return deltas / seconds_since(t);
}

// Many runs appending at once through the writer actor, as the daemon does.
double actor_rate(caf::actor_system& sys, const std::string& dir, int runs, int deltas_per_run) {
  auto log = std::make_shared<hb::storage::log_writer>(fresh(dir, "actor.db"));
  auto writer = hb::actors::spawn_log_writer(sys, log, {}, nullptr, nullptr);
  caf::scoped_actor self{sys};
  static int round = 0; // run ids unique across calls: each run has its queue
  std::string prefix = "round" + std::to_string(++round) + "-run";
  for (int r = 0; r < runs; ++r)
    self->request(writer, caf::infinite, run_opening{prefix + std::to_string(r), "s", 0.0, ""})
      .receive([](bool) {}, [](caf::error&) {});
  auto t = steady_clock::now();
  std::vector<std::thread> producers;
  for (int r = 0; r < runs; ++r)
    producers.emplace_back([&, r] {
      // As a run's sink sends (actors/run_output.hpp), without its waiting.
      std::string run_id = prefix + std::to_string(r);
      auto queue = hb::actors::open_run_output(run_id);
      for (int i = 0; i < deltas_per_run; ++i)
        hb::actors::send_run_output(writer, run_id, queue.get(), false, text, 1.0);
    });
  for (auto& p : producers)
    p.join();
  self->request(writer, caf::infinite, log_flush{}).receive([](bool) {}, [](caf::error&) {});
  double rate = static_cast<double>(runs) * deltas_per_run / seconds_since(t);
  caf::anon_send_exit(writer, caf::exit_reason::user_shutdown);
  return rate;
}

// One run streaming at an agent's pace: delay from send to readable.
std::vector<double> visibility_delays_us(caf::actor_system& sys, const std::string& dir, int deltas) {
  std::string path = fresh(dir, "latency.db");
  auto log = std::make_shared<hb::storage::log_writer>(path);
  auto writer = hb::actors::spawn_log_writer(sys, log, {}, nullptr, nullptr);
  caf::scoped_actor self{sys};
  self->request(writer, caf::infinite, run_opening{"r", "s", 0.0, ""})
    .receive([](bool) {}, [](caf::error&) {});
  hb::storage::log_reader reader(path);
  std::vector<double> delays;
  auto queue = hb::actors::open_run_output("r");
  for (int i = 0; i < deltas; ++i) {
    auto sent = steady_clock::now();
    hb::actors::send_run_output(writer, "r", queue.get(), false, text, 1.0);
    while (reader.read_run("r", 0, 1 << 30)->deltas.size() < static_cast<size_t>(i + 1)) {
    }
    delays.push_back(duration<double, std::micro>(steady_clock::now() - sent).count());
    std::this_thread::sleep_for(milliseconds(2)); // tokens arrive spaced out
  }
  caf::anon_send_exit(writer, caf::exit_reason::user_shutdown);
  std::sort(delays.begin(), delays.end());
  return delays;
}

void startup_on_big_log(const std::string& dir, int events) {
  std::string path = fresh(dir, "big.db");
  {
    hb::storage::log_writer w(path);
    int per_run = 1000;
    for (int r = 0; r * per_run < events; ++r) {
      std::string run_id = "run" + std::to_string(r);
      w.open_run(run_id, "s" + std::to_string(r % 100), 1.0);
      for (int i = 0; i < per_run; ++i)
        w.append_delta(run_id, text, 1.0); // and its event
      if ((r + 1) * per_run < events)
        w.close_run(run_id, "complete", std::string("{}"), std::nullopt, 2.0);
      w.commit();
    }
  }
  auto size_mb = static_cast<double>(fs::file_size(path)) / (1 << 20);
  auto t = steady_clock::now();
  hb::storage::log_writer w(path);
  double open_s = seconds_since(t);
  t = steady_clock::now();
  std::string verdict = hb::storage::check_integrity(w.database());
  double check_s = seconds_since(t);
  t = steady_clock::now();
  auto report = hb::storage::recover_open_runs(w.database(), 3.0);
  double recover_s = seconds_since(t);
  t = steady_clock::now();
  auto sessions = hb::storage::load_sessions(w.database());
  double load_s = seconds_since(t);
  std::printf("start-up on %d events (%.0f MB): open %.1f ms, quick_check %.1f ms (%s), "
              "recovery %.1f ms (%lld live run), sessions %.1f ms\n",
              events, size_mb, open_s * 1e3, check_s * 1e3, verdict.c_str(), recover_s * 1e3,
              static_cast<long long>(report.runs_interrupted), load_s * 1e3);
}

} // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::string dir = fs::temp_directory_path() / "hb-log-bench";
  fs::create_directories(dir);
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};

  int bulk = quick ? 20'000 : 200'000;
  double raw = raw_bulk_rate(dir, bulk);
  std::printf("raw SQLite bulk insert: %.0f deltas/s (a row each)\n", raw);
  for (int runs : {1, 16, 64}) {
    double rate = actor_rate(sys, dir, runs, bulk / runs);
    std::printf("log writer, %2d runs at once: %.0f deltas/s committed (%.2fx raw)\n", runs, rate, rate / raw);
  }
  auto delays = visibility_delays_us(sys, dir, quick ? 100 : 1000);
  std::printf("one streaming run, delta sent -> readable: p50 %.0f us, p99 %.0f us, max %.0f us\n",
              delays[delays.size() / 2], delays[delays.size() * 99 / 100], delays.back());
  startup_on_big_log(dir, quick ? 100'000 : 1'000'000);
  if (const char* keep = std::getenv("HB_BENCH_KEEP_LOG")) // for timing a daemon start on it
    fs::copy_file(dir + "/big.db", keep, fs::copy_options::overwrite_existing);
  fs::remove_all(dir);
  return 0;
}
